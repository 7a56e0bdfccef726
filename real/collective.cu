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
 * Key invariant: the parent process never touches CUDA before the fork
 * (the GPU count, when -g is not given, comes from a probe child).
 */
#include "collective.h"
#include "dev_cuda.h"
#include "launch.h"
#include "base/units.h"

#include <cuda_runtime.h>
#include <errno.h>
#include <math.h>
#include <nccl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/wait.h>
#include <unistd.h>

enum coll_op { OP_ALLREDUCE, OP_BROADCAST, OP_REDUCE, OP_ALLGATHER, OP_REDUCESCATTER };
enum coll_format { FMT_TEXT, FMT_CSV, FMT_JSON, FMT_NONE /* ds__coll_allreduce_sweep */ };

struct coll_opts {
  enum coll_op op;
  size_t min_bytes, max_bytes;
  double factor;
  int32_t nranks; /* 0: one per GPU */
  int share_gpus;
  int32_t iters, warmup;
  enum coll_format format;
  const char *algo;  /* NCCL_ALGO's value, NULL: NCCL's choice (or the environment's) */
  const char *proto; /* NCCL_PROTO's value, likewise */
};

/* ddpsim's algorithm names (docs/collectives.md) and NCCL's: `--algo`
 * takes either spelling and passes NCCL's to NCCL_ALGO, so a measured row
 * and a predicted one name the same thing. */
static const char *const algo_names[][2] = {
    {"ring", "Ring"}, {"tree", "Tree"}, {"nvls", "NVLS"}, {"nvlstree", "NVLSTree"},
    {"collnetdirect", "CollnetDirect"}, {"collnetchain", "CollnetChain"}, {"pat", "PAT"}};
static const char *const proto_names[] = {"LL", "LL128", "Simple"};

/* One result row, gathered from every rank. */
struct coll_row {
  double time_us;
  unsigned long long wrong;
};

struct coll_ctx {
  const struct coll_opts *o;
};

static const char *const op_names[] = {"allreduce", "broadcast", "reduce", "allgather",
                                       "reducescatter"};

static const char *usage_text =
    "usage: ddpreal collective [options]\n"
    "  --op NAME        allreduce (default), broadcast, reduce, allgather, reducescatter\n"
    "  -b, --minbytes   smallest message, with units: 8, 1K, 1M, 1G (default 8)\n"
    "  -e, --maxbytes   largest message (default 1G)\n"
    "  -f, --stepfactor multiply the size by this each step (default 2)\n"
    "  -g, --nranks     ranks, one process each (default: one per GPU)\n"
    "  --share-gpus     allow more ranks than GPUs (timings then do not represent\n"
    "                   separate GPUs)\n"
    "  --iters N        timed calls per size (default 20)\n"
    "  --warmup N       untimed calls first (default 5)\n"
    "  --format F       text (default), csv or json\n"
    "  --algo A         NCCL's algorithm: ring, tree, nvls, nvlstree, collnetdirect,\n"
    "                   collnetchain or pat (sets NCCL_ALGO; default: NCCL's choice)\n"
    "  --proto P        NCCL's protocol: LL, LL128 or Simple (sets NCCL_PROTO)\n"
    "Columns: size, count (floats), type, time (us per call, mean over ranks),\n"
    "algbw = size/time, busbw = algbw * bus factor (nccl-tests), #wrong.\n";

static double bus_factor(enum coll_op op, int32_t n) {
  switch (op) {
    case OP_ALLREDUCE: return 2.0 * (n - 1) / n;
    case OP_ALLGATHER:
    case OP_REDUCESCATTER: return (double)(n - 1) / n;
    default: return 1.0;
  }
}

/* A size as every ddpsim tool reads one (base/units.h: "8", "1K", "256M",
 * "1G" binary as nccl-tests, "1MiB" binary, "1MB" decimal), up to 64 GiB. */
static int parse_size(const char *s, size_t *out) {
  double v;
  if (ds_units_parse_bytes(s, &v) != DS_OK || v > 64.0 * 1024 * 1024 * 1024) return -1;
  *out = (size_t)v;
  return 0;
}

static int parse_int(const char *s, int32_t lo, int32_t *out) {
  char *end;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (end == s || *end || errno || v < lo || v > 1000000) return -1;
  *out = (int32_t)v;
  return 0;
}

