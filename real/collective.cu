/*
 * `ddpreal collective`: sweeps one NCCL collective over message sizes like
 * nccl-tests (-b -e -f -g), on ranks forked on this node, and prints size,
 * count, time, algbw, busbw and #wrong per size.
 *
 * Per size every rank runs `warmup` untimed calls, meets the others at a
 * barrier, and times `iters` back-to-back calls between two CUDA events;
 * the time is the mean over ranks of the per-call average (as nccl-tests
 * reports it). One more call on an output filled with -1 is then checked
 * against the closed-form result (inputs (r+1) + (i % 7)), and the wrong
 * elements of all ranks are summed. busbw = algbw times nccl-tests' bus
 * factor (all-reduce 2(n-1)/n; all-gather, reduce-scatter (n-1)/n;
 * broadcast, reduce 1; nccl-tests doc/PERFORMANCE.md).
 *
 * Options: collective_args.c (plain C, built without CUDA too).
 *
 * Key invariant: the parent process never touches CUDA before the fork
 * (the GPU count, when -g is not given, comes from a probe child).
 */
#include "collective.h"
#include "collective_args.h"
#include "base/nccltests.h"
#include "dev_cuda.h"
#include "launch.h"

#include <cuda_runtime.h>
#include <errno.h>
#include <math.h>
#include <nccl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* One result row, gathered from every rank. */
struct coll_row {
  double time_us;
  unsigned long long wrong;
};

struct coll_ctx {
  const struct ds_collective_args *o;
};

static double bus_factor(enum ds_collective_op op, int32_t n) {
  switch (op) {
    case DS_COLLECTIVE_OP_ALLREDUCE: return 2.0 * (n - 1) / n;
    case DS_COLLECTIVE_OP_ALLGATHER:
    case DS_COLLECTIVE_OP_REDUCESCATTER: return (double)(n - 1) / n;
    default: return 1.0;
  }
}

/* What the probe child reports: the count, and CUDA's reason when there is
 * none, so the message is the one the replay and calibrate give. */
struct gpu_probe {
  int count; /* -1: cudaGetDeviceCount failed */
  char reason[160];
};

/* The GPU count, from a child process: CUDA must stay uninitialised here. */
static ds_status probe_gpus(int *count, struct ds_err *err) {
  int fd[2];
  if (pipe(fd) != 0)
    return ds_err_set(err, DS_EIO, "pipe failed: %s", strerror(errno));
  fflush(NULL);
  pid_t p = fork();
  if (p == 0) {
    struct gpu_probe g = {0, "no device visible"};
    cudaError_t e = cudaGetDeviceCount(&g.count);
    if (e != cudaSuccess) {
      g.count = -1;
      snprintf(g.reason, sizeof g.reason, "%s", cudaGetErrorString(e));
    }
    ssize_t w = write(fd[1], &g, sizeof g);
    _exit(w == (ssize_t)sizeof g ? 0 : 1);
  }
  close(fd[1]);
  struct gpu_probe g = {-1, "the probe process failed"};
  ssize_t got = p > 0 ? read(fd[0], &g, sizeof g) : -1;
  close(fd[0]);
  if (p > 0) waitpid(p, NULL, 0);
  if (got != (ssize_t)sizeof g) g.count = -1;
  g.reason[sizeof g.reason - 1] = '\0';
  if (g.count < 1)
    return ds_err_set(err, DS_EIO, "no GPU found (CUDA: %s; check nvidia-smi and "
                      "CUDA_VISIBLE_DEVICES); collective measures GPUs and needs one "
                      "(no CPU device)", g.reason);
  *count = g.count;
  return DS_OK;
}

/* The algo and proto columns: NCCL's environment, else "auto". */
static const char *env_or_auto(const char *name) {
  const char *v = getenv(name);
  return v && *v ? v : "auto";
}

/* A row as nccl-tests makes it (base/nccltests.h, the rule ddpsim
 * collective prints too): count, the whole buffer's elements; per, one
 * rank's share; shown, the count the row prints (per where the op splits
 * the buffer, as nccl-tests prints it); size_bytes, the row's size. */
static void counts_for(enum ds_collective_op op, size_t bytes, int32_t n, size_t *count,
                       size_t *per, size_t *shown, size_t *size_bytes) {
  int splits = op == DS_COLLECTIVE_OP_ALLGATHER || op == DS_COLLECTIVE_OP_REDUCESCATTER;
  struct ds_nccltests_row r = ds_nccltests_row((uint64_t)bytes, splits, n);
  *shown = (size_t)r.count;
  *count = (size_t)(r.size_bytes / DS_NCCLTESTS_ELEM_BYTES);
  *per = *count / (size_t)n;
  *size_bytes = (size_t)r.size_bytes;
}

