/*
 * `ddpreal calibrate` (calibrate.h): measures the GPU and the all-reduce of
 * this node and writes the calibration file ddpsim reads (traces/calib_file.h,
 * written by traces/calib_file.c).
 *
 * Compute, on rank 0 while the other ranks wait at a barrier:
 *  - GEMMs: every distinct GEMM the cuda device's gemm mode would run for
 *    the schedule's fwd/bwd ops of rank 0 (edge cbrt(flops/2) up to 8192,
 *    repeated to the op's flops, as dev_cuda.cu), timed with an event pair
 *    per execution (median of --iters), in FP32 math and in TF32 math
 *    (cublasSetMathMode, looked up with dlsym: cuBLAS is dlopen'ed as in
 *    dev_cuda.cu, never linked). Fitted with GSL least squares to
 *    t = overhead + flops/rate (gsl_fit_linear): rate over the peak of the
 *    chosen math is flops_efficiency, the intercept kernel_overhead. When
 *    the intercept comes out negative, the overhead is fixed at the launch
 *    time below and only the rate is fitted (gsl_fit_mul); both fits are
 *    reported with R^2 and residuals.
 *  - memory: cudaMemcpyAsync device to device and a float4 copy kernel on
 *    512 MiB, 2*S/t (read + write, the roofline's bytes); the faster over
 *    the peak is mem_efficiency.
 *  - launch floor: 1000 empty kernels back to back between two events (the
 *    span per kernel), reported beside the fitted overhead.
 *  - by op class (the `efficiency` section, sim/train/compute.h): matmul in
 *    FP32 and TF32 math is the GEMM fit's rate over that math's peak; the
 *    convolution proxy (cuDNN is not a dependency) is cuBLAS SGEMMs shaped
 *    as the implicit GEMMs of ResNet-50's four 3x3 convolutions at batch 32
 *    (M = N*P*Q output pixels, N = K output channels, K = C*R*S), in both
 *    maths: their FLOPs over their summed median times, over the peak. The
 *    proxy has the convolution's GEMM shape, not cuDNN's kernels (no im2col
 *    traffic, no Winograd).
 *  - interference (the `nccl` section): a compute-bound SGEMM (4096^3, FP32
 *    math) alone, then beside a copy kernel of --nccl-blocks blocks of 512
 *    threads (NCCL launches one block per channel, NCCL_MAX_NTHREADS 512)
 *    on another stream that runs for the whole timed sequence (it copies
 *    until a %globaltimer deadline); the median GEMM time's ratio is the
 *    measured slowdown, written beside the mechanism's SMs/(SMs - blocks)
 *    (sim/train/interference.h). The copy's end is checked to follow the
 *    last GEMM, so every timed GEMM had it beside it.
 *  - unaligned half-precision GEMMs (efficiency.matmul_unaligned_half,
 *    sim/train/compute.h): GPT-2's LM head forward as PyTorch calls cuBLAS
 *    (cublasGemmEx, bf16 where the GPU has it, else fp16, FP32 accumulate,
 *    transa T: out[8192, N] = x[8192, 768] W[N, 768]^T), with N = 50257
 *    (not a multiple of 8: cuBLAS's narrow-load kernels) and N = 50264 (the
 *    next multiple of 8), median of --iters each; the first's rate over the
 *    half peak is written, the second's is reported beside it.
 * Peaks: a small table from topologies/gpus.yaml (matched on the CUDA
 * device name) or --peak-tflops / --mem-bw.
 *
 * Collectives: the all-reduce sweep of `ddpreal collective`
 * (ds__coll_allreduce_sweep) on -g N forked ranks, fitted with weights
 * 1/t^2 (relative errors: sizes span 8 B .. 256 MiB) to
 * t = alpha + S * 2(N-1)/N / bus_bw; one rank is a device copy (factor 1,
 * marked copy: true), and ranks sharing a GPU are marked shared: true. On
 * N > 1 separate GPUs the smallest size's time per call (its calls issued
 * back to back between two events, as nccl-tests and DDP issue them) is
 * NCCL's per-call cost, written as nccl.launch; it includes that tiny
 * all-reduce's own latency, which NCCL's model also charges.
 *
 * Options: calibrate_args.c (plain C, built without CUDA too).
 *
 * Key invariant: the parent never touches CUDA (it forks the ranks), and
 * the file is written atomically by rank 0 only after every measurement
 * and check passed.
 */
#include "calibrate.h"
#include "calibrate_args.h"
#include "traces/calib_file.h"
#include "collective.h"
#include "dev_cuda.h"
#include "launch.h"

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <gsl/gsl_fit.h>
#include <math.h>
#include <nccl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/atomic_file.h"
#include "base/textout.h"
#include "traces/trace.h"

#define LAUNCHES 1000
#define COPY_BYTES ((size_t)512 << 20)
#define MAX_POINTS 64
#define INTERF_EDGE 4096  /* the interference GEMM: compute-bound at every peak */
#define INTERF_GEMMS 9    /* timed GEMMs, alone and beside the copy */
#define INTERF_THREADS 512 /* NCCL_MAX_NTHREADS: threads per NCCL block */
#define INTERF_COPY_BYTES ((size_t)256 << 20)

/* The convolution proxy: ResNet-50's 3x3 convolutions at batch 32 as
 * implicit GEMMs (M = 32*P*Q, N = K out channels, K = C*3*3; P = Q = 56,
 * 28, 14, 7 and C = K = 64, 128, 256, 512): 2*M*N*K = 7.4 GFLOP each. */
static const int conv_shapes[][3] = {
    {32 * 56 * 56, 64, 64 * 9},
    {32 * 28 * 28, 128, 128 * 9},
    {32 * 14 * 14, 256, 256 * 9},
    {32 * 7 * 7, 512, 512 * 9},
};
#define N_CONV (sizeof conv_shapes / sizeof *conv_shapes)

/* Peaks of the GPUs ddpsim's table knows (topologies/gpus.yaml, which
 * cites glennklockwood.com/garden/processors for the dense rates and the
 * vendors' datasheets for memory). `match` and `also` must both occur in
 * the CUDA device name (cudaDeviceProp.name), `not` must not. */
struct peak_row {
  const char *match, *also, *not_;
  const char *table_name;
  double fp32_tflops, tf32_tflops, mem_gbps;
  double half_tflops; /* dense fp16/bf16 tensor rate */
};
static const struct peak_row peak_table[] = {
    {"H100", "", "PCIe", "H100-SXM5-80GB", 66.9, 494.7, 3350, 989.4},
    {"H200", "", "NVL", "H200-SXM-141GB", 66.9, 494.7, 4800, 989.4},
    {"A100", "80GB", "PCIe", "A100-SXM4-80GB", 19.5, 156, 2039, 312},
    {"A100", "40GB", "PCIe", "A100-SXM4-40GB", 19.5, 156, 1555, 312},
    {"V100", "", "PCIe", "V100-SXM2", 15.7, 0, 900, 125},
};

/* One GEMM the gemm device would run: d^3 edge, reps times per op. */
struct shape {
  double op_flops; /* the first op's flops */
  double flops;    /* executed: reps * 2 d^3 */
  size_t d;
  long reps;
  int n_ops;
  double t_s[2]; /* median per execution: [0] FP32 math, [1] TF32 */
};

struct linfit {
  double c0, c1;  /* t = c0 + c1 x */
  double r2;      /* 1 - SSres/SStot (weighted when weights were used) */
  double rms_rel, max_rel; /* relative residuals (fit - t)/t */
};

struct compute_meas {
  char gpu_name[256];
  int sms, drv, rt, nccl;
  char driver[64];
  char cublas[32]; /* the soname loaded */
  int cublas_version;
  int have_tf32;
  double launch_ns;      /* per kernel, back to back */
  double launch_pair_ns; /* one empty kernel between two events, median */
  double memcpy_bw, kernel_bw; /* bytes/s, 2*S/t */
  struct linfit free_fit[2], fixed_fit[2];
  double conv_flops;   /* the proxy's shapes, each once */
  double conv_t_s[2];  /* their median times summed: [0] FP32 math, [1] TF32 */
  double interf_alone_s, interf_beside_s; /* median GEMM time */
  int interf_blocks;
  /* the LM-head GEMM (UNALIGNED_* below), median: [0] N unaligned, [1] aligned */
  double unaligned_t_s[2];
  int unaligned_bf16; /* 1: bf16, 0: fp16 */
};