static ds_status parse_opts(int argc, char **argv, struct coll_opts *o, int *help,
                            struct ds_err *err) {
  o->op = OP_ALLREDUCE;
  o->min_bytes = 8;
  o->max_bytes = (size_t)1 << 30;
  o->factor = 2;
  o->nranks = 0;
  o->share_gpus = 0;
  o->iters = 20;
  o->warmup = 5;
  o->format = FMT_TEXT;
  o->algo = o->proto = NULL;
  *help = 0;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
      *help = 1;
      return DS_OK;
    }
    if (!strcmp(a, "--share-gpus")) {
      o->share_gpus = 1;
      continue;
    }
    if (i + 1 >= argc)
      return ds_err_set(err, DS_EUSAGE, "collective: %s needs a value (see --help)", a);
    const char *v = argv[++i];
    int bad = 0;
    if (!strcmp(a, "--op")) {
      bad = 1;
      for (int k = 0; k < 5; k++)
        if (!strcmp(v, op_names[k])) {
          o->op = (enum coll_op)k;
          bad = 0;
        }
      if (bad)
        return ds_err_set(err, DS_EUSAGE, "collective: --op '%s': expected allreduce, "
                          "broadcast, reduce, allgather or reducescatter", v);
    } else if (!strcmp(a, "-b") || !strcmp(a, "--minbytes")) {
      bad = parse_size(v, &o->min_bytes);
    } else if (!strcmp(a, "-e") || !strcmp(a, "--maxbytes")) {
      bad = parse_size(v, &o->max_bytes);
    } else if (!strcmp(a, "-f") || !strcmp(a, "--stepfactor")) {
      char *end;
      o->factor = strtod(v, &end);
      bad = *end || !(o->factor > 1);
    } else if (!strcmp(a, "-g") || !strcmp(a, "--nranks")) {
      bad = parse_int(v, 1, &o->nranks);
    } else if (!strcmp(a, "--iters")) {
      bad = parse_int(v, 1, &o->iters);
    } else if (!strcmp(a, "--warmup")) {
      bad = parse_int(v, 0, &o->warmup);
    } else if (!strcmp(a, "--algo")) {
      o->algo = NULL;
      for (size_t k = 0; k < sizeof algo_names / sizeof *algo_names; k++)
        if (!strcasecmp(v, algo_names[k][0])) o->algo = algo_names[k][1];
      if (!o->algo)
        return ds_err_set(err, DS_EUSAGE, "collective: --algo '%s': expected ring, tree, "
                          "nvls, nvlstree, collnetdirect, collnetchain or pat", v);
    } else if (!strcmp(a, "--proto")) {
      o->proto = NULL;
      for (size_t k = 0; k < sizeof proto_names / sizeof *proto_names; k++)
        if (!strcasecmp(v, proto_names[k])) o->proto = proto_names[k];
      if (!o->proto)
        return ds_err_set(err, DS_EUSAGE,
                          "collective: --proto '%s': expected LL, LL128 or Simple", v);
    } else if (!strcmp(a, "--format")) {
      if (!strcmp(v, "text")) o->format = FMT_TEXT;
      else if (!strcmp(v, "csv")) o->format = FMT_CSV;
      else if (!strcmp(v, "json")) o->format = FMT_JSON;
      else bad = 1;
    } else {
      return ds_err_set(err, DS_EUSAGE, "collective: unknown option '%s' (see --help)", a);
    }
    if (bad)
      return ds_err_set(err, DS_EUSAGE, "collective: %s '%s': expected %s", a, v,
                        !strcmp(a, "-f") || !strcmp(a, "--stepfactor") ? "a factor > 1"
                        : !strcmp(a, "--format") ? "text, csv or json"
                        : a[1] == 'b' || a[1] == 'e' || a[2] == 'm' ? "a size like 8, 1K, 1M, 1G"
                        : "a whole number");
  }
  if (o->min_bytes > o->max_bytes)
    return ds_err_set(err, DS_EUSAGE, "collective: -b %zu is more than -e %zu", o->min_bytes,
                      o->max_bytes);
  return DS_OK;
}

/* The GPU count, from a child process: CUDA must stay uninitialised here. */
static ds_status probe_gpus(int *count, struct ds_err *err) {
  int fd[2];
  if (pipe(fd) != 0)
    return ds_err_set(err, DS_EIO, "collective: pipe failed: %s", strerror(errno));
  fflush(NULL);
  pid_t p = fork();
  if (p == 0) {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) n = -1;
    ssize_t w = write(fd[1], &n, sizeof n);
    _exit(w == (ssize_t)sizeof n ? 0 : 1);
  }
  close(fd[1]);
  int n = -1;
  ssize_t got = p > 0 ? read(fd[0], &n, sizeof n) : -1;
  close(fd[0]);
  if (p > 0) waitpid(p, NULL, 0);
  if (got != (ssize_t)sizeof n || n < 1)
    return ds_err_set(err, DS_EIO, "collective: no GPU found (cudaGetDeviceCount "
                      "failed or returned 0; check nvidia-smi and CUDA_VISIBLE_DEVICES); "
                      "ddpreal collective needs a GPU");
  *count = n;
  return DS_OK;
}

