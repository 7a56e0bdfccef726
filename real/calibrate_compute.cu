/*
 * `ddpreal calibrate`'s measurements on rank 0 (calibrate.cu's header says
 * what each measures): the order they run in and their shared stream and
 * events (ds__calibrate_measure_compute), the launch floor, the copy
 * bandwidth and the interference of a copy kernel with a GEMM, with their
 * kernels; the cuBLAS measurements are calibrate_gemm.cu's.
 */
#include "calibrate_impl.h"
#include "dev_cuda.h"

#include <cuda_runtime.h>
#include <nccl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define COPY_BYTES ((size_t)512 << 20)

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

double ds__calibrate_median(double *v, size_t n) {
  qsort(v, n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static void cres_free(struct cres *r) {
  if (r->s) cudaStreamSynchronize(r->s);
  for (int k = 0; k < r->n_ev; k++) cudaEventDestroy(r->ev[k]);
  free(r->ev);
  cudaFree(r->a);
  cudaFree(r->b);
  cudaFree(r->c);
  ds__calibrate_blas_close(&r->bl);
  if (r->s) cudaStreamDestroy(r->s);
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
    DS_CHECK(ds__calibrate_set_math(r, 0, rank, err));
    int d = (int)e;
    DS_CHECK(ds__calibrate_sgemm(r, d, d, d, a, b, cc, rank, err)); /* warm-up */
    DS_CHECK(time_each(r, INTERF_GEMMS, t, rank, err, [&]() {
      return ds__calibrate_sgemm(r, d, d, d, a, b, cc, rank, err);
    }));
    m->interf_alone_s = ds__calibrate_median(t, INTERF_GEMMS);
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
    DS_CHECK(ds__calibrate_sgemm(r, d, d, d, a, b, cc, rank, err));
    DS_CHECK(time_each(r, INTERF_GEMMS, t, rank, err, [&]() {
      return ds__calibrate_sgemm(r, d, d, d, a, b, cc, rank, err);
    }));
    DS_CHECK(ds__cuda_wait_events(&ce, 1, NULL, rank, "the interference copy", err));
    float last_end_ms = 0, copy_end_ms = 0;
    DS_CUDA_CHECK(cudaEventElapsedTime(&last_end_ms, cs, r->ev[2 * INTERF_GEMMS - 1]));
    DS_CUDA_CHECK(cudaEventElapsedTime(&copy_end_ms, cs, ce));
    if (copy_end_ms < last_end_ms)
      return ds_err_set(err, DS_EIO, "rank %d: the interference copy ended (%.3f ms) before "
                        "the last GEMM beside it (%.3f ms): the slowdown was not measured",
                        rank, (double)copy_end_ms, (double)last_end_ms);
    m->interf_beside_s = ds__calibrate_median(t, INTERF_GEMMS);
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
  if (st == DS_OK) m->launch_pair_ns = ds__calibrate_median(t, (size_t)n) * 1e9;
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
    m->memcpy_bw = 2.0 * (double)COPY_BYTES / ds__calibrate_median(t, reps);
    unsigned grid = (unsigned)m->sms * 8;
    copy_kernel<<<grid, 256, 0, r->s>>>((const float4 *)src, (float4 *)dst, n4);
    DS_CUDA_CHECK(cudaGetLastError());
    DS_CHECK(time_each(r, reps, t, rank, err, [&]() -> ds_status {
      copy_kernel<<<grid, 256, 0, r->s>>>((const float4 *)src, (float4 *)dst, n4);
      DS_CUDA_CHECK(cudaGetLastError());
      return DS_OK;
    }));
    m->kernel_bw = 2.0 * (double)COPY_BYTES / ds__calibrate_median(t, reps);
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

ds_status ds__calibrate_measure_compute(struct cal_ctx *c, int gpu, struct compute_meas *m,
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
  if (st == DS_OK) st = ds__calibrate_measure_gemms(c, &r, m, rank, err);
  if (st == DS_OK) st = ds__calibrate_measure_conv_proxy(c, &r, m, rank, err);
  if (st == DS_OK) st = measure_interference(c, &r, m, rank, err);
  if (st == DS_OK) st = ds__calibrate_measure_unaligned(c, &r, m, gpu, rank, err);
  cres_free(&r);
  return st;
}