struct cal_ctx {
  const struct ds_calibrate_args *o;
  struct shape *shapes;
  size_t n_shapes, n_ops;
};

/* The GEMM shapes of rank 0's fwd/bwd ops with flops (dev_cuda.cu's
 * gemm_dim_for and reps), each once. */
static ds_status collect_shapes(const struct ds_schedule *s, struct cal_ctx *c,
                                struct ds_err *err) {
  c->shapes = (struct shape *)calloc(s->n_ops ? s->n_ops : 1, sizeof *c->shapes);
  if (!c->shapes) return ds_err_set(err, DS_ENOMEM, "out of memory");
  for (size_t i = 0; i < s->n_ops; i++) {
    const struct ds_op *op = &s->ops[i];
    if (op->rank != 0 || (op->kind != DS_OP_FWD && op->kind != DS_OP_BWD) || !(op->flops > 0))
      continue;
    double dd = cbrt(op->flops / 2.0);
    if (dd > DS_CUDA_GEMM_MAX_DIM) dd = DS_CUDA_GEMM_MAX_DIM;
    size_t d = dd < 1 ? 1 : (size_t)llround(dd);
    double per = 2.0 * (double)d * (double)d * (double)d;
    long reps = lround(op->flops / per);
    if (reps < 1) reps = 1;
    c->n_ops++;
    size_t k = 0;
    while (k < c->n_shapes && !(c->shapes[k].d == d && c->shapes[k].reps == reps)) k++;
    if (k == c->n_shapes) {
      c->shapes[k].op_flops = op->flops;
      c->shapes[k].flops = per * (double)reps;
      c->shapes[k].d = d;
      c->shapes[k].reps = reps;
      c->n_shapes++;
    }
    c->shapes[k].n_ops++;
  }
  if (c->n_shapes < 2)
    return ds_err_set(err, DS_EINPUT, "%s has %zu distinct GEMM size%s among "
                      "rank 0's fwd/bwd ops with flops; the fit needs at least 2 (write the "
                      "schedule with ddpsim --schedule for a model)", c->o->schedule,
                      c->n_shapes, c->n_shapes == 1 ? "" : "s");
  return DS_OK;
}

/* ---- fits (GSL) --------------------------------------------------------- */

/* R^2 and relative residuals of t = c0 + c1 x; weights w may be NULL. */
static void fit_stats(const double *x, const double *y, const double *w, size_t n,
                      struct linfit *f) {
  double sw = 0, swy = 0;
  for (size_t i = 0; i < n; i++) {
    double wi = w ? w[i] : 1;
    sw += wi;
    swy += wi * y[i];
  }
  double mean = swy / sw, ssr = 0, sst = 0, rel2 = 0;
  f->max_rel = 0;
  for (size_t i = 0; i < n; i++) {
    double wi = w ? w[i] : 1, r = f->c0 + f->c1 * x[i] - y[i], rel = r / y[i];
    ssr += wi * r * r;
    sst += wi * (y[i] - mean) * (y[i] - mean);
    rel2 += rel * rel;
    if (fabs(rel) > fabs(f->max_rel)) f->max_rel = rel;
  }
  f->r2 = sst > 0 ? 1 - ssr / sst : 0;
  f->rms_rel = sqrt(rel2 / (double)n);
}

static void fit_free(const double *x, const double *y, size_t n, struct linfit *f) {
  double cov00, cov01, cov11, sumsq;
  gsl_fit_linear(x, 1, y, 1, n, &f->c0, &f->c1, &cov00, &cov01, &cov11, &sumsq);
  fit_stats(x, y, NULL, n, f);
}

/* t - off = c1 x (the overhead fixed at off). */
static void fit_fixed(const double *x, const double *y, size_t n, double off,
                      struct linfit *f) {
  double *yy = (double *)malloc(n * sizeof *yy), cov11, sumsq;
  if (!yy) {
    memset(f, 0, sizeof *f);
    return;
  }
  for (size_t i = 0; i < n; i++) yy[i] = y[i] - off;
  gsl_fit_mul(x, 1, yy, 1, n, &f->c1, &cov11, &sumsq);
  f->c0 = off;
  free(yy);
  fit_stats(x, y, NULL, n, f);
}

/* Weighted by 1/t^2: least squares of the relative error. */
static void fit_relative(const double *x, const double *y, size_t n, struct linfit *f) {
  double *w = (double *)malloc(n * sizeof *w), cov00, cov01, cov11, chisq;
  if (!w) {
    memset(f, 0, sizeof *f);
    return;
  }
  for (size_t i = 0; i < n; i++) w[i] = 1.0 / (y[i] * y[i]);
  gsl_fit_wlinear(x, 1, w, 1, y, 1, n, &f->c0, &f->c1, &cov00, &cov01, &cov11, &chisq);
  fit_stats(x, y, w, n, f);
  free(w);
}

/* ---- compute measurements (rank 0) -------------------------------------- */

struct blas {
  void *lib;
  char soname[32];
  cublasHandle_t h;
  cublasStatus_t (*create)(cublasHandle_t *);
  cublasStatus_t (*destroy)(cublasHandle_t);
  cublasStatus_t (*set_stream)(cublasHandle_t, cudaStream_t);
  cublasStatus_t (*set_math)(cublasHandle_t, cublasMath_t); /* may be NULL */
  cublasStatus_t (*get_version)(cublasHandle_t, int *);     /* may be NULL */
  cublasStatus_t (*sgemm)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int,
                          const float *, const float *, int, const float *, int, const float *,
                          float *, int);
  cublasStatus_t (*gemm_ex)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int,
                            const void *, const void *, cudaDataType_t, int, const void *,
                            cudaDataType_t, int, const void *, void *, cudaDataType_t, int,
                            cublasComputeType_t, cublasGemmAlgo_t); /* may be NULL */
};

static ds_status blas_open(struct blas *b, int32_t rank, struct ds_err *err) {
  static const char *const names[] = {"libcublas.so.13", "libcublas.so.12"};
  for (size_t k = 0; k < sizeof names / sizeof *names && !b->lib; k++) {
    b->lib = dlopen(names[k], RTLD_NOW | RTLD_LOCAL);
    if (b->lib) snprintf(b->soname, sizeof b->soname, "%s", names[k]);
  }
  if (!b->lib)
    return ds_err_set(err, DS_EIO, "rank %d: calibrate needs cuBLAS, and neither "
                      "libcublas.so.13 nor .12 loads (%s); add its directory to "
                      "LD_LIBRARY_PATH", rank, dlerror());
  /* POSIX: a dlsym result converts to a function pointer */
  *(void **)&b->create = dlsym(b->lib, "cublasCreate_v2");
  *(void **)&b->destroy = dlsym(b->lib, "cublasDestroy_v2");
  *(void **)&b->set_stream = dlsym(b->lib, "cublasSetStream_v2");
  *(void **)&b->set_math = dlsym(b->lib, "cublasSetMathMode");
  *(void **)&b->get_version = dlsym(b->lib, "cublasGetVersion_v2");
  *(void **)&b->sgemm = dlsym(b->lib, "cublasSgemm_v2");
  *(void **)&b->gemm_ex = dlsym(b->lib, "cublasGemmEx");
  if (!b->create || !b->destroy || !b->set_stream || !b->sgemm)
    return ds_err_set(err, DS_EIO, "rank %d: %s lacks cublasCreate_v2, cublasSetStream_v2 or "
                      "cublasSgemm_v2", rank, b->soname);
  if (b->create(&b->h) != CUBLAS_STATUS_SUCCESS) {
    b->h = NULL;
    return ds_err_set(err, DS_EIO, "rank %d: cublasCreate failed", rank);
  }
  return DS_OK;
}

static void blas_close(struct blas *b) {
  if (b->h) b->destroy(b->h);
  if (b->lib) dlclose(b->lib);
}

__global__ static void empty_kernel(void) {}

