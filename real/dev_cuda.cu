/*
 * The cuda device: one process per rank owning one GPU (or a share of one,
 * --share-gpus), one non-blocking CUDA stream per schedule stream the rank
 * uses, NCCL collectives, and compute that is real work: a kernel that
 * occupies every SM for the op's dur_us (spin), or cuBLAS SGEMMs whose
 * 2*m*n*k adds up to the op's flops (gemm).
 *
 * cuBLAS is loaded at open, only in gemm mode (dlopen of libcublas.so.13,
 * then .12: the entry points used are the same in both), so that ddpreal
 * runs where only the driver and NCCL are installed.
 *
 * Ordering is exactly the schedule's: ops of one stream run in issue (=
 * schedule) order because CUDA streams are FIFO; every dependency becomes a
 * cudaStreamWaitEvent on the dependency's end event. Times are CUDA events:
 * a start/end pair per op, measured from a t0 event recorded at begin_iter
 * on the compute stream, on which every other stream waits.
 *
 * Collective buffers are those of the cpu device: one constant input
 * (element i of rank r is (r+1) + (i % 7)) and one output region per
 * collective op, so nothing written during an iteration is read by it; an
 * all-reduce runs in place on its region holding that input, as DDP's
 * all-reduce of its bucket does (at one rank NCCL then copies nothing).
 * end_iter checks every output with a kernel counting wrong elements
 * (nccl-tests' #wrong) and refills it (-1, or the input for an all-reduce),
 * outside the timed window.
 *
 * Key invariant: every rank issues the same NCCL calls in the same order on
 * one communicator (open() checks that on the whole schedule, so every rank
 * reaches the same verdict), and nothing waits without a bound
 * (dev_cuda.h), so a dead peer becomes an error naming the rank and call.
 */
#include "device.h"
#include "schedule_check.h"
#include "dev_common.h"
#include "dev_cuda.h"
#include "base/textout.h"
#include "base/units.h"

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <math.h>
#include <nccl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

/* Copies (h2d, d2h) move at most this much per cudaMemcpyAsync and repeat
 * it for bigger ops, so the pinned staging buffer stays small. */
#define COPY_MAX_BYTES ((size_t)256 << 20)

struct ds_dev_rank {
  const struct ds_schedule *s;
  int32_t rank, world;
  enum ds_compute_mode compute;
  int gpu, gpu_count, sms, shared_gpu;
  int32_t local_world; /* ranks on this node */
  cudaStream_t stream[DS_STREAM_COUNT];
  cudaEvent_t stream_done[DS_STREAM_COUNT];
  int used[DS_STREAM_COUNT];
  cudaEvent_t t0;
  cudaEvent_t *ev_start, *ev_end; /* per op index; only this rank's are created */
  size_t *dep_idx;                /* parallel to s->deps */
  uint64_t *issued_gen;           /* per op: the iteration it was last issued in */
  uint64_t gen;
  size_t *out_off, *n_in, *n_out; /* per collective op of this rank */
  float *in, *out;
  size_t in_len, out_len;
  float *ga, *gb, *gc; /* GEMM operands, gemm_dim^2 each */
  size_t gemm_dim;
  cublasHandle_t blas;
  struct blas_api *api;
  void *copy_host, *copy_dev;
  size_t copy_bytes;
  unsigned long long *d_wrong;
  int64_t spin_overhead_ns; /* event-measured span of a spin kernel beyond its spin */
  int64_t wrong;
  ncclComm_t comm;
  int failed; /* a call failed: close() aborts the communicator */
  char gpu_name[256];
  int nccl_version, rt_version, drv_version;
};

/* The cuBLAS entry points gemm mode uses (the _v2 ABI of cublas_v2.h). */
struct blas_api {
  void *lib;
  char soname[32];
  cublasStatus_t (*create)(cublasHandle_t *);
  cublasStatus_t (*destroy)(cublasHandle_t);
  cublasStatus_t (*set_stream)(cublasHandle_t, cudaStream_t);
  cublasStatus_t (*sgemm)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int,
                          int, const float *, const float *, int, const float *, int,
                          const float *, float *, int);
};

static ds_status blas_load(struct ds_dev_rank *r, struct ds_err *err);
static ds_status calibrate_spin(struct ds_dev_rank *r, struct ds_err *err);

