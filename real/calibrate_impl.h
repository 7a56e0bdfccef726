/*
 * Internal to `ddpreal calibrate` (calibrate.h): what its files share.
 * calibrate.cu: the command, the schedule's GEMM shapes and the rank body;
 * calibrate_compute.cu: rank 0's measurements (launch floor, copy
 * bandwidth, interference) and their order; calibrate_gemm.cu: the cuBLAS
 * ones (the schedule's GEMMs, the convolution proxy, the unaligned half
 * GEMM); calibrate_write.cu: the peaks, the fits, the calibration file and
 * the summary. CUDA C++ (time_each is a template): for those .cu files
 * only, not for other modules.
 */
#ifndef DS_REAL_CALIBRATE_IMPL_H
#define DS_REAL_CALIBRATE_IMPL_H

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <stddef.h>
#include <stdint.h>

#include "base/status.h"
#include "calibrate_args.h"
#include "collective.h"
#include "dev_cuda.h"
#include "launch.h"

#define LAUNCHES 1000 /* the launch floor's empty kernels, back to back */
#define MAX_POINTS DS_CALIBRATE_MAX_POINTS /* the all-reduce sweep's sizes (calibrate_args.c) */
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

/* Everything rank 0 allocates for the compute measurements. */
struct cres {
  cudaStream_t s;
  cudaEvent_t *ev;
  int n_ev;
  float *a, *b, *c;
  struct blas bl;
};

/* GPT-2's LM head (tools/torch_models.py gpt2 at batch 8): 8192 tokens,
 * 768 features, a vocabulary of 50257, and the next multiple of 8. */
enum { UNALIGNED_M = 8192, UNALIGNED_K = 768, UNALIGNED_N = 50257, ALIGNED_N = 50264 };

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

/* calibrate_compute.cu: every measurement of rank 0 on GPU gpu, into m;
 * c's shapes get their times. */
ds_status ds__calibrate_measure_compute(struct cal_ctx *c, int gpu, struct compute_meas *m,
                                        int32_t rank, struct ds_err *err);
/* The median of v[0..n) (sorts v). */
double ds__calibrate_median(double *v, size_t n);

/* calibrate_gemm.cu: cuBLAS (opened by ds__calibrate_measure_gemms into
 * r->bl, closed by ds__calibrate_blas_close) and the GEMM measurements. */
void ds__calibrate_blas_close(struct blas *b);
ds_status ds__calibrate_measure_gemms(struct cal_ctx *c, struct cres *r, struct compute_meas *m,
                                      int32_t rank, struct ds_err *err);
ds_status ds__calibrate_measure_conv_proxy(struct cal_ctx *c, struct cres *r,
                                           struct compute_meas *m, int32_t rank,
                                           struct ds_err *err);
ds_status ds__calibrate_measure_unaligned(struct cal_ctx *c, struct cres *r,
                                          struct compute_meas *m, int gpu, int32_t rank,
                                          struct ds_err *err);
/* One column-major SGEMM c[m x n] = a[m x k] b[k x n] on r's stream. */
ds_status ds__calibrate_sgemm(struct cres *r, int m, int n, int k, const float *a,
                              const float *b, float *c, int32_t rank, struct ds_err *err);
/* cuBLAS's math mode: TF32 tensor ops (tf32) or the default (FP32). */
ds_status ds__calibrate_set_math(struct cres *r, int tf32, int32_t rank, struct ds_err *err);

/* calibrate_write.cu: on rank 0 after the sweep, the fits of m and of the
 * all-reduce points pts[0..n_pts), the calibration file (atomically) and
 * the summary on stdout. */
ds_status ds__calibrate_finish(struct cal_ctx *c, const struct compute_meas *m, int32_t world,
                               int gpu_count, const struct ds_coll_point *pts, size_t n_pts,
                               struct ds_err *err);

#endif /* DS_REAL_CALIBRATE_IMPL_H */