__global__ static void copy_kernel(const float4 *in, float4 *out, size_t n) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
       i += (size_t)gridDim.x * blockDim.x)
    out[i] = in[i];
}

__device__ static unsigned long long global_ns(void) {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

/* The interference copy: the grid copies in to out over and over until
 * dur_ns have passed since its block started, as an NCCL kernel holds its
 * blocks and streams bytes for the length of a collective. */
__global__ static void copy_for(const float4 *in, float4 *out, size_t n,
                                unsigned long long dur_ns) {
  unsigned long long t0 = global_ns();
  while (global_ns() - t0 < dur_ns)
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
      out[i] = in[i];
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double median(double *v, size_t n) {
  qsort(v, n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* Everything rank 0 allocates for the compute measurements. */
struct cres {
  cudaStream_t s;
  cudaEvent_t *ev;
  int n_ev;
  float *a, *b, *c;
  struct blas bl;
};

static void cres_free(struct cres *r) {
  if (r->s) cudaStreamSynchronize(r->s);
  for (int k = 0; k < r->n_ev; k++) cudaEventDestroy(r->ev[k]);
  free(r->ev);
  cudaFree(r->a);
  cudaFree(r->b);
  cudaFree(r->c);
  blas_close(&r->bl);
  if (r->s) cudaStreamDestroy(r->s);
}

/* Times n executions of what issue() queues (a callable returning a
 * status), an event pair around each; writes each span in seconds to
 * out[0..n). */
template <typename F>
static ds_status time_each(struct cres *r, int n, double *out, int32_t rank,
                           struct ds_err *err, F issue) {
  for (int k = 0; k < n; k++) {
    DS_CUDA_CHECK(cudaEventRecord(r->ev[2 * k], r->s));
    DS_CHECK(issue());
    DS_CUDA_CHECK(cudaEventRecord(r->ev[2 * k + 1], r->s));
  }
  DS_CHECK(ds__cuda_wait_events(&r->ev[2 * n - 1], 1, NULL, rank, "the timed GPU work", err));
  for (int k = 0; k < n; k++) {
    float ms = 0;
    DS_CUDA_CHECK(cudaEventElapsedTime(&ms, r->ev[2 * k], r->ev[2 * k + 1]));
    out[k] = (double)ms * 1e-3;
  }
  return DS_OK;
}

static ds_status run_gemm(struct cres *r, const struct shape *sh, int32_t rank,
                          struct ds_err *err) {
  const float one = 1.0f, zero = 0.0f;
  int d = (int)sh->d;
  for (long k = 0; k < sh->reps; k++) {
    cublasStatus_t b = r->bl.sgemm(r->bl.h, CUBLAS_OP_N, CUBLAS_OP_N, d, d, d, &one, r->a, d,
                                   r->b, d, &zero, r->c, d);
    if (b != CUBLAS_STATUS_SUCCESS)
      return ds_err_set(err, DS_EIO, "rank %d: cublasSgemm (%d^3) failed: status %d", rank, d,
                        (int)b);
  }
  return DS_OK;
}

static ds_status measure_gemms(struct cal_ctx *c, struct cres *r, struct compute_meas *m,
                               int32_t rank, struct ds_err *err) {
  int iters = c->o->iters;
  size_t maxd = 1;
  for (size_t i = 0; i < c->n_shapes; i++)
    if (c->shapes[i].d > maxd) maxd = c->shapes[i].d;
  size_t elems = maxd * maxd;
  DS_CUDA_CHECK(cudaMalloc((void **)&r->a, elems * sizeof(float)));
  DS_CUDA_CHECK(cudaMalloc((void **)&r->b, elems * sizeof(float)));
  DS_CUDA_CHECK(cudaMalloc((void **)&r->c, elems * sizeof(float)));
  /* small values: no overflow to inf over 8192-term dot products */
  DS_CUDA_CHECK(ds__cuda_fill(r->a, elems, 0.01f, r->s));
  DS_CUDA_CHECK(ds__cuda_fill(r->b, elems, 0.02f, r->s));
  DS_CHECK(blas_open(&r->bl, rank, err));
  if (r->bl.set_stream(r->bl.h, r->s) != CUBLAS_STATUS_SUCCESS)
    return ds_err_set(err, DS_EIO, "rank %d: cublasSetStream failed", rank);
  if (r->bl.get_version) r->bl.get_version(r->bl.h, &m->cublas_version);
  memcpy(m->cublas, r->bl.soname, sizeof m->cublas);
  m->have_tf32 = r->bl.set_math != NULL;
  double *t = (double *)malloc((size_t)iters * sizeof *t);
  if (!t) return ds_err_set(err, DS_ENOMEM, "out of memory");
  ds_status st = DS_OK;
  for (int math = 0; math < 2 && st == DS_OK; math++) {
    if (math == 1 && !m->have_tf32) break;
    if (r->bl.set_math &&
        r->bl.set_math(r->bl.h, math ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH) !=
            CUBLAS_STATUS_SUCCESS) {
      if (math == 0) {
        st = ds_err_set(err, DS_EIO, "rank %d: cublasSetMathMode(DEFAULT) failed", rank);
        break;
      }
      m->have_tf32 = 0;
      break;
    }
    for (size_t i = 0; i < c->n_shapes && st == DS_OK; i++) {
      struct shape *sh = &c->shapes[i];
      /* warm-up: cuBLAS picks and loads its kernel for the shape */
      st = run_gemm(r, sh, rank, err);
      if (st == DS_OK) st = run_gemm(r, sh, rank, err);
      if (st != DS_OK) break;
      st = time_each(r, iters, t, rank, err, [&]() { return run_gemm(r, sh, rank, err); });
      if (st == DS_OK) sh->t_s[math] = median(t, (size_t)iters);
    }
  }
  free(t);
  return st;
}

static ds_status sgemm(struct cres *r, int m, int n, int k, const float *a, const float *b,
                       float *c, int32_t rank, struct ds_err *err) {
  const float one = 1.0f, zero = 0.0f;
  cublasStatus_t st = r->bl.sgemm(r->bl.h, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &one, a, m, b, k,
                                  &zero, c, m);
  if (st != CUBLAS_STATUS_SUCCESS)
    return ds_err_set(err, DS_EIO, "rank %d: cublasSgemm (%dx%dx%d) failed: status %d", rank, m,
                      n, k, (int)st);
  return DS_OK;
}

static ds_status set_math(struct cres *r, int tf32, int32_t rank, struct ds_err *err) {
  if (!r->bl.set_math) return tf32 ? ds_err_set(err, DS_EIO, "rank %d: no cublasSetMathMode",
                                                rank) : DS_OK;
  if (r->bl.set_math(r->bl.h, tf32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH) !=
      CUBLAS_STATUS_SUCCESS)
    return ds_err_set(err, DS_EIO, "rank %d: cublasSetMathMode(%s) failed", rank,
                      tf32 ? "TF32" : "DEFAULT");
  return DS_OK;
}

/* The convolution proxy (conv_shapes): per math, the shapes' median times
 * summed. Runs after measure_gemms (cuBLAS open, the math modes known). */
static ds_status measure_conv_proxy(struct cal_ctx *c, struct cres *r, struct compute_meas *m,
                                    int32_t rank, struct ds_err *err) {
  size_t ma = 0, mb = 0, mc = 0;
  m->conv_flops = 0;
  for (size_t i = 0; i < N_CONV; i++) {
    size_t M = (size_t)conv_shapes[i][0], N = (size_t)conv_shapes[i][1],
           K = (size_t)conv_shapes[i][2];
    ma = M * K > ma ? M * K : ma;
    mb = K * N > mb ? K * N : mb;
    mc = M * N > mc ? M * N : mc;
    m->conv_flops += 2.0 * (double)M * (double)N * (double)K;
  }
  float *a = NULL, *b = NULL, *cc = NULL;
  int iters = c->o->iters;
  double *t = (double *)malloc((size_t)iters * sizeof *t);
  if (!t) return ds_err_set(err, DS_ENOMEM, "out of memory");
  ds_status st = [&]() -> ds_status {
    DS_CUDA_CHECK(cudaMalloc((void **)&a, ma * sizeof(float)));
    DS_CUDA_CHECK(cudaMalloc((void **)&b, mb * sizeof(float)));
    DS_CUDA_CHECK(cudaMalloc((void **)&cc, mc * sizeof(float)));
    DS_CUDA_CHECK(ds__cuda_fill(a, ma, 0.01f, r->s));
    DS_CUDA_CHECK(ds__cuda_fill(b, mb, 0.02f, r->s));
    for (int math = 0; math < 1 + m->have_tf32; math++) {
      DS_CHECK(set_math(r, math, rank, err));
      m->conv_t_s[math] = 0;
      for (size_t i = 0; i < N_CONV; i++) {
        int M = conv_shapes[i][0], N = conv_shapes[i][1], K = conv_shapes[i][2];
        DS_CHECK(sgemm(r, M, N, K, a, b, cc, rank, err)); /* warm-up */
        DS_CHECK(time_each(r, iters, t, rank, err,
                           [&]() { return sgemm(r, M, N, K, a, b, cc, rank, err); }));
        m->conv_t_s[math] += median(t, (size_t)iters);
      }
    }
    return set_math(r, 0, rank, err);
  }();
  free(t);
  cudaStreamSynchronize(r->s);
  cudaFree(a);
  cudaFree(b);
  cudaFree(cc);
  return st;
}

/* GPT-2's LM head (tools/torch_models.py gpt2 at batch 8): 8192 tokens,
 * 768 features, a vocabulary of 50257, and the next multiple of 8. */
enum { UNALIGNED_M = 8192, UNALIGNED_K = 768, UNALIGNED_N = 50257, ALIGNED_N = 50264 };

__global__ static void fill_u16(unsigned short *p, size_t n, unsigned short v) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
       i += (size_t)gridDim.x * blockDim.x)
    p[i] = v;
}

/* The LM-head GEMM with N unaligned and aligned (the header's list); a
 * cuBLAS without cublasGemmEx leaves the times 0 (nothing written). */
static ds_status measure_unaligned(struct cal_ctx *c, struct cres *r, struct compute_meas *m,
                                   int gpu, int32_t rank, struct ds_err *err) {
  m->unaligned_t_s[0] = m->unaligned_t_s[1] = 0;
  if (!r->bl.gemm_ex) return DS_OK;
  cudaDeviceProp prop;
  DS_CUDA_CHECK(cudaGetDeviceProperties(&prop, gpu));
  m->unaligned_bf16 = prop.major >= 8;
  cudaDataType_t type = m->unaligned_bf16 ? CUDA_R_16BF : CUDA_R_16F;
  /* about 0.1 in either type: fp16 0x2e66, bf16 0x3dcd */
  unsigned short val = m->unaligned_bf16 ? 0x3dcd : 0x2e66;
  size_t na = (size_t)UNALIGNED_M * UNALIGNED_K, nw = (size_t)ALIGNED_N * UNALIGNED_K,
         nc = (size_t)UNALIGNED_M * ALIGNED_N;
  unsigned short *x = NULL, *w = NULL, *out = NULL;
  int iters = c->o->iters;
  double *t = (double *)malloc((size_t)iters * sizeof *t);
  if (!t) return ds_err_set(err, DS_ENOMEM, "out of memory");
  ds_status st = [&]() -> ds_status {
    DS_CUDA_CHECK(cudaMalloc((void **)&x, na * sizeof *x));
    DS_CUDA_CHECK(cudaMalloc((void **)&w, nw * sizeof *w));
    DS_CUDA_CHECK(cudaMalloc((void **)&out, nc * sizeof *out));
    fill_u16<<<1024, 256, 0, r->s>>>(x, na, val);
    fill_u16<<<1024, 256, 0, r->s>>>(w, nw, val);
    DS_CUDA_CHECK(cudaGetLastError());
    const float one = 1.0f, zero = 0.0f;
    for (int aligned = 0; aligned < 2; aligned++) {
      int n = aligned ? ALIGNED_N : UNALIGNED_N;
      /* column-major: out^T [n x M] = W [n x K] (row-major [n, K]: op T, lda K) x^T */
      auto issue = [&]() -> ds_status {
        cublasStatus_t b = r->bl.gemm_ex(r->bl.h, CUBLAS_OP_T, CUBLAS_OP_N, n, UNALIGNED_M,
                                         UNALIGNED_K, &one, w, type, UNALIGNED_K, x, type,
                                         UNALIGNED_K, &zero, out, type, n, CUBLAS_COMPUTE_32F,
                                         CUBLAS_GEMM_DEFAULT);
        if (b != CUBLAS_STATUS_SUCCESS)
          return ds_err_set(err, DS_EIO, "rank %d: cublasGemmEx (%dx%dx%d, %s) failed: "
                            "status %d", rank, UNALIGNED_M, n, UNALIGNED_K,
                            m->unaligned_bf16 ? "bf16" : "fp16", (int)b);
        return DS_OK;
      };
      DS_CHECK(issue()); /* warm-up */
      DS_CHECK(time_each(r, iters, t, rank, err, issue));
      m->unaligned_t_s[aligned] = median(t, (size_t)iters);
    }
    return DS_OK;
  }();
  free(t);
  cudaStreamSynchronize(r->s);
  cudaFree(x);
  cudaFree(w);
  cudaFree(out);
  return st;
}

/* A compute-bound GEMM alone, then beside copy_for with `blocks` blocks on
 * a second stream; median times into m. */
static ds_status measure_interference(struct cal_ctx *c, struct cres *r, struct compute_meas *m,
                                      int32_t rank, struct ds_err *err) {
  const size_t e = INTERF_EDGE, n4 = INTERF_COPY_BYTES / sizeof(float4);
  int blocks = c->o->nccl_blocks;
  if (blocks >= m->sms)
    return ds_err_set(err, DS_EUSAGE, "--nccl-blocks %d: the GPU has %d SMs; the copy must "
                      "leave some to the GEMM", blocks, m->sms);
  m->interf_blocks = blocks;
  float *a = NULL, *b = NULL, *cc = NULL, *src = NULL, *dst = NULL;
  cudaStream_t s2 = NULL;
  cudaEvent_t cs = NULL, ce = NULL; /* the copy's start and end */
  double t[INTERF_GEMMS];
  ds_status st = [&]() -> ds_status {
    DS_CUDA_CHECK(cudaMalloc((void **)&a, e * e * sizeof(float)));
    DS_CUDA_CHECK(cudaMalloc((void **)&b, e * e * sizeof(float)));
    DS_CUDA_CHECK(cudaMalloc((void **)&cc, e * e * sizeof(float)));
    DS_CUDA_CHECK(cudaMalloc((void **)&src, INTERF_COPY_BYTES));
    DS_CUDA_CHECK(cudaMalloc((void **)&dst, INTERF_COPY_BYTES));
    DS_CUDA_CHECK(ds__cuda_fill(a, e * e, 0.01f, r->s));
    DS_CUDA_CHECK(ds__cuda_fill(b, e * e, 0.02f, r->s));
    DS_CUDA_CHECK(ds__cuda_fill(src, INTERF_COPY_BYTES / sizeof(float), 1.0f, r->s));
    DS_CUDA_CHECK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
    DS_CUDA_CHECK(cudaEventCreate(&cs));
    DS_CUDA_CHECK(cudaEventCreate(&ce));
    DS_CHECK(set_math(r, 0, rank, err));
    int d = (int)e;
    DS_CHECK(sgemm(r, d, d, d, a, b, cc, rank, err)); /* warm-up */
    DS_CHECK(time_each(r, INTERF_GEMMS, t, rank, err,
                       [&]() { return sgemm(r, d, d, d, a, b, cc, rank, err); }));
    m->interf_alone_s = median(t, INTERF_GEMMS);
    /* The copy runs for the whole sequence, twice what it takes alone plus
     * 5 ms: a slowdown beyond 2x would show as an uncovered GEMM below. */
    unsigned long long dur_ns =
        (unsigned long long)((2.0 * (INTERF_GEMMS + 2) * m->interf_alone_s + 5e-3) * 1e9);
    DS_CUDA_CHECK(cudaEventRecord(cs, s2));
    copy_for<<<(unsigned)blocks, INTERF_THREADS, 0, s2>>>((const float4 *)src, (float4 *)dst,
                                                          n4, dur_ns);
    DS_CUDA_CHECK(cudaGetLastError());
    DS_CUDA_CHECK(cudaEventRecord(ce, s2));
    /* the GEMM stream starts once the copy's stream reached its kernel; one
     * untimed GEMM lets the copy's blocks become resident first */
    DS_CUDA_CHECK(cudaStreamWaitEvent(r->s, cs, 0));
    DS_CHECK(sgemm(r, d, d, d, a, b, cc, rank, err));
    DS_CHECK(time_each(r, INTERF_GEMMS, t, rank, err,
                       [&]() { return sgemm(r, d, d, d, a, b, cc, rank, err); }));
    DS_CHECK(ds__cuda_wait_events(&ce, 1, NULL, rank, "the interference copy", err));
    float last_end_ms = 0, copy_end_ms = 0;
    DS_CUDA_CHECK(cudaEventElapsedTime(&last_end_ms, cs, r->ev[2 * INTERF_GEMMS - 1]));
    DS_CUDA_CHECK(cudaEventElapsedTime(&copy_end_ms, cs, ce));
    if (copy_end_ms < last_end_ms)
      return ds_err_set(err, DS_EIO, "rank %d: the interference copy ended (%.3f ms) before "
                        "the last GEMM beside it (%.3f ms): the slowdown was not measured",
                        rank, (double)copy_end_ms, (double)last_end_ms);
    m->interf_beside_s = median(t, INTERF_GEMMS);
    return DS_OK;
  }();
  if (s2) cudaStreamSynchronize(s2);
  cudaStreamSynchronize(r->s);
  if (cs) cudaEventDestroy(cs);
  if (ce) cudaEventDestroy(ce);
  if (s2) cudaStreamDestroy(s2);
  cudaFree(a);
  cudaFree(b);
  cudaFree(cc);
  cudaFree(src);
  cudaFree(dst);
  return st;
}

static ds_status measure_launch(struct cres *r, struct compute_meas *m, int32_t rank,
                                struct ds_err *err) {
  /* warm-up, then LAUNCHES back to back between the first two events */
  for (int k = 0; k < 10; k++) empty_kernel<<<1, 1, 0, r->s>>>();
  DS_CUDA_CHECK(cudaGetLastError());
  DS_CUDA_CHECK(cudaEventRecord(r->ev[0], r->s));
  for (int k = 0; k < LAUNCHES; k++) empty_kernel<<<1, 1, 0, r->s>>>();
  DS_CUDA_CHECK(cudaGetLastError());
  DS_CUDA_CHECK(cudaEventRecord(r->ev[1], r->s));
  DS_CHECK(ds__cuda_wait_events(&r->ev[1], 1, NULL, rank, "the launch sequence", err));
  float ms = 0;
  DS_CUDA_CHECK(cudaEventElapsedTime(&ms, r->ev[0], r->ev[1]));
  m->launch_ns = (double)ms * 1e6 / LAUNCHES;
  /* one kernel inside an event pair, as the replay times an op */
  int n = r->n_ev / 2;
  double *t = (double *)malloc((size_t)n * sizeof *t);
  if (!t) return ds_err_set(err, DS_ENOMEM, "out of memory");
  ds_status st = time_each(r, n, t, rank, err, [&]() -> ds_status {
    empty_kernel<<<1, 1, 0, r->s>>>();
    DS_CUDA_CHECK(cudaGetLastError());
    return DS_OK;
  });
  if (st == DS_OK) m->launch_pair_ns = median(t, (size_t)n) * 1e9;
  free(t);
  return st;
}

static ds_status measure_copy(struct cres *r, struct compute_meas *m, int32_t rank,
                              struct ds_err *err) {
  float *src = NULL, *dst = NULL;
  size_t n4 = COPY_BYTES / sizeof(float4);
  const int reps = 10;
  double t[10];
  ds_status st = DS_OK;
  cudaError_t e = cudaMalloc((void **)&src, COPY_BYTES);
  if (e == cudaSuccess) e = cudaMalloc((void **)&dst, COPY_BYTES);
  if (e == cudaSuccess) e = ds__cuda_fill(src, COPY_BYTES / sizeof(float), 1.0f, r->s);
  if (e != cudaSuccess) {
    st = ds__cuda_fail(err, rank, "cudaMalloc/fill of the copy buffers", e);
    goto out;
  }
  st = [&]() -> ds_status {
    DS_CUDA_CHECK(cudaMemcpyAsync(dst, src, COPY_BYTES, cudaMemcpyDeviceToDevice, r->s));
    DS_CHECK(time_each(r, reps, t, rank, err, [&]() -> ds_status {
      DS_CUDA_CHECK(cudaMemcpyAsync(dst, src, COPY_BYTES, cudaMemcpyDeviceToDevice, r->s));
      return DS_OK;
    }));
    m->memcpy_bw = 2.0 * (double)COPY_BYTES / median(t, reps);
    unsigned grid = (unsigned)m->sms * 8;
    copy_kernel<<<grid, 256, 0, r->s>>>((const float4 *)src, (float4 *)dst, n4);
    DS_CUDA_CHECK(cudaGetLastError());
    DS_CHECK(time_each(r, reps, t, rank, err, [&]() -> ds_status {
      copy_kernel<<<grid, 256, 0, r->s>>>((const float4 *)src, (float4 *)dst, n4);
      DS_CUDA_CHECK(cudaGetLastError());
      return DS_OK;
    }));
    m->kernel_bw = 2.0 * (double)COPY_BYTES / median(t, reps);
    return DS_OK;
  }();
out:
  cudaFree(src);
  cudaFree(dst);
  return st;
}

static void read_driver(char *buf, size_t cap) {
  snprintf(buf, cap, "unknown");
  FILE *fp = fopen("/proc/driver/nvidia/version", "r");
  if (!fp) return;
  char line[512];
  /* "NVRM version: NVIDIA UNIX [Open Kernel Module for] x86_64 Kernel
   * Module  580.159.04  ...": the first token of the form N.N */
  if (fgets(line, sizeof line, fp)) {
    char *save = NULL;
    for (char *tok = strtok_r(line, " \t\n", &save); tok; tok = strtok_r(NULL, " \t\n", &save)) {
      unsigned a, b;
      if (sscanf(tok, "%u.%u", &a, &b) == 2) {
        snprintf(buf, cap, "%.60s", tok);
        break;
      }
    }
  }
  fclose(fp);
}

static ds_status measure_compute(struct cal_ctx *c, int gpu, struct compute_meas *m,
                                 int32_t rank, struct ds_err *err) {
  cudaDeviceProp prop;
  DS_CUDA_CHECK(cudaGetDeviceProperties(&prop, gpu));
  snprintf(m->gpu_name, sizeof m->gpu_name, "%s", prop.name);
  m->sms = prop.multiProcessorCount;
  cudaDriverGetVersion(&m->drv);
  cudaRuntimeGetVersion(&m->rt);
  ncclGetVersion(&m->nccl);
  read_driver(m->driver, sizeof m->driver);
  struct cres r;
  memset(&r, 0, sizeof r);
  ds_status st = DS_OK;
  int n_ev = 2 * (c->o->iters > 101 ? c->o->iters : 101);
  r.ev = (cudaEvent_t *)calloc((size_t)n_ev, sizeof *r.ev);
  if (!r.ev) return ds_err_set(err, DS_ENOMEM, "out of memory");
  cudaError_t e = cudaStreamCreateWithFlags(&r.s, cudaStreamNonBlocking);
  for (; e == cudaSuccess && r.n_ev < n_ev; r.n_ev++) e = cudaEventCreate(&r.ev[r.n_ev]);
  if (e != cudaSuccess)
    st = ds__cuda_fail(err, rank, "cudaStreamCreate/cudaEventCreate", e);
  if (st == DS_OK) st = measure_launch(&r, m, rank, err);
  if (st == DS_OK) st = measure_copy(&r, m, rank, err);
  if (st == DS_OK) st = measure_gemms(c, &r, m, rank, err);
  if (st == DS_OK) st = measure_conv_proxy(c, &r, m, rank, err);
  if (st == DS_OK) st = measure_interference(c, &r, m, rank, err);
  if (st == DS_OK) st = measure_unaligned(c, &r, m, gpu, rank, err);
  cres_free(&r);
  return st;
}

/* ---- the rank body ------------------------------------------------------ */

struct rank_arg {
  struct cal_ctx *c;
};

static const struct peak_row *peak_lookup(const char *name) {
  for (size_t i = 0; i < sizeof peak_table / sizeof *peak_table; i++) {
    const struct peak_row *p = &peak_table[i];
    if (strstr(name, p->match) && strstr(name, p->also) && !strstr(name, p->not_)) return p;
  }
  return NULL;
}

static void utc_now(char *buf, size_t cap) {
  time_t now = time(NULL);
  struct tm tm;
  gmtime_r(&now, &tm);
  strftime(buf, cap, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* Appends printf output to a growing text (for the file's header). */
struct text {
  char buf[8192];
  size_t len;
};

static void add(struct text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void add(struct text *t, const char *fmt, ...) {
  if (t->len + 1 >= sizeof t->buf) return;
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(t->buf + t->len, sizeof t->buf - t->len, fmt, ap);
  va_end(ap);
  if (n > 0) t->len += (size_t)n < sizeof t->buf - t->len ? (size_t)n : sizeof t->buf - t->len - 1;
}

static ds_status finish(struct cal_ctx *c, const struct compute_meas *m, int32_t world,
                        int gpu_count, const struct ds_coll_point *pts, size_t n_pts,
                        struct ds_err *err) {
  const struct ds_calibrate_args *o = c->o;
  int shared = world > gpu_count;
  /* peaks */
  const struct peak_row *row = peak_lookup(m->gpu_name);
  int tf32 = o->fp32_math >= 0 ? o->fp32_math : m->have_tf32;
  if (tf32 && !m->have_tf32)
    return ds_err_set(err, DS_EIO, "--fp32-math tf32, but %s has no "
                      "cublasSetMathMode: use --fp32-math fp32", m->cublas);
  double peak = o->peak_tflops > 0 ? o->peak_tflops * 1e12
                : row ? (tf32 ? row->tf32_tflops : row->fp32_tflops) * 1e12 : 0;
  double mem_peak = o->mem_gbps > 0 ? o->mem_gbps * 1e9 : row ? row->mem_gbps * 1e9 : 0;
  if (!(peak > 0) || !(mem_peak > 0))
    return ds_err_set(err, DS_EUSAGE, "GPU '%s' is not in ddpreal's peak table "
                      "(or has no %s peak there); pass --peak-tflops (the %s peak) and "
                      "--mem-bw (GB/s)", m->gpu_name, tf32 ? "TF32" : "FP32",
                      tf32 ? "TF32" : "FP32");
  /* compute fits */
  size_t n = c->n_shapes;
  double *x = (double *)malloc(n * sizeof *x), *y = (double *)malloc(n * sizeof *y);
  if (!x || !y) {
    free(x);
    free(y);
    return ds_err_set(err, DS_ENOMEM, "out of memory");
  }
  struct compute_meas mm = *m;
  for (int math = 0; math < 1 + mm.have_tf32; math++) {
    for (size_t i = 0; i < n; i++) {
      x[i] = c->shapes[i].flops;
      y[i] = c->shapes[i].t_s[math];
    }
    fit_free(x, y, n, &mm.free_fit[math]);
    fit_fixed(x, y, n, mm.launch_ns * 1e-9, &mm.fixed_fit[math]);
  }
  free(x);
  free(y);
  /* The free least-squares fit is the roofline's own form; its intercept
   * is the per-kernel cost GEMMs really have (cuBLAS setup, small-shape
   * inefficiency), larger than an empty kernel's launch. Only when it comes
   * out below zero is the overhead fixed at the launch time instead. */
  int free_ok = mm.free_fit[tf32].c0 >= 0 && mm.free_fit[tf32].c1 > 0;
  const struct linfit *used = free_ok ? &mm.free_fit[tf32] : &mm.fixed_fit[tf32];
  double rate = 1.0 / used->c1;
  double sum_meas = 0, sum_model = 0; /* over the schedule's ops, one iteration */
  for (size_t i = 0; i < n; i++) {
    sum_meas += c->shapes[i].n_ops * c->shapes[i].t_s[tf32];
    sum_model += c->shapes[i].n_ops * (used->c0 + used->c1 * c->shapes[i].flops);
  }
  double mem_bw = mm.memcpy_bw > mm.kernel_bw ? mm.memcpy_bw : mm.kernel_bw;
  struct ds_calib cal;
  memset(&cal, 0, sizeof cal);
  /* the device measured, as CUDA names it (nvidia-smi prints the same):
   * ddpsim calls the efficiencies measured only on that GPU (sim/train/
   * calib.h ds_calib_gpu_fit) */
  snprintf(cal.gpu, sizeof cal.gpu, "%.63s", mm.gpu_name);
  cal.has_flops_efficiency = 1;
  cal.flops_efficiency = fmin(rate / peak, 1.0);
  cal.has_mem_efficiency = 1;
  cal.mem_efficiency = fmin(mem_bw / mem_peak, 1.0);
  cal.has_kernel_overhead = 1;
  cal.kernel_overhead_ns = used->c0 * 1e9;
  cal.has_fp32_math = 1;
  cal.fp32_uses_tf32 = tf32;
  /* By op class: each math's rate over that math's peak (the table's, or
   * --peak-tflops for the math it names); eff[] is indexed as
   * ds_calib_efficiency_keys, class * 3 + math (fp32 0, tf32 1). */
  enum { EFF_CONV = 0, EFF_MATMUL = 3 };
  double peak_of[2] = {row ? row->fp32_tflops * 1e12 : 0, row ? row->tf32_tflops * 1e12 : 0};
  if (o->peak_tflops > 0) peak_of[tf32] = o->peak_tflops * 1e12;
  double mm_rate[2] = {0, 0}, conv_rate[2] = {0, 0};
  for (int math = 0; math < 1 + mm.have_tf32; math++) {
    const struct linfit *f = mm.free_fit[math].c0 >= 0 && mm.free_fit[math].c1 > 0
                                 ? &mm.free_fit[math] : &mm.fixed_fit[math];
    mm_rate[math] = f->c1 > 0 ? 1.0 / f->c1 : 0;
    conv_rate[math] = mm.conv_t_s[math] > 0 ? mm.conv_flops / mm.conv_t_s[math] : 0;
    if (!(peak_of[math] > 0)) continue;
    if (mm_rate[math] > 0) cal.eff[EFF_MATMUL + math] = fmin(mm_rate[math] / peak_of[math], 1.0);
    if (conv_rate[math] > 0) cal.eff[EFF_CONV + math] = fmin(conv_rate[math] / peak_of[math], 1.0);
  }
  /* Unaligned half GEMMs: the LM head's rate with N = 50257 over the half
   * peak (ds_calib_efficiency_keys[EFF_UNALIGNED]). */
  enum { EFF_UNALIGNED = 9 };
  double lm_flops = 2.0 * UNALIGNED_M * UNALIGNED_K, half_peak = row ? row->half_tflops * 1e12 : 0;
  double un_rate = mm.unaligned_t_s[0] > 0 ? lm_flops * UNALIGNED_N / mm.unaligned_t_s[0] : 0;
  double al_rate = mm.unaligned_t_s[1] > 0 ? lm_flops * ALIGNED_N / mm.unaligned_t_s[1] : 0;
  if (un_rate > 0 && half_peak > 0) cal.eff[EFF_UNALIGNED] = fmin(un_rate / half_peak, 1.0);
  /* Interference: the measured slowdown (at least 1: a GEMM that came out
   * faster beside the copy is noise) and the mechanism's prediction. */
  double slowdown = mm.interf_alone_s > 0 ? mm.interf_beside_s / mm.interf_alone_s : 0;
  if (slowdown > 0 && mm.interf_blocks > 0 && mm.interf_blocks < mm.sms) {
    cal.has_interference = 1;
    cal.interference_blocks = mm.interf_blocks;
    cal.interference_slowdown = fmin(fmax(slowdown, 1.0), 100.0);
    cal.interference_predicted = (double)mm.sms / (mm.sms - mm.interf_blocks);
  }
  /* collective fit */
  double f = world > 1 ? 2.0 * (world - 1) / world : 1.0;
  double cx[MAX_POINTS], cy[MAX_POINTS];
  unsigned long long wrong = 0;
  for (size_t i = 0; i < n_pts; i++) {
    cx[i] = (double)pts[i].size_bytes * f;
    cy[i] = pts[i].time_us * 1e-6;
    wrong += pts[i].wrong;
  }
  if (wrong)
    return ds_err_set(err, DS_EIO, "the all-reduce sweep had %llu wrong result "
                      "elements (#wrong); no calibration written", wrong);
  if (n_pts < 2)
    return ds_err_set(err, DS_EUSAGE, "the all-reduce sweep has %zu size%s; "
                      "widen -b/-e", n_pts, n_pts == 1 ? "" : "s");
  struct linfit cf, cu;
  fit_relative(cx, cy, n_pts, &cf);
  fit_free(cx, cy, n_pts, &cu);
  cal.has_collective = 1;
  cal.coll_nranks = world;
  cal.coll_shared = shared;
  cal.coll_copy = world == 1;
  cal.coll_alpha_ns = cf.c0 > 0 ? cf.c0 * 1e9 : 0;
  cal.coll_bus_bw_bytes_per_s = cf.c1 > 0 ? 1.0 / cf.c1 : 0;
  cal.coll_fit_r2 = cf.r2;
  cal.coll_fit_rms_rel_residual = cf.rms_rel;
  if (!(cal.coll_bus_bw_bytes_per_s > 0))
    return ds_err_set(err, DS_EIO, "the all-reduce fit has a slope of %g s/B "
                      "(times do not grow with size); no calibration written", cf.c1);
  /* NCCL's per-call cost: the smallest all-reduce's time per call, issued
   * back to back; only where it is a collective across separate GPUs and
   * small enough that its bytes cost nothing. */
  const char *no_launch = world == 1 ? "one rank: a device copy, not NCCL's kernel"
                          : shared   ? "ranks share GPUs"
                          : pts[0].size_bytes > 4096 ? "the smallest size is over 4 KiB (-b)"
                                                     : NULL;
  if (!no_launch) {
    cal.has_nccl_launch = 1;
    cal.nccl_launch_ns = pts[0].time_us * 1e3;
  }

  /* the file */
  char date[32];
  utc_now(date, sizeof date);
  struct text h;
  h.len = 0;
  h.buf[0] = '\0';
  int nv = mm.nccl;
  add(&h, "# ddpreal calibrate, %s\n# command: %s\n", date, o->command);
  add(&h, "# gpu: %s (%d SMs), driver %s (CUDA %d.%d), runtime %d.%d, NCCL %d.%d.%d, %s "
      "(cublasGetVersion %d)\n", mm.gpu_name, mm.sms, mm.driver, mm.drv / 1000,
      mm.drv % 1000 / 10, mm.rt / 1000, mm.rt % 1000 / 10, nv / 10000, nv / 100 % 100,
      nv % 100, mm.cublas, mm.cublas_version);
  add(&h, "# peaks: %s %.1f TFLOP/s, memory %.0f GB/s (%s)\n", tf32 ? "tf32" : "fp32",
      peak / 1e12, mem_peak / 1e9,
      o->peak_tflops > 0 || o->mem_gbps > 0 ? "given on the command line"
      : row ? row->table_name : "?");
  if (row && !(o->peak_tflops > 0 || o->mem_gbps > 0))
    add(&h, "#   (table: topologies/gpus.yaml %s, dense rates from "
        "glennklockwood.com/garden/processors)\n", row->table_name);
  char schedule_shown[512]; /* the path on a comment line (ds_textout_comment_text) */
  add(&h, "# gemm: %zu shapes from %zu fwd/bwd ops of rank 0 in %s (cuBLAS SGEMM, edge "
      "cbrt(flops/2) <= %d, repeated to the flops), median of %d\n", c->n_shapes, c->n_ops,
      ds_textout_comment_text(o->schedule, schedule_shown, sizeof schedule_shown),
      DS_CUDA_GEMM_MAX_DIM, o->iters);
  for (int math = 0; math < 1 + mm.have_tf32; math++) {
    const struct linfit *ff = &mm.free_fit[math], *fx = &mm.fixed_fit[math];
    add(&h, "#   %s: free fit t = %.3gus + F/(%.4g TFLOP/s), R2 %.5f, rms rel residual "
        "%.3f, max %.3f\n", math ? "tf32" : "fp32", ff->c0 * 1e6, 1e-12 / ff->c1, ff->r2,
        ff->rms_rel, ff->max_rel);
    add(&h, "#   %s: overhead fixed at the launch time: F/(%.4g TFLOP/s), R2 %.5f, rms rel "
        "residual %.3f, max %.3f\n", math ? "tf32" : "fp32", 1e-12 / fx->c1, fx->r2,
        fx->rms_rel, fx->max_rel);
  }
  add(&h, "# flops_efficiency = %.4g TFLOP/s (%s, %s) / %.1f peak%s\n", rate / 1e12,
      tf32 ? "tf32" : "fp32", free_ok ? "free fit" : "overhead fixed at the launch time",
      peak / 1e12, rate > peak ? " (above the peak: clamped to 1; check the peak)" : "");
  add(&h, "# mem_efficiency = %.0f GB/s (2*S/t, 512 MiB: cudaMemcpy D2D %.0f, copy kernel "
      "%.0f) / %.0f peak\n", mem_bw / 1e9, mm.memcpy_bw / 1e9, mm.kernel_bw / 1e9,
      mem_peak / 1e9);
  add(&h, "# kernel_overhead = %s: %.3f us (launch floor: %d empty kernels back to back "
      "%.3f us each, one between two events %.3f us)\n",
      free_ok ? "the free fit's intercept" : "the launch time", used->c0 * 1e6, LAUNCHES,
      mm.launch_ns / 1e3, mm.launch_pair_ns / 1e3);
  add(&h, "# check: the schedule's %zu GEMM ops of one iteration: measured %.3f ms, this "
      "model %.3f ms (%+.1f%%)\n", c->n_ops, sum_meas * 1e3, sum_model * 1e3,
      100.0 * (sum_model - sum_meas) / sum_meas);
  for (int math = 0; math < 1 + mm.have_tf32; math++) {
    const char *mname = math ? "tf32" : "fp32";
    if (!(peak_of[math] > 0)) {
      add(&h, "# efficiency %s: no %s peak known (the table's, or --peak-tflops with "
          "--fp32-math %s): not written\n", mname, mname, mname);
      continue;
    }
    add(&h, "# efficiency.matmul_%s = %.4g TFLOP/s (the GEMM fit above) / %.1f peak\n", mname,
        mm_rate[math] / 1e12, peak_of[math] / 1e12);
    add(&h, "# efficiency.conv_%s = %.4g TFLOP/s / %.1f peak: convolution proxy, SGEMMs shaped "
        "as ResNet-50's 3x3 convolutions at batch 32 (MxNxK", mname, conv_rate[math] / 1e12,
        peak_of[math] / 1e12);
    for (size_t i = 0; i < N_CONV; i++)
      add(&h, "%s%dx%dx%d", i ? ", " : " ", conv_shapes[i][0], conv_shapes[i][1],
          conv_shapes[i][2]);
    add(&h, "), %.4g GFLOP in %.3f ms\n", mm.conv_flops / 1e9, mm.conv_t_s[math] * 1e3);
  }
  if (cal.eff[EFF_UNALIGNED] > 0)
    add(&h, "# efficiency.matmul_unaligned_half = %.4g TFLOP/s / %.1f peak: cublasGemmEx %s "
        "%dx%dx%d (N unaligned) %.3f ms; N = %d (aligned) %.3f ms, %.4g TFLOP/s (%.2fx)\n",
        un_rate / 1e12, half_peak / 1e12, mm.unaligned_bf16 ? "bf16" : "fp16", UNALIGNED_M,
        UNALIGNED_N, UNALIGNED_K, mm.unaligned_t_s[0] * 1e3, ALIGNED_N,
        mm.unaligned_t_s[1] * 1e3, al_rate / 1e12, al_rate / un_rate);
  else
    add(&h, "# efficiency.matmul_unaligned_half: not written (%s)\n",
        !(half_peak > 0) ? "no half peak known for this GPU" : "cuBLAS lacks cublasGemmEx");
  if (cal.has_interference)
    add(&h, "# nccl.interference: SGEMM %d^3 (FP32 math) %.3f ms alone, %.3f ms beside a copy "
        "kernel of %d blocks x %d threads: slowdown %.4f%s; the mechanism's %d/(%d-%d) = %.4f; "
        "ddpsim's comm_interference = max(0, %.4f/%.4f - 1) = %.4f\n", INTERF_EDGE,
        mm.interf_alone_s * 1e3, mm.interf_beside_s * 1e3, mm.interf_blocks, INTERF_THREADS,
        slowdown, slowdown < 1 ? " (below 1: written as 1)" : "", mm.sms, mm.sms,
        mm.interf_blocks, cal.interference_predicted, cal.interference_slowdown,
        cal.interference_predicted,
        fmax(0.0, cal.interference_slowdown / cal.interference_predicted - 1));
  if (cal.has_nccl_launch)
    add(&h, "# nccl.launch = %.3f us: the %zu-byte all-reduce per call, %d calls back to back on "
        "%d ranks (includes its own latency, which NCCL's model also charges)\n",
        pts[0].time_us, pts[0].size_bytes, 20, world);
  else
    add(&h, "# nccl.launch: not written (%s)\n", no_launch);
  add(&h, "# collective: allreduce on %d rank%s (forked), %zu sizes %zu..%zu B, fit "
      "t = alpha + S*%.4g/bus_bw weighted by 1/t^2%s%s\n", world, world == 1 ? "" : "s",
      n_pts, pts[0].size_bytes, pts[n_pts - 1].size_bytes, f,
      world == 1 ? "; ONE RANK: a device copy, not a collective (copy: true)" : "",
      shared ? "; RANKS SHARE GPUS: not representative of separate GPUs (shared: true)" : "");
  if (cf.c0 < 0) add(&h, "#   (fitted alpha %.3g us < 0, written as 0)\n", cf.c0 * 1e6);
  add(&h, "#   weighted fit: alpha %.3f us, bus_bw %.2f GB/s, R2 %.4f, rms rel residual %.3f, "
      "max %.3f\n", cf.c0 * 1e6, cf.c1 > 0 ? 1e-9 / cf.c1 : 0, cf.r2, cf.rms_rel, cf.max_rel);
  add(&h, "#   unweighted fit (gsl_fit_linear, for comparison; large sizes dominate): alpha "
      "%.3f us, bus_bw %.2f GB/s, R2 %.4f, rms rel residual %.3f\n", cu.c0 * 1e6,
      cu.c1 > 0 ? 1e-9 / cu.c1 : 0, cu.r2, cu.rms_rel);
  struct ds_atomic_file af;
  memset(&af, 0, sizeof af);
  DS_CHECK(ds_atomic_file_open(o->out, &af, err));
  if (ds_calib_write(af.fp, &cal, h.buf) != 0) {
    ds_atomic_file_abort(&af);
    return ds_err_set(err, DS_EIO, "writing %s failed", o->out);
  }
  DS_CHECK(ds_atomic_file_commit(&af, err));

  /* the summary */
  printf("%s", h.buf);
  printf("\n# per GEMM shape: time per op (median), achieved TFLOP/s, residual of the "
         "written model\n");
  printf("#%14s %6s %5s %4s %11s %9s %11s %9s %9s\n", "flops", "edge", "reps", "ops",
         "fp32(us)", "TFLOP/s", "tf32(us)", "TFLOP/s", "resid");
  for (size_t i = 0; i < n; i++) {
    const struct shape *s = &c->shapes[i];
    double model = used->c0 + used->c1 * s->flops, t = s->t_s[tf32];
    printf(" %14.4g %6zu %5ld %4d %11.2f %9.2f %11.2f %9.2f %+8.1f%%\n", s->flops, s->d,
           s->reps, s->n_ops, s->t_s[0] * 1e6, s->flops / s->t_s[0] / 1e12,
           s->t_s[1] * 1e6, s->t_s[1] > 0 ? s->flops / s->t_s[1] / 1e12 : 0,
           100.0 * (model - t) / t);
  }
  printf("\n# all-reduce: measured, fit alpha %.3f us, bus_bw %.2f GB/s, R2 %.5f, rms rel "
         "residual %.3f, max %.3f\n", cal.coll_alpha_ns / 1e3,
         cal.coll_bus_bw_bytes_per_s / 1e9, cf.r2, cf.rms_rel, cf.max_rel);
  printf("#%13s %11s %11s %9s\n", "size(B)", "time(us)", "fit(us)", "resid");
  for (size_t i = 0; i < n_pts; i++) {
    double fit = cf.c0 + cf.c1 * cx[i];
    printf(" %13zu %11.2f %11.2f %+8.1f%%\n", pts[i].size_bytes, cy[i] * 1e6, fit * 1e6,
           100.0 * (fit - cy[i]) / cy[i]);
  }
  printf("\ncalibration written to %s:\n", o->out);
  ds_calib_write(stdout, &cal, NULL);
  return DS_OK;
}

static ds_status cal_rank(struct ds_launcher *l, void *arg, struct ds_err *err) {
  struct cal_ctx *c = ((struct rank_arg *)arg)->c;
  const struct ds_calibrate_args *o = c->o;
  int32_t rank = l->rank;
  int gpu = 0, gpu_count = 0;
  struct compute_meas m;
  memset(&m, 0, sizeof m);
  struct ds_coll_point pts[MAX_POINTS];
  size_t n_pts = 0;
  DS_CHECK(ds__cuda_pick_gpu(rank, l->world, rank, o->share_gpus, 1,
                             "calibrate measures a GPU and needs one (no --device cpu)", &gpu,
                             &gpu_count, err));
  if (rank == 0) {
    ds_status st = measure_compute(c, gpu, &m, rank, err);
    /* the others wait at the barrier: a failure here ends them (fork
     * launcher), with this rank's message */
    if (st != DS_OK) return st;
  }
  DS_CHECK(l->barrier(l, err));
  DS_CHECK(ds__coll_allreduce_sweep(l, gpu, gpu_count, o->min_bytes, o->max_bytes, o->factor,
                                    20, 10, pts, MAX_POINTS, &n_pts, err));
  if (rank != 0) return DS_OK;
  l->finished = 1;
  return finish(c, &m, l->world, gpu_count, pts, n_pts, err);
}

extern "C" int ds_calibrate_main(int argc, char **argv) {
  struct ds_calibrate_args o;
  struct ds_err err;
  ds_err_clear(&err);
  struct cal_ctx c;
  memset(&c, 0, sizeof c);
  c.o = &o;
  struct ds_schedule *s = NULL;
  ds_status st = ds_calibrate_args_parse(argc, argv, &o, &err);
  if (st == DS_OK && o.help) {
    fputs(ds_calibrate_args_usage(), stdout);
    return 0;
  }
  if (st == DS_OK) {
    st = ds_schedule_read_csv(o.schedule, &s, &err);
    if (st == DS_EIO) st = DS_EINPUT; /* a schedule that cannot be read is bad input */
  }
  if (st == DS_OK) st = collect_shapes(s, &c, &err);
  if (st == DS_OK) {
    struct rank_arg a = {&c};
    st = ds_launch_fork(o.nranks, cal_rank, &a, &err);
  }
  free(c.shapes);
  ds_schedule_free(s);
  if (st != DS_OK) {
    fprintf(stderr, "ddpreal calibrate: %s\n", err.msg[0] ? err.msg : ds_status_message(st));
    return ds_status_exit_code(st);
  }
  return fflush(stdout) == 0 ? 0 : 1;
}