static ds_status launch_op(enum ds_collective_op op, const float *in, float *out, size_t count,
                           size_t per, ncclComm_t comm, cudaStream_t s, int32_t rank,
                           struct ds_err *err) {
  switch (op) {
    case DS_COLLECTIVE_OP_ALLREDUCE:
      DS_NCCL_CHECK(comm, ncclAllReduce(in, out, count, ncclFloat, ncclSum, comm, s));
      break;
    case DS_COLLECTIVE_OP_BROADCAST:
      DS_NCCL_CHECK(comm, ncclBroadcast(in, out, count, ncclFloat, 0, comm, s));
      break;
    case DS_COLLECTIVE_OP_REDUCE:
      DS_NCCL_CHECK(comm, ncclReduce(in, out, count, ncclFloat, ncclSum, 0, comm, s));
      break;
    case DS_COLLECTIVE_OP_ALLGATHER:
      DS_NCCL_CHECK(comm, ncclAllGather(in, out, per, ncclFloat, comm, s));
      break;
    case DS_COLLECTIVE_OP_REDUCESCATTER:
      DS_NCCL_CHECK(comm, ncclReduceScatter(in, out, per, ncclFloat, ncclSum, comm, s));
      break;
  }
  return DS_OK;
}

static ds_status check_op(enum ds_collective_op op, const float *out, size_t count, size_t per,
                          int32_t rank, int32_t world, unsigned long long *d_wrong,
                          cudaStream_t s, struct ds_err *err) {
  switch (op) {
    case DS_COLLECTIVE_OP_ALLREDUCE:
      DS_CUDA_CHECK(ds__cuda_check(out, count, DS__EXPECT_SUM, world, 0, 0, per, d_wrong, s));
      break;
    case DS_COLLECTIVE_OP_BROADCAST:
      DS_CUDA_CHECK(ds__cuda_check(out, count, DS__EXPECT_RANK, world, 0, 0, per, d_wrong, s));
      break;
    case DS_COLLECTIVE_OP_REDUCE:
      if (rank == 0)
        DS_CUDA_CHECK(ds__cuda_check(out, count, DS__EXPECT_SUM, world, 0, 0, per, d_wrong, s));
      break;
    case DS_COLLECTIVE_OP_ALLGATHER:
      DS_CUDA_CHECK(ds__cuda_check(out, count, DS__EXPECT_GATHERED, world, 0, 0, per, d_wrong,
                                   s));
      break;
    case DS_COLLECTIVE_OP_REDUCESCATTER:
      DS_CUDA_CHECK(ds__cuda_check(out, per, DS__EXPECT_SUM, world, 0, (size_t)rank * per,
                                   per, d_wrong, s));
      break;
  }
  return DS_OK;
}

static void print_header(const struct ds_collective_args *o, int32_t world, int gpus,
                         const char *gpu) {
  const char *op = ds_collective_op_name(o->op);
  const char *algo = env_or_auto("NCCL_ALGO"), *proto = env_or_auto("NCCL_PROTO");
  int v = 0;
  ncclGetVersion(&v);
  if (o->format == DS_COLLECTIVE_FORMAT_CSV) {
    printf("op,algo,proto,nranks,size_bytes,time_us,algbw_gbps,busbw_gbps,wrong\n");
  } else if (o->format == DS_COLLECTIVE_FORMAT_JSON) {
    printf("[");
  } else {
    printf("# ddpreal collective: %s, %d rank%s (forked) on %d GPU%s (%s), float sum\n",
           op, world, world == 1 ? "" : "s", gpus < world ? gpus : world,
           (gpus < world ? gpus : world) == 1 ? "" : "s", gpu);
    printf("# nccl %d.%d.%d, algo %s, proto %s, %d timed + %d warmup calls per size%s\n",
           v / 10000, v / 100 % 100, v % 100, algo, proto, o->iters, o->warmup,
           gpus < world ? "; GPUs shared: times do not represent separate GPUs" : "");
    printf("#%13s %12s %6s %10s %12s %12s %8s\n", "size(B)", "count", "type", "time(us)",
           "algbw(GB/s)", "busbw(GB/s)", "#wrong");
  }
}

static void print_row(const struct ds_collective_args *o, int32_t world, size_t size_bytes,
                      size_t count, double time_us, unsigned long long wrong, int first) {
  double algbw = time_us > 0 ? (double)size_bytes / (time_us * 1e3) : 0; /* GB/s */
  struct ds_collective_result r = {o->op, env_or_auto("NCCL_ALGO"), env_or_auto("NCCL_PROTO"),
                                   world, size_bytes, count, time_us, algbw,
                                   algbw * bus_factor(o->op, world), wrong};
  ds_collective_result_write(stdout, o->format, &r, first);
  fflush(stdout);
}