/* The algo and proto columns: NCCL's environment, else "auto". */
static const char *env_or_auto(const char *name) {
  const char *v = getenv(name);
  return v && *v ? v : "auto";
}

/* Elements each rank sends per call (count) and the size the row reports. */
static void counts_for(enum coll_op op, size_t bytes, int32_t n, size_t *count,
                       size_t *per, size_t *size_bytes) {
  size_t c = bytes / sizeof(float);
  if (op == OP_ALLGATHER || op == OP_REDUCESCATTER) c = c / (size_t)n * (size_t)n;
  *count = c;
  *per = c / (size_t)n;
  *size_bytes = c * sizeof(float);
}

static ds_status launch_op(enum coll_op op, const float *in, float *out, size_t count,
                           size_t per, ncclComm_t comm, cudaStream_t s, int32_t rank,
                           struct ds_err *err) {
  switch (op) {
    case OP_ALLREDUCE:
      DS_NCCL_CHECK(comm, ncclAllReduce(in, out, count, ncclFloat, ncclSum, comm, s));
      break;
    case OP_BROADCAST:
      DS_NCCL_CHECK(comm, ncclBroadcast(in, out, count, ncclFloat, 0, comm, s));
      break;
    case OP_REDUCE:
      DS_NCCL_CHECK(comm, ncclReduce(in, out, count, ncclFloat, ncclSum, 0, comm, s));
      break;
    case OP_ALLGATHER:
      DS_NCCL_CHECK(comm, ncclAllGather(in, out, per, ncclFloat, comm, s));
      break;
    case OP_REDUCESCATTER:
      DS_NCCL_CHECK(comm, ncclReduceScatter(in, out, per, ncclFloat, ncclSum, comm, s));
      break;
  }
  return DS_OK;
}

static ds_status check_op(enum coll_op op, const float *out, size_t count, size_t per,
                          int32_t rank, int32_t world, unsigned long long *d_wrong,
                          cudaStream_t s, struct ds_err *err) {
  switch (op) {
    case OP_ALLREDUCE:
      DS_CUDA_CHECK(ds__cuda_check(out, count, DS__EXPECT_SUM, world, 0, 0, per, d_wrong, s));
      break;
    case OP_BROADCAST:
      DS_CUDA_CHECK(ds__cuda_check(out, count, DS__EXPECT_RANK, world, 0, 0, per, d_wrong, s));
      break;
    case OP_REDUCE:
      if (rank == 0)
        DS_CUDA_CHECK(ds__cuda_check(out, count, DS__EXPECT_SUM, world, 0, 0, per, d_wrong, s));
      break;
    case OP_ALLGATHER:
      DS_CUDA_CHECK(ds__cuda_check(out, count, DS__EXPECT_GATHERED, world, 0, 0, per, d_wrong,
                                   s));
      break;
    case OP_REDUCESCATTER:
      DS_CUDA_CHECK(ds__cuda_check(out, per, DS__EXPECT_SUM, world, 0, (size_t)rank * per,
                                   per, d_wrong, s));
      break;
  }
  return DS_OK;
}

static void print_header(const struct coll_opts *o, int32_t world, int gpus, const char *gpu) {
  const char *algo = env_or_auto("NCCL_ALGO"), *proto = env_or_auto("NCCL_PROTO");
  int v = 0;
  ncclGetVersion(&v);
  if (o->format == FMT_CSV) {
    printf("op,algo,proto,nranks,size_bytes,time_us,algbw_gbps,busbw_gbps,wrong\n");
  } else if (o->format == FMT_JSON) {
    printf("[");
  } else {
    printf("# ddpreal collective: %s, %d rank%s (forked) on %d GPU%s (%s), float sum\n",
           op_names[o->op], world, world == 1 ? "" : "s", gpus < world ? gpus : world,
           (gpus < world ? gpus : world) == 1 ? "" : "s", gpu);
    printf("# nccl %d.%d.%d, algo %s, proto %s, %d timed + %d warmup calls per size%s\n",
           v / 10000, v / 100 % 100, v % 100, algo, proto, o->iters, o->warmup,
           gpus < world ? "; GPUs shared: times do not represent separate GPUs" : "");
    printf("#%13s %12s %6s %10s %12s %12s %8s\n", "size(B)", "count", "type", "time(us)",
           "algbw(GB/s)", "busbw(GB/s)", "#wrong");
  }
}

