/*
 * `ddpreal calibrate`'s cuBLAS measurements on rank 0 (calibrate.cu's
 * header says what each measures): cuBLAS loaded with dlopen, the
 * schedule's GEMM shapes in FP32 and TF32 math, the convolution proxy and
 * the unaligned half-precision GEMM of GPT-2's LM head.
 */
#include "calibrate_impl.h"

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

void ds__calibrate_blas_close(struct blas *b) {
  if (b->h) b->destroy(b->h);
  if (b->lib) dlclose(b->lib);
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

ds_status ds__calibrate_measure_gemms(struct cal_ctx *c, struct cres *r, struct compute_meas *m,
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
      if (st == DS_OK) sh->t_s[math] = ds__calibrate_median(t, (size_t)iters);
    }
  }
  free(t);
  return st;
}

ds_status ds__calibrate_sgemm(struct cres *r, int m, int n, int k, const float *a,
                              const float *b, float *c, int32_t rank, struct ds_err *err) {
  const float one = 1.0f, zero = 0.0f;
  cublasStatus_t st = r->bl.sgemm(r->bl.h, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &one, a, m, b, k,
                                  &zero, c, m);
  if (st != CUBLAS_STATUS_SUCCESS)
    return ds_err_set(err, DS_EIO, "rank %d: cublasSgemm (%dx%dx%d) failed: status %d", rank, m,
                      n, k, (int)st);
  return DS_OK;
}

ds_status ds__calibrate_set_math(struct cres *r, int tf32, int32_t rank, struct ds_err *err) {
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
ds_status ds__calibrate_measure_conv_proxy(struct cal_ctx *c, struct cres *r,
                                           struct compute_meas *m, int32_t rank,
                                           struct ds_err *err) {
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
      DS_CHECK(ds__calibrate_set_math(r, math, rank, err));
      m->conv_t_s[math] = 0;
      for (size_t i = 0; i < N_CONV; i++) {
        int M = conv_shapes[i][0], N = conv_shapes[i][1], K = conv_shapes[i][2];
        DS_CHECK(ds__calibrate_sgemm(r, M, N, K, a, b, cc, rank, err)); /* warm-up */
        DS_CHECK(time_each(r, iters, t, rank, err, [&]() {
          return ds__calibrate_sgemm(r, M, N, K, a, b, cc, rank, err);
        }));
        m->conv_t_s[math] += ds__calibrate_median(t, (size_t)iters);
      }
    }
    return ds__calibrate_set_math(r, 0, rank, err);
  }();
  free(t);
  cudaStreamSynchronize(r->s);
  cudaFree(a);
  cudaFree(b);
  cudaFree(cc);
  return st;
}

__global__ static void fill_u16(unsigned short *p, size_t n, unsigned short v) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
       i += (size_t)gridDim.x * blockDim.x)
    p[i] = v;
}

/* The LM-head GEMM with N unaligned and aligned (the header's list); a
 * cuBLAS without cublasGemmEx leaves the times 0 (nothing written). */
ds_status ds__calibrate_measure_unaligned(struct cal_ctx *c, struct cres *r,
                                          struct compute_meas *m, int gpu, int32_t rank,
                                          struct ds_err *err) {
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
      m->unaligned_t_s[aligned] = ds__calibrate_median(t, (size_t)iters);
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