struct coll_state {
  int gpu, gpu_count;
  ncclComm_t comm;
  cudaStream_t s;
  cudaEvent_t a, b;
  float *in, *out;
  unsigned long long *d_wrong;
  struct coll_row *rows; /* world rows on rank 0 */
  struct ds_coll_point *pts; /* rank 0: where results go (may be NULL) */
  size_t pts_cap, pts_len;
};

static ds_status sweep(struct ds_launcher *l, const struct ds_collective_args *o,
                       struct coll_state *c, struct ds_err *err) {
  int32_t rank = l->rank, world = l->world;
  size_t max_elems = o->max_bytes / sizeof(float) + 1;
  DS_CUDA_CHECK(cudaStreamCreateWithFlags(&c->s, cudaStreamNonBlocking));
  DS_CUDA_CHECK(cudaEventCreate(&c->a));
  DS_CUDA_CHECK(cudaEventCreate(&c->b));
  DS_CUDA_CHECK(cudaMalloc((void **)&c->in, max_elems * sizeof(float)));
  DS_CUDA_CHECK(cudaMalloc((void **)&c->out, max_elems * sizeof(float)));
  DS_CUDA_CHECK(cudaMalloc((void **)&c->d_wrong, sizeof *c->d_wrong));
  DS_CUDA_CHECK(ds__cuda_fill_input(c->in, max_elems, rank, c->s));
  DS_CUDA_CHECK(cudaStreamSynchronize(c->s));
  DS_CHECK(ds__nccl_comm_init(l, rank, world, &c->comm, err));
  if (rank == 0 && o->format != DS_COLLECTIVE_FORMAT_NONE) {
    cudaDeviceProp prop;
    DS_CUDA_CHECK(cudaGetDeviceProperties(&prop, c->gpu));
    print_header(o, world, c->gpu_count, prop.name);
  }
  int first = 1;
  double last = 0;
  for (double b = (double)o->min_bytes; b <= (double)o->max_bytes; b *= o->factor) {
    size_t bytes = (size_t)b, count, per, shown, size_bytes;
    if (bytes == (size_t)last && b > o->min_bytes) continue;
    last = (double)bytes;
    counts_for(o->op, bytes, world, &count, &per, &shown, &size_bytes);
    if (count == 0) continue;
    for (int32_t k = 0; k < o->warmup; k++)
      DS_CHECK(launch_op(o->op, c->in, c->out, count, per, c->comm, c->s, rank, err));
    DS_CUDA_CHECK(cudaEventRecord(c->b, c->s));
    DS_CHECK(ds__cuda_wait_events(&c->b, 1, c->comm, rank, "the warmup calls", err));
    DS_CHECK(l->barrier(l, err));
    DS_CUDA_CHECK(cudaEventRecord(c->a, c->s));
    for (int32_t k = 0; k < o->iters; k++)
      DS_CHECK(launch_op(o->op, c->in, c->out, count, per, c->comm, c->s, rank, err));
    DS_CUDA_CHECK(cudaEventRecord(c->b, c->s));
    DS_CHECK(ds__cuda_wait_events(&c->b, 1, c->comm, rank, "the timed calls", err));
    float ms = 0;
    DS_CUDA_CHECK(cudaEventElapsedTime(&ms, c->a, c->b));
    /* the checked call, on an output of -1 */
    DS_CUDA_CHECK(ds__cuda_fill(c->out, count, -1.0f, c->s));
    DS_CUDA_CHECK(cudaMemsetAsync(c->d_wrong, 0, sizeof *c->d_wrong, c->s));
    DS_CHECK(launch_op(o->op, c->in, c->out, count, per, c->comm, c->s, rank, err));
    DS_CHECK(check_op(o->op, c->out, count, per, rank, world, c->d_wrong, c->s, err));
    DS_CUDA_CHECK(cudaEventRecord(c->b, c->s));
    DS_CHECK(ds__cuda_wait_events(&c->b, 1, c->comm, rank, "the checked call", err));
    /* Read only once the bounded wait saw the stream finish: a copy to
     * pageable memory blocks the host until it is done, and behind a hung
     * peer's collective that would be for ever. */
    struct coll_row mine = {(double)ms * 1e3 / o->iters, 0};
    DS_CUDA_CHECK(cudaMemcpy(&mine.wrong, c->d_wrong, sizeof mine.wrong,
                             cudaMemcpyDeviceToHost));
    DS_CHECK(l->gather(l, &mine, sizeof mine, c->rows, err));
    if (rank == 0) {
      double t = 0;
      unsigned long long wrong = 0;
      for (int32_t q = 0; q < world; q++) {
        t += c->rows[q].time_us;
        wrong += c->rows[q].wrong;
      }
      if (o->format != DS_COLLECTIVE_FORMAT_NONE)
        print_row(o, world, size_bytes, shown, t / world, wrong, first);
      first = 0;
      if (c->pts && c->pts_len < c->pts_cap) {
        struct ds_coll_point *p = &c->pts[c->pts_len++];
        p->size_bytes = size_bytes;
        p->time_us = t / world;
        p->wrong = wrong;
      }
    }
  }
  if (rank == 0 && o->format == DS_COLLECTIVE_FORMAT_JSON) printf("\n]\n");
  return DS_OK;
}