static size_t gemm_dim_for(double flops) {
  if (!(flops > 0)) return 0;
  double d = cbrt(flops / 2.0);
  if (d > DS_CUDA_GEMM_MAX_DIM) d = DS_CUDA_GEMM_MAX_DIM;
  return d < 1 ? 1 : (size_t)llround(d);
}

/* ---- kernels and host work ---------------------------------------------- */

__device__ static unsigned long long global_ns(void) {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

/* Every thread spins until dur_ns have passed since its block started. */
__global__ static void spin_kernel(unsigned long long dur_ns) {
  __shared__ unsigned long long start;
  if (threadIdx.x == 0) start = global_ns();
  __syncthreads();
  while (global_ns() - start < dur_ns) {
  }
}

static void CUDART_CB host_spin(void *arg) {
  double dur_us;
  memcpy(&dur_us, &arg, sizeof dur_us < sizeof arg ? sizeof dur_us : sizeof arg);
  struct timespec a, b;
  clock_gettime(CLOCK_MONOTONIC, &a);
  do {
    clock_gettime(CLOCK_MONOTONIC, &b);
  } while ((double)(b.tv_sec - a.tv_sec) * 1e6 + (double)(b.tv_nsec - a.tv_nsec) * 1e-3 <
           dur_us);
}

/* ---- open: checks of the whole schedule, then resources ------------------ */

/* Resets every collective output of the rank on the compute stream: to -1,
 * except an all-reduce's, which runs in place (as DDP's all-reduce of its
 * bucket does) and so gets the input back. */
static ds_status reset_outputs(struct ds_dev_rank *r, struct ds_err *err) {
  int32_t rank = r->rank;
  cudaStream_t cs = r->stream[DS_STREAM_COMPUTE];
  DS_CUDA_CHECK(ds__cuda_fill(r->out, r->out_len, -1.0f, cs));
  for (size_t i = 0; i < r->s->n_ops; i++) {
    const struct ds_op *o = &r->s->ops[i];
    if (o->rank != rank || o->kind != DS_OP_ALLREDUCE) continue;
    DS_CUDA_CHECK(ds__cuda_fill_input(r->out + r->out_off[i], r->n_out[i], rank, cs));
  }
  return DS_OK;
}

static ds_status alloc_resources(struct ds_dev_rank *r, struct ds_err *err) {
  const struct ds_schedule *s = r->s;
  int32_t rank = r->rank;
  size_t n = s->n_ops ? s->n_ops : 1;
  r->ev_start = (cudaEvent_t *)calloc(n, sizeof *r->ev_start);
  r->ev_end = (cudaEvent_t *)calloc(n, sizeof *r->ev_end);
  r->issued_gen = (uint64_t *)calloc(n, sizeof *r->issued_gen);
  r->out_off = (size_t *)calloc(n, sizeof *r->out_off);
  r->n_in = (size_t *)calloc(n, sizeof *r->n_in);
  r->n_out = (size_t *)calloc(n, sizeof *r->n_out);
  if (!r->ev_start || !r->ev_end || !r->issued_gen || !r->out_off || !r->n_in || !r->n_out)
    return ds_err_set(err, DS_ENOMEM, "cuda device: out of memory");
  r->used[DS_STREAM_COMPUTE] = 1; /* t0 is recorded there */
  for (size_t i = 0; i < s->n_ops; i++) {
    const struct ds_op *o = &s->ops[i];
    if (o->rank != r->rank) continue;
    r->used[o->stream] = 1;
    DS_CUDA_CHECK(cudaEventCreate(&r->ev_start[i]));
    DS_CUDA_CHECK(cudaEventCreate(&r->ev_end[i]));
    if (r->compute == DS_COMPUTE_GEMM && ds__dev_is_compute(o->kind)) {
      size_t d = gemm_dim_for(o->flops);
      if (d > r->gemm_dim) r->gemm_dim = d;
    }
    if (o->kind == DS_OP_H2D || o->kind == DS_OP_D2H) {
      size_t b = o->bytes > 0 ? (size_t)ceil(o->bytes) : 0;
      if (b > COPY_MAX_BYTES) b = COPY_MAX_BYTES;
      if (b > r->copy_bytes) r->copy_bytes = b;
    }
    if (!ds_op_kind_is_collective(o->kind)) continue;
    ds__dev_coll_counts(o, r->rank, r->world, &r->n_in[i], &r->n_out[i]);
    if (r->n_in[i] > r->in_len) r->in_len = r->n_in[i];
    r->out_off[i] = r->out_len;
    r->out_len += r->n_out[i];
  }
  for (int k = 0; k < DS_STREAM_COUNT; k++) {
    if (!r->used[k]) continue;
    DS_CUDA_CHECK(cudaStreamCreateWithFlags(&r->stream[k], cudaStreamNonBlocking));
    DS_CUDA_CHECK(cudaEventCreateWithFlags(&r->stream_done[k], cudaEventDisableTiming));
  }
  DS_CUDA_CHECK(cudaEventCreate(&r->t0));
  DS_CUDA_CHECK(cudaMalloc((void **)&r->d_wrong, sizeof *r->d_wrong));
  DS_CUDA_CHECK(cudaMemset(r->d_wrong, 0, sizeof *r->d_wrong));
  DS_CUDA_CHECK(cudaMalloc((void **)&r->in, (r->in_len ? r->in_len : 1) * sizeof(float)));
  DS_CUDA_CHECK(cudaMalloc((void **)&r->out, (r->out_len ? r->out_len : 1) * sizeof(float)));
  cudaStream_t cs = r->stream[DS_STREAM_COMPUTE];
  DS_CUDA_CHECK(ds__cuda_fill_input(r->in, r->in_len, r->rank, cs));
  DS_CHECK(reset_outputs(r, err));
  if (r->gemm_dim) {
    size_t bytes = r->gemm_dim * r->gemm_dim * sizeof(float);
    DS_CUDA_CHECK(cudaMalloc((void **)&r->ga, bytes));
    DS_CUDA_CHECK(cudaMalloc((void **)&r->gb, bytes));
    DS_CUDA_CHECK(cudaMalloc((void **)&r->gc, bytes));
    /* small values so that the products stay finite */
    DS_CUDA_CHECK(ds__cuda_fill(r->ga, r->gemm_dim * r->gemm_dim, 1e-3f, cs));
    DS_CUDA_CHECK(ds__cuda_fill(r->gb, r->gemm_dim * r->gemm_dim, 1e-3f, cs));
    DS_CHECK(blas_load(r, err));
    cublasStatus_t b = r->api->create(&r->blas);
    if (b != CUBLAS_STATUS_SUCCESS) {
      r->blas = NULL;
      return ds_err_set(err, DS_EIO, "rank %d: cublasCreate failed: status %d", rank, (int)b);
    }
  }
  if (r->copy_bytes) {
    DS_CUDA_CHECK(cudaMallocHost(&r->copy_host, r->copy_bytes));
    DS_CUDA_CHECK(cudaMalloc(&r->copy_dev, r->copy_bytes));
    memset(r->copy_host, 0, r->copy_bytes);
  }
  DS_CUDA_CHECK(cudaStreamSynchronize(cs));
  if (r->used[DS_STREAM_COMPUTE]) DS_CHECK(calibrate_spin(r, err));
  return DS_OK;
}

static int cmp_float(const void *a, const void *b) {
  float x = *(const float *)a, y = *(const float *)b;
  return (x > y) - (x < y);
}

/* A spin op is timed by the events around it, which also see the kernel's
 * launch and drain (a few us on an H100, ~9% of ResNet-50's average op).
 * Measure that once, as the replay sees it -- spins of a known length queued
 * back to back between events, synchronised once at the end -- and take the
 * median excess, so that spin ops last their dur_us as the events see them.
 * (Timing each probe alone measured a cold launch: 6.7 us, 6% too much.) */
static ds_status calibrate_spin(struct ds_dev_rank *r, struct ds_err *err) {
  enum { TRIALS = 41 };
  const unsigned long long probe_ns = 20000;
  cudaStream_t cs = r->stream[DS_STREAM_COMPUTE];
  cudaEvent_t ev[2 * TRIALS];
  float spans_ms[TRIALS];
  int rank = r->rank, made = 0;
  ds_status st = DS_OK;
  for (; made < 2 * TRIALS; made++) {
    cudaError_t e = cudaEventCreate(&ev[made]);
    if (e != cudaSuccess) {
      st = ds_err_set(err, DS_EIO, "rank %d: cudaEventCreate: %s", rank, cudaGetErrorString(e));
      goto out;
    }
  }
  {
    /* As issue() records them: start event, spin, end event (ev[2k], ev[2k+1]). */
    cudaError_t e = cudaSuccess;
    for (int k = 0; k < TRIALS && e == cudaSuccess; k++) {
      e = cudaEventRecord(ev[2 * k], cs);
      if (e == cudaSuccess) {
        spin_kernel<<<(unsigned)r->sms, 128, 0, cs>>>(probe_ns);
        e = cudaGetLastError();
      }
      if (e == cudaSuccess) e = cudaEventRecord(ev[2 * k + 1], cs);
    }
    if (e == cudaSuccess) e = cudaEventSynchronize(ev[2 * TRIALS - 1]);
    for (int k = 0; k < TRIALS && e == cudaSuccess; k++)
      e = cudaEventElapsedTime(&spans_ms[k], ev[2 * k], ev[2 * k + 1]);
    if (e != cudaSuccess) {
      st = ds_err_set(err, DS_EIO, "rank %d: calibrating the spin kernel: %s", rank,
                      cudaGetErrorString(e));
      goto out;
    }
  }
  qsort(spans_ms, TRIALS, sizeof *spans_ms, cmp_float);
  {
    int64_t over = llround((double)spans_ms[TRIALS / 2] * 1e6) - (int64_t)probe_ns;
    r->spin_overhead_ns = over > 0 ? over : 0;
  }
out:
  for (int k = 0; k < made; k++) cudaEventDestroy(ev[k]);
  return st;
}

static ds_status blas_load(struct ds_dev_rank *r, struct ds_err *err) {
  static const char *const names[] = {"libcublas.so.13", "libcublas.so.12"};
  struct blas_api *a = (struct blas_api *)calloc(1, sizeof *a);
  if (!a) return ds_err_set(err, DS_ENOMEM, "cuda device: out of memory");
  for (size_t k = 0; k < sizeof names / sizeof *names && !a->lib; k++) {
    a->lib = dlopen(names[k], RTLD_NOW | RTLD_LOCAL);
    if (a->lib) snprintf(a->soname, sizeof a->soname, "%s", names[k]);
  }
  if (!a->lib) {
    free(a);
    return ds_err_set(err, DS_EIO, "rank %d: --compute gemm needs cuBLAS, and neither "
                      "libcublas.so.13 nor .12 loads (%s); add its directory to "
                      "LD_LIBRARY_PATH or use --compute spin", r->rank, dlerror());
  }
  /* POSIX: a dlsym result converts to a function pointer */
  *(void **)&a->create = dlsym(a->lib, "cublasCreate_v2");
  *(void **)&a->destroy = dlsym(a->lib, "cublasDestroy_v2");
  *(void **)&a->set_stream = dlsym(a->lib, "cublasSetStream_v2");
  *(void **)&a->sgemm = dlsym(a->lib, "cublasSgemm_v2");
  r->api = a;
  if (!a->create || !a->destroy || !a->set_stream || !a->sgemm)
    return ds_err_set(err, DS_EIO, "rank %d: %s lacks cublasCreate_v2, cublasSetStream_v2 or "
                      "cublasSgemm_v2", r->rank, a->soname);
  return DS_OK;
}

static void cuda_close(struct ds_dev_rank *r);

static ds_status cuda_open(const struct ds_dev_config *cfg, struct ds_dev_rank **out,
                           struct ds_err *err) {
  int32_t rank = cfg->rank;
  struct ds_dev_rank *r = (struct ds_dev_rank *)calloc(1, sizeof *r);
  if (!r) return ds_err_set(err, DS_ENOMEM, "cuda device: out of memory");
  r->s = cfg->sched;
  r->rank = cfg->rank;
  r->world = cfg->world;
  r->compute = cfg->compute;
  ds_status st = DS_OK;
  int fork_local = cfg->launcher && cfg->launcher->kind &&
                   strcmp(cfg->launcher->kind, "fork") == 0;
  cudaDeviceProp prop;
  DS_CHECK_GOTO(ds_check_collectives(r->s, r->world, &ds_coll_rules_cuda, err), st, fail);
  DS_CHECK_GOTO(ds__dev_map_deps(r->s, "cuda device", &r->dep_idx, err), st, fail);
  DS_CHECK_GOTO(ds__cuda_pick_gpu(rank, cfg->local_world, cfg->device_ordinal, cfg->shared,
                                  fork_local, "--device cpu replays on CPU ranks", &r->gpu,
                                  &r->gpu_count, err),
                st, fail);
  r->local_world = cfg->local_world;
  r->shared_gpu = cfg->shared && cfg->local_world > r->gpu_count;
  {
    cudaError_t e = cudaGetDeviceProperties(&prop, r->gpu);
    if (e != cudaSuccess) {
      st = ds__cuda_fail(err, rank, "cudaGetDeviceProperties", e);
      goto fail;
    }
  }
  snprintf(r->gpu_name, sizeof r->gpu_name, "%s", prop.name);
  r->sms = prop.multiProcessorCount;
  cudaRuntimeGetVersion(&r->rt_version);
  cudaDriverGetVersion(&r->drv_version);
  ncclGetVersion(&r->nccl_version);
  DS_CHECK_GOTO(alloc_resources(r, err), st, fail);
  if (!cfg->launcher) {
    st = ds_err_set(err, DS_EINTERNAL, "cuda device: no launcher to bootstrap NCCL");
    goto fail;
  }
  DS_CHECK_GOTO(ds__nccl_comm_init(cfg->launcher, rank, r->world, &r->comm, err), st, fail);
  *out = r;
  return DS_OK;
fail:
  r->failed = 1;
  cuda_close(r);
  return st;
}

static ds_status cuda_begin_iter(struct ds_dev_rank *r, struct ds_err *err) {
  int32_t rank = r->rank;
  r->gen++;
  cudaStream_t cs = r->stream[DS_STREAM_COMPUTE];
  DS_CUDA_CHECK(cudaEventRecord(r->t0, cs));
  for (int k = 0; k < DS_STREAM_COUNT; k++)
    if (r->used[k] && k != DS_STREAM_COMPUTE)
      DS_CUDA_CHECK(cudaStreamWaitEvent(r->stream[k], r->t0, 0));
  return DS_OK;
}

static ds_status run_collective(struct ds_dev_rank *r, size_t i, cudaStream_t st,
                                struct ds_err *err) {
  int32_t rank = r->rank;
  const struct ds_op *o = &r->s->ops[i];
  ncclComm_t c = r->comm;
  float *out = r->out + r->out_off[i];
  const float *in = r->in;
  size_t n = (size_t)ceil(o->bytes / 4.0), per = n / (size_t)r->world;
  int root = o->root;
  switch (o->kind) {
    case DS_OP_ALLREDUCE:
      DS_NCCL_CHECK(c, ncclAllReduce(out, out, n, ncclFloat, ncclSum, c, st));
      break;
    case DS_OP_REDUCE:
      DS_NCCL_CHECK(c, ncclReduce(in, out, n, ncclFloat, ncclSum, root, c, st));
      break;
    case DS_OP_BROADCAST:
      DS_NCCL_CHECK(c, ncclBroadcast(in, out, n, ncclFloat, root, c, st));
      break;
    case DS_OP_ALLGATHER:
      DS_NCCL_CHECK(c, ncclAllGather(in, out, per, ncclFloat, c, st));
      break;
    case DS_OP_REDUCESCATTER:
      DS_NCCL_CHECK(c, ncclReduceScatter(in, out, per, ncclFloat, ncclSum, c, st));
      break;
    case DS_OP_GATHER:
    case DS_OP_SCATTER:
      /* grouped send/recv, as nccl-tests does: ncclGather/ncclScatter only
       * exist from NCCL 2.28 on */
      DS_NCCL_CHECK(c, ncclGroupStart());
      for (int32_t p = 0; p < r->world; p++) {
        int gather = o->kind == DS_OP_GATHER;
        if (rank == root && p == rank) {
          const float *src = gather ? in : in + (size_t)p * per;
          float *dst = gather ? out + (size_t)p * per : out;
          if (per) DS_CUDA_CHECK(cudaMemcpyAsync(dst, src, per * sizeof(float),
                                                 cudaMemcpyDeviceToDevice, st));
        } else if (rank == root) {
          if (gather)
            DS_NCCL_CHECK(c, ncclRecv(out + (size_t)p * per, per, ncclFloat, p, c, st));
          else
            DS_NCCL_CHECK(c, ncclSend(in + (size_t)p * per, per, ncclFloat, p, c, st));
        } else if (p == root) {
          if (gather)
            DS_NCCL_CHECK(c, ncclSend(in, per, ncclFloat, root, c, st));
          else
            DS_NCCL_CHECK(c, ncclRecv(out, per, ncclFloat, root, c, st));
        }
      }
      DS_NCCL_CHECK(c, ncclGroupEnd());
      break;
    default:
      return ds_err_set(err, DS_EINTERNAL, "rank %d: op %lld: %s reached the cuda device's "
                        "collective path", rank, (long long)o->id, ds_op_kind_name(o->kind));
  }
  return DS_OK;
}

static ds_status run_compute(struct ds_dev_rank *r, const struct ds_op *o, cudaStream_t st,
                             struct ds_err *err) {
  int32_t rank = r->rank;
  if (o->kind == DS_OP_H2D || o->kind == DS_OP_D2H) {
    double left = o->bytes > 0 ? ceil(o->bytes) : 0;
    while (left > 0) {
      size_t b = left > (double)r->copy_bytes ? r->copy_bytes : (size_t)left;
      if (o->kind == DS_OP_H2D)
        DS_CUDA_CHECK(cudaMemcpyAsync(r->copy_dev, r->copy_host, b, cudaMemcpyHostToDevice, st));
      else
        DS_CUDA_CHECK(cudaMemcpyAsync(r->copy_host, r->copy_dev, b, cudaMemcpyDeviceToHost, st));
      left -= (double)b;
    }
    return DS_OK;
  }
  if (o->stream == DS_STREAM_HOST) {
    /* host work blocks its stream like the CPU would */
    if (o->dur_us > 0) {
      void *arg = NULL;
      double d = o->dur_us;
      memcpy(&arg, &d, sizeof d < sizeof arg ? sizeof d : sizeof arg);
      DS_CUDA_CHECK(cudaLaunchHostFunc(st, host_spin, arg));
    }
    return DS_OK;
  }
  size_t d =
      r->compute == DS_COMPUTE_GEMM && ds__dev_is_compute(o->kind) ? gemm_dim_for(o->flops) : 0;
  if (d == 0) {
    /* spin mode, and ops without flops (the optimizer step is memory-bound) */
    if (o->dur_us > 0) {
      /* the schedule's reader refuses dur_us past DS_UNITS_NS_MAX ns; the
       * clamp keeps llround in range whatever reaches here */
      double ns = o->dur_us * 1e3, max_ns = (double)DS_UNITS_NS_MAX;
      long long spin_ns = llround(ns < max_ns ? ns : max_ns) - r->spin_overhead_ns;
      spin_kernel<<<(unsigned)r->sms, 128, 0, st>>>(
          (unsigned long long)(spin_ns > 0 ? spin_ns : 0));
      DS_CUDA_CHECK(cudaGetLastError());
    }
    return DS_OK;
  }
  double per = 2.0 * (double)d * (double)d * (double)d;
  long reps = lround(o->flops / per);
  if (reps < 1) reps = 1;
  const float one = 1.0f, zero = 0.0f;
  cublasStatus_t b = r->api->set_stream(r->blas, st);
  for (long k = 0; k < reps && b == CUBLAS_STATUS_SUCCESS; k++)
    b = r->api->sgemm(r->blas, CUBLAS_OP_N, CUBLAS_OP_N, (int)d, (int)d, (int)d, &one, r->ga,
                    (int)d, r->gb, (int)d, &zero, r->gc, (int)d);
  if (b != CUBLAS_STATUS_SUCCESS)
    return ds_err_set(err, DS_EIO, "rank %d: cublasSgemm (op %lld, %zu^3) failed: status %d",
                      rank, (long long)o->id, d, (int)b);
  return DS_OK;
}

static ds_status cuda_issue(struct ds_dev_rank *r, size_t index, struct ds_err *err) {
  int32_t rank = r->rank;
  const struct ds_schedule *s = r->s;
  const struct ds_op *o = &s->ops[index];
  if (o->rank != r->rank || r->issued_gen[index] == r->gen)
    return ds_err_set(err, DS_EINTERNAL, "cuda device: op %lld issued to rank %d twice or "
                      "on the wrong rank", (long long)o->id, r->rank);
  cudaStream_t st = r->stream[o->stream];
  for (uint32_t k = 0; k < o->dep_count; k++) {
    size_t d = r->dep_idx[o->dep_first + k];
    if (s->ops[d].stream == o->stream) continue; /* implied by stream order */
    if (r->issued_gen[d] != r->gen)
      return ds_err_set(err, DS_EINTERNAL, "cuda device: op %lld issued before its "
                        "dependency %lld", (long long)o->id, (long long)s->ops[d].id);
    DS_CUDA_CHECK(cudaStreamWaitEvent(st, r->ev_end[d], 0));
  }
  r->issued_gen[index] = r->gen;
  DS_CUDA_CHECK(cudaEventRecord(r->ev_start[index], st));
  ds_status res = ds_op_kind_is_collective(o->kind) ? run_collective(r, index, st, err)
                                                    : run_compute(r, o, st, err);
  if (res != DS_OK) {
    r->failed = 1;
    return res;
  }
  DS_CUDA_CHECK(cudaEventRecord(r->ev_end[index], st));
  return DS_OK;
}

static ds_status elapsed_ns(struct ds_dev_rank *r, cudaEvent_t ev, int64_t *ns,
                            struct ds_err *err) {
  int32_t rank = r->rank;
  float ms = 0;
  DS_CUDA_CHECK(cudaEventElapsedTime(&ms, r->t0, ev));
  *ns = llround((double)ms * 1e6);
  return DS_OK;
}

static ds_status check_outputs(struct ds_dev_rank *r, struct ds_err *err) {
  int32_t rank = r->rank;
  const struct ds_schedule *s = r->s;
  cudaStream_t cs = r->stream[DS_STREAM_COMPUTE];
  for (size_t i = 0; i < s->n_ops; i++) {
    const struct ds_op *o = &s->ops[i];
    if (r->issued_gen[i] != r->gen || !ds_op_kind_is_collective(o->kind) || !r->n_out[i])
      continue;
    size_t n = (size_t)ceil(o->bytes / 4.0), per = n / (size_t)r->world;
    enum ds__cuda_expect how = DS__EXPECT_SUM;
    int32_t src = 0;
    size_t off = 0;
    switch (o->kind) {
      case DS_OP_ALLREDUCE:
      case DS_OP_REDUCE: break;
      case DS_OP_REDUCESCATTER: off = (size_t)r->rank * per; break;
      case DS_OP_BROADCAST: how = DS__EXPECT_RANK; src = o->root; break;
      case DS_OP_SCATTER: how = DS__EXPECT_RANK; src = o->root; off = (size_t)r->rank * per; break;
      default: how = DS__EXPECT_GATHERED; break; /* allgather, gather */
    }
    DS_CUDA_CHECK(ds__cuda_check(r->out + r->out_off[i], r->n_out[i], how, r->world, src,
                                 off, per, r->d_wrong, cs));
  }
  DS_CHECK(reset_outputs(r, err));
  unsigned long long wrong = 0;
  DS_CUDA_CHECK(cudaMemcpyAsync(&wrong, r->d_wrong, sizeof wrong, cudaMemcpyDeviceToHost, cs));
  DS_CUDA_CHECK(cudaMemsetAsync(r->d_wrong, 0, sizeof wrong, cs));
  DS_CUDA_CHECK(cudaEventRecord(r->stream_done[DS_STREAM_COMPUTE], cs));
  DS_CHECK(ds__cuda_wait_events(&r->stream_done[DS_STREAM_COMPUTE], 1, NULL, rank,
                                "the result check", err));
  r->wrong += (int64_t)wrong;
  return DS_OK;
}

static ds_status cuda_end_iter_impl(struct ds_dev_rank *r, int64_t *start_ns,
                                    int64_t *end_ns, struct ds_err *err) {
  int32_t rank = r->rank;
  cudaEvent_t done[DS_STREAM_COUNT];
  size_t nd = 0;
  for (int k = 0; k < DS_STREAM_COUNT; k++) {
    if (!r->used[k]) continue;
    DS_CUDA_CHECK(cudaEventRecord(r->stream_done[k], r->stream[k]));
    done[nd++] = r->stream_done[k];
  }
  DS_CHECK(ds__cuda_wait_events(done, nd, r->comm, rank, "the iteration's GPU work", err));
  for (size_t i = 0; i < r->s->n_ops; i++) {
    if (r->issued_gen[i] != r->gen) continue;
    DS_CHECK(elapsed_ns(r, r->ev_start[i], &start_ns[i], err));
    DS_CHECK(elapsed_ns(r, r->ev_end[i], &end_ns[i], err));
  }
  return check_outputs(r, err);
}

static ds_status cuda_end_iter(struct ds_dev_rank *r, int64_t *start_ns, int64_t *end_ns,
                               struct ds_err *err) {
  ds_status st = cuda_end_iter_impl(r, start_ns, end_ns, err);
  if (st != DS_OK) r->failed = 1;
  return st;
}

static int64_t cuda_wrong(const struct ds_dev_rank *r) { return r->wrong; }

static void cuda_describe(const struct ds_dev_rank *r, char *buf, size_t cap) {
  size_t used = strlen(buf); /* describe appends (device.h) */
  int v = r->nccl_version;
  /* NCCL >= 2.9 encodes major*10000 + minor*100 + patch */
  ds_textout_append(buf, cap, &used, "# nccl_version: %d.%d.%d\n", v / 10000, v / 100 % 100,
                    v % 100);
  ds_textout_append(buf, cap, &used, "# cuda_runtime: %d.%d\n", r->rt_version / 1000,
                    r->rt_version % 1000 / 10);
  ds_textout_append(buf, cap, &used, "# cuda_driver: %d.%d\n", r->drv_version / 1000,
                    r->drv_version % 1000 / 10);
  ds_textout_append(buf, cap, &used, "# gpu: %s (ordinal %d of %d, %d SMs)\n", r->gpu_name,
                    r->gpu, r->gpu_count, r->sms);
  if (r->shared_gpu)
    ds_textout_append(buf, cap, &used, "# shared_gpus: %d ranks on %d GPU%s (timings do not "
                      "represent separate GPUs)\n", r->local_world, r->gpu_count,
                      r->gpu_count == 1 ? "" : "s");
  ds_textout_append(buf, cap, &used, "# compute: %s\n",
                    r->compute == DS_COMPUTE_GEMM
                        ? "gemm (cuBLAS SGEMM, edge cbrt(flops/2) up to 8192, repeated to the "
                          "flops; ops without flops spin)"
                        : "spin (one block per SM busy-waits dur_us on %globaltimer, less the "
                          "launch overhead the events see)");
  if (r->compute != DS_COMPUTE_GEMM || r->gemm_dim == 0)
    ds_textout_append(buf, cap, &used, "# spin_overhead_ns: %lld\n",
                      (long long)r->spin_overhead_ns);
  if (r->api) ds_textout_append(buf, cap, &used, "# cublas: %s\n", r->api->soname);
  ds_textout_append(buf, cap, &used, "# collectives: NCCL, float sum, checked\n");
  for (char **e = environ; e && *e; e++)
    if (strncmp(*e, "NCCL_", 5) == 0) ds_textout_append(buf, cap, &used, "# env: %s\n", *e);
}

static void cuda_close(struct ds_dev_rank *r) {
  if (!r) return;
  if (r->comm) {
    if (r->failed)
      ncclCommAbort(r->comm);
    else
      ncclCommDestroy(r->comm);
  }
  for (int k = 0; k < DS_STREAM_COUNT; k++) {
    if (r->stream[k] && !r->failed) cudaStreamSynchronize(r->stream[k]);
  }
  for (size_t i = 0; r->ev_start && i < r->s->n_ops; i++) {
    if (r->ev_start[i]) cudaEventDestroy(r->ev_start[i]);
    if (r->ev_end[i]) cudaEventDestroy(r->ev_end[i]);
  }
  for (int k = 0; k < DS_STREAM_COUNT; k++) {
    if (r->stream_done[k]) cudaEventDestroy(r->stream_done[k]);
    if (r->stream[k]) cudaStreamDestroy(r->stream[k]);
  }
  if (r->t0) cudaEventDestroy(r->t0);
  if (r->blas) r->api->destroy(r->blas);
  if (r->api) {
    dlclose(r->api->lib);
    free(r->api);
  }
  cudaFree(r->in);
  cudaFree(r->out);
  cudaFree(r->ga);
  cudaFree(r->gb);
  cudaFree(r->gc);
  cudaFree(r->d_wrong);
  cudaFree(r->copy_dev);
  if (r->copy_host) cudaFreeHost(r->copy_host);
  free(r->ev_start);
  free(r->ev_end);
  free(r->issued_gen);
  free(r->dep_idx);
  free(r->out_off);
  free(r->n_in);
  free(r->n_out);
  free(r);
}

extern "C" const struct ds_device ds_device_cuda = {
    /* .name = */ "cuda",
    /* .open = */ cuda_open,
    /* .begin_iter = */ cuda_begin_iter,
    /* .issue = */ cuda_issue,
    /* .end_iter = */ cuda_end_iter,
    /* .wrong = */ cuda_wrong,
    /* .describe = */ cuda_describe,
    /* .close = */ cuda_close,
};