static void print_row(const struct coll_opts *o, int32_t world, size_t size_bytes,
                      size_t count, double time_us, unsigned long long wrong, int first) {
  double algbw = time_us > 0 ? (double)size_bytes / (time_us * 1e3) : 0; /* GB/s */
  double busbw = algbw * bus_factor(o->op, world);
  const char *algo = env_or_auto("NCCL_ALGO"), *proto = env_or_auto("NCCL_PROTO");
  if (o->format == FMT_CSV)
    printf("%s,%s,%s,%d,%zu,%.3f,%.3f,%.3f,%llu\n", op_names[o->op], algo, proto, world,
           size_bytes, time_us, algbw, busbw, wrong);
  else if (o->format == FMT_JSON)
    printf("%s\n  {\"op\": \"%s\", \"algo\": \"%s\", \"proto\": \"%s\", \"nranks\": %d, "
           "\"size_bytes\": %zu, \"time_us\": %.3f, \"algbw_gbps\": %.3f, "
           "\"busbw_gbps\": %.3f, \"wrong\": %llu}",
           first ? "" : ",", op_names[o->op], algo, proto, world, size_bytes, time_us, algbw,
           busbw, wrong);
  else
    printf(" %13zu %12zu %6s %10.2f %12.2f %12.2f %8llu\n", size_bytes, count, "float",
           time_us, algbw, busbw, wrong);
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

static ds_status sweep(struct ds_launcher *l, const struct coll_opts *o, struct coll_state *c,
                       struct ds_err *err) {
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
  if (rank == 0 && o->format != FMT_NONE) {
    cudaDeviceProp prop;
    DS_CUDA_CHECK(cudaGetDeviceProperties(&prop, c->gpu));
    print_header(o, world, c->gpu_count, prop.name);
  }
  int first = 1;
  double last = 0;
  for (double b = (double)o->min_bytes; b <= (double)o->max_bytes; b *= o->factor) {
    size_t bytes = (size_t)b, count, per, size_bytes;
    if (bytes == (size_t)last && b > o->min_bytes) continue;
    last = (double)bytes;
    counts_for(o->op, bytes, world, &count, &per, &size_bytes);
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
    struct coll_row mine = {(double)ms * 1e3 / o->iters, 0};
    DS_CUDA_CHECK(cudaMemcpyAsync(&mine.wrong, c->d_wrong, sizeof mine.wrong,
                                  cudaMemcpyDeviceToHost, c->s));
    DS_CUDA_CHECK(cudaEventRecord(c->b, c->s));
    DS_CHECK(ds__cuda_wait_events(&c->b, 1, c->comm, rank, "the checked call", err));
    DS_CHECK(l->gather(l, &mine, sizeof mine, c->rows, err));
    if (rank == 0) {
      double t = 0;
      unsigned long long wrong = 0;
      for (int32_t q = 0; q < world; q++) {
        t += c->rows[q].time_us;
        wrong += c->rows[q].wrong;
      }
      if (o->format != FMT_NONE) print_row(o, world, size_bytes, count, t / world, wrong, first);
      first = 0;
      if (c->pts && c->pts_len < c->pts_cap) {
        struct ds_coll_point *p = &c->pts[c->pts_len++];
        p->size_bytes = size_bytes;
        p->time_us = t / world;
        p->wrong = wrong;
      }
    }
  }
  if (rank == 0 && o->format == FMT_JSON) printf("\n]\n");
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
  const struct coll_opts *o = ((struct coll_ctx *)arg)->o;
  struct coll_state c;
  memset(&c, 0, sizeof c);
  ds_status st = ds__cuda_pick_gpu(l->rank, l->world, l->rank, o->share_gpus, 1, &c.gpu,
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
  struct coll_opts o;
  memset(&o, 0, sizeof o);
  o.op = OP_ALLREDUCE;
  o.min_bytes = min_bytes;
  o.max_bytes = max_bytes;
  o.factor = factor;
  o.nranks = l->world;
  o.iters = iters;
  o.warmup = warmup;
  o.format = FMT_NONE;
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
  struct coll_opts o;
  struct ds_err err;
  ds_err_clear(&err);
  int help = 0;
  ds_status st = parse_opts(argc, argv, &o, &help, &err);
  if (st == DS_OK && help) {
    fputs(usage_text, stdout);
    return 0;
  }
  /* Set before any rank exists: the forked ranks inherit it, and NCCL reads
   * it when their communicator is created. An algorithm this machine cannot
   * run is NCCL's to refuse; its error ends the run like any NCCL failure. */
  if (st == DS_OK && o.algo && setenv("NCCL_ALGO", o.algo, 1) != 0)
    st = ds_err_set(&err, DS_EIO, "collective: setenv NCCL_ALGO failed");
  if (st == DS_OK && o.proto && setenv("NCCL_PROTO", o.proto, 1) != 0)
    st = ds_err_set(&err, DS_EIO, "collective: setenv NCCL_PROTO failed");
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