/* Releases what sweep() made; the communicator is aborted after a failure. */
static void state_release(struct coll_state *cs, ds_status st) {
  struct coll_state c = *cs;
  if (c.comm) {
    if (st == DS_OK)
      ncclCommDestroy(c.comm);
    else
      ncclCommAbort(c.comm);
  }
  if (c.a) cudaEventDestroy(c.a);
  if (c.b) cudaEventDestroy(c.b);
  if (c.s) cudaStreamDestroy(c.s);
  cudaFree(c.in);
  cudaFree(c.out);
  cudaFree(c.d_wrong);
  free(c.rows);
  memset(cs, 0, sizeof *cs);
}

static ds_status coll_rank(struct ds_launcher *l, void *arg, struct ds_err *err) {
  const struct ds_collective_args *o = ((struct coll_ctx *)arg)->o;
  struct coll_state c;
  memset(&c, 0, sizeof c);
  ds_status st = ds__cuda_pick_gpu(l->rank, l->local_world, l->local_rank, o->share_gpus, 1,
                                   "collective measures GPUs and needs one (no CPU device)", &c.gpu,
                                   &c.gpu_count, err);
  if (st == DS_OK) {
    c.rows = (struct coll_row *)calloc((size_t)l->world, sizeof *c.rows);
    st = c.rows ? sweep(l, o, &c, err) : ds_err_set(err, DS_ENOMEM, "out of memory");
  }
  state_release(&c, st);
  return st;
}

extern "C" ds_status ds__coll_allreduce_sweep(struct ds_launcher *l, int gpu, int gpu_count,
                                              size_t min_bytes, size_t max_bytes,
                                              double factor, int32_t iters, int32_t warmup,
                                              struct ds_coll_point *pts, size_t cap,
                                              size_t *n, struct ds_err *err) {
  struct ds_collective_args o;
  memset(&o, 0, sizeof o);
  o.op = DS_COLLECTIVE_OP_ALLREDUCE;
  o.min_bytes = min_bytes;
  o.max_bytes = max_bytes;
  o.factor = factor;
  o.nranks = l->world;
  o.iters = iters;
  o.warmup = warmup;
  o.format = DS_COLLECTIVE_FORMAT_NONE;
  struct coll_state c;
  memset(&c, 0, sizeof c);
  c.gpu = gpu;
  c.gpu_count = gpu_count;
  c.pts = l->rank == 0 ? pts : NULL;
  c.pts_cap = cap;
  c.rows = (struct coll_row *)calloc((size_t)l->world, sizeof *c.rows);
  ds_status st = c.rows ? sweep(l, &o, &c, err) : ds_err_set(err, DS_ENOMEM, "out of memory");
  if (n) *n = c.pts_len;
  state_release(&c, st);
  return st;
}

extern "C" int ds_collective_main(int argc, char **argv) {
  struct ds_collective_args o;
  struct ds_err err;
  ds_err_clear(&err);
  ds_status st = ds_collective_args_parse(argc, argv, &o, &err);
  if (st == DS_OK && o.help) {
    fputs(ds_collective_args_usage(), stdout);
    return 0;
  }
  /* Set before any rank exists: the forked ranks inherit it, and NCCL reads
   * it when their communicator is created. An algorithm this machine cannot
   * run is NCCL's to refuse; its error ends the run like any NCCL failure. */
  if (st == DS_OK && o.algo && setenv("NCCL_ALGO", o.algo, 1) != 0)
    st = ds_err_set(&err, DS_EIO, "setenv NCCL_ALGO failed");
  if (st == DS_OK && o.proto && setenv("NCCL_PROTO", o.proto, 1) != 0)
    st = ds_err_set(&err, DS_EIO, "setenv NCCL_PROTO failed");
  int gpus = 0;
  if (st == DS_OK && o.nranks == 0) {
    st = probe_gpus(&gpus, &err);
    o.nranks = gpus;
  }
  if (st == DS_OK) {
    struct coll_ctx ctx = {&o};
    st = ds_launch_fork(o.nranks, coll_rank, &ctx, &err);
  }
  if (st != DS_OK) {
    fprintf(stderr, "ddpreal collective: %s\n", err.msg[0] ? err.msg : ds_status_message(st));
    return ds_status_exit_code(st);
  }
  return fflush(stdout) == 0 ? 0 : 1;
}
