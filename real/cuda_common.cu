/*
 * What the cuda device and `ddpreal collective` share (dev_cuda.h): error
 * messages naming the rank and the call, the choice of GPU, the NCCL
 * communicator on a non-blocking config, bounded waits, and the kernels
 * that fill inputs and count wrong results.
 *
 * Key invariant: no wait here is unbounded. Every poll loop watches the
 * clock (ds_real_timeout_s, options.h) and, where there is a communicator, its async
 * error, so a rank whose peer died returns an error naming itself and the
 * call instead of hanging in the driver.
 */
#include "dev_cuda.h"
#include "options.h"

#include <cuda_runtime.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void nap(void) {
  struct timespec ts = {0, 20000}; /* 20 us: short against any iteration */
  nanosleep(&ts, NULL);
}

extern "C" ds_status ds__cuda_fail(struct ds_err *err, int32_t rank, const char *call,
                                   cudaError_t e) {
  return ds_err_set(err, DS_EIO, "rank %d: %s failed: %s (%s)", rank, call,
                    cudaGetErrorName(e), cudaGetErrorString(e));
}

extern "C" ds_status ds__nccl_fail(struct ds_err *err, int32_t rank, const char *call,
                                   ncclResult_t res, ncclComm_t comm) {
  /* the settle/wait helpers may have written a more precise message */
  if (err && err->status != DS_OK && err->msg[0]) return err->status;
  const char *last = comm ? ncclGetLastError(comm) : "";
  return ds_err_set(err, DS_EIO, "rank %d: %s failed: %s%s%s (rerun with NCCL_DEBUG=WARN "
                    "for NCCL's own account)", rank, call, ncclGetErrorString(res),
                    last && *last ? ": " : "", last ? last : "");
}

extern "C" ncclResult_t ds__nccl_settle(ncclComm_t comm, int32_t rank, const char *call,
                                        struct ds_err *err) {
  double deadline = now_s() + ds_real_timeout_s();
  ncclResult_t state = ncclInProgress;
  for (;;) {
    ncclResult_t r = ncclCommGetAsyncError(comm, &state);
    if (r != ncclSuccess) return r;
    if (state != ncclInProgress) return state;
    if (now_s() > deadline) {
      ds_err_set(err, DS_EIO, "rank %d: %s still in progress after %.0f s (a peer rank "
                 "hung or died; DDPREAL_TIMEOUT_S sets the limit)", rank, call,
                 ds_real_timeout_s());
      return ncclSystemError;
    }
    nap();
  }
}

extern "C" ds_status ds__cuda_wait_events(const cudaEvent_t *ev, size_t n, ncclComm_t comm,
                                          int32_t rank, const char *what,
                                          struct ds_err *err) {
  double deadline = now_s() + ds_real_timeout_s();
  size_t done = 0;
  while (done < n) {
    cudaError_t e = cudaEventQuery(ev[done]);
    if (e == cudaSuccess) {
      done++;
      continue;
    }
    if (e != cudaErrorNotReady) return ds__cuda_fail(err, rank, what, e);
    if (comm) {
      ncclResult_t state = ncclSuccess;
      ncclResult_t r = ncclCommGetAsyncError(comm, &state);
      if (r != ncclSuccess) return ds__nccl_fail(err, rank, "ncclCommGetAsyncError", r, comm);
      if (state != ncclSuccess && state != ncclInProgress)
        return ds__nccl_fail(err, rank, what, state, comm);
    }
    if (now_s() > deadline)
      return ds_err_set(err, DS_EIO, "rank %d: %s: the GPU work did not finish within "
                        "%.0f s (a peer rank hung or died; DDPREAL_TIMEOUT_S sets the "
                        "limit)", rank, what, ds_real_timeout_s());
    nap();
  }
  return DS_OK;
}

extern "C" ds_status ds__cuda_pick_gpu(int32_t rank, int32_t local_world, int32_t ordinal,
                                       int shared, int fork_local, const char *no_gpu_hint,
                                       int *gpu, int *gpu_count, struct ds_err *err) {
  int count = 0;
  /* No driver (cudaErrorInsufficientDriver), no device or none visible:
   * say so in those words and name the way out (issue #15, defect 13). */
  cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess || count < 1)
    return ds_err_set(err, DS_EIO, "rank %d: no GPU found (CUDA: %s; check nvidia-smi and "
                      "CUDA_VISIBLE_DEVICES); %s", rank,
                      e != cudaSuccess ? cudaGetErrorString(e) : "no device visible",
                      no_gpu_hint);
  if (ordinal >= count && !shared)
    return ds_err_set(err, DS_EUSAGE, "rank %d: %d ranks on this node but %d GPU%s visible; "
                      "pass --share-gpus to put several ranks on one GPU", rank, local_world, count,
                      count == 1 ? "" : "s");
  if (shared && local_world > count) {
    /* One host id per rank: NCCL 2.28 refuses two ranks of one host on one
     * GPU ("Duplicate GPU detected"); NCCL 2.30 has a switch for it. */
    char id[256];
    const char *base = getenv("NCCL_HOSTID");
    snprintf(id, sizeof id, "%s%sddpreal-rank-%d", base ? base : "", base ? "-" : "", rank);
    setenv("NCCL_HOSTID", id, 1);
    setenv("NCCL_MULTI_RANK_GPU_ENABLE", "1", 0);
    /* the "hosts" then talk through NCCL's network transport: on one node
     * that is loopback, which NCCL's socket transport skips by default */
    if (fork_local) setenv("NCCL_SOCKET_IFNAME", "lo", 0);
    if (ordinal == count)
      fprintf(stderr, "ddpreal: note: %d ranks share %d GPU%s (--share-gpus): their "
              "timings do not represent separate GPUs, and NCCL connects them through its "
              "network transport\n", local_world, count, count == 1 ? "" : "s");
  }
  *gpu = ordinal % count;
  *gpu_count = count;
  DS_CUDA_CHECK(cudaSetDevice(*gpu));
  return DS_OK;
}

extern "C" ds_status ds__nccl_comm_init(struct ds_launcher *l, int32_t rank, int32_t world,
                                        ncclComm_t *out, struct ds_err *err) {
  *out = NULL;
  ncclUniqueId id;
  memset(&id, 0, sizeof id);
  if (rank == 0) {
    ncclResult_t r = ncclGetUniqueId(&id);
    if (r != ncclSuccess) return ds__nccl_fail(err, rank, "ncclGetUniqueId", r, NULL);
  }
  DS_CHECK(l->broadcast(l, &id, sizeof id, 0, err));
  ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
  cfg.blocking = 0;
  ncclComm_t comm = NULL;
  ncclResult_t r = ncclCommInitRankConfig(&comm, world, id, rank, &cfg);
  if (r == ncclInProgress) r = ds__nccl_settle(comm, rank, "ncclCommInitRankConfig", err);
  if (r != ncclSuccess) {
    ds_status st = ds__nccl_fail(err, rank, "ncclCommInitRankConfig", r, comm);
    if (comm) ncclCommAbort(comm);
    return st;
  }
  *out = comm;
  return DS_OK;
}

/* ---- kernels ------------------------------------------------------------ */

#define THREADS 256

static unsigned grid_for(size_t n) {
  size_t b = (n + THREADS - 1) / THREADS;
  return (unsigned)(b < 4096 ? (b ? b : 1) : 4096);
}

__device__ static float in_value(int32_t rank, size_t i) {
  return (float)(rank + 1) + (float)(i % 7);
}

__global__ static void fill_input_kernel(float *p, size_t n, int32_t rank) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
       i += (size_t)gridDim.x * blockDim.x)
    p[i] = in_value(rank, i);
}

__global__ static void fill_kernel(float *p, size_t n, float v) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
       i += (size_t)gridDim.x * blockDim.x)
    p[i] = v;
}

__global__ static void check_kernel(const float *p, size_t n, int how, int32_t world,
                                    int32_t src, size_t off, size_t per,
                                    unsigned long long *counter) {
  unsigned long long wrong = 0;
  for (size_t k = blockIdx.x * (size_t)blockDim.x + threadIdx.x; k < n;
       k += (size_t)gridDim.x * blockDim.x) {
    float want;
    if (how == DS__EXPECT_SUM)
      want = (float)world * (float)(world + 1) / 2.0f + (float)world * (float)((off + k) % 7);
    else if (how == DS__EXPECT_RANK)
      want = in_value(src, off + k);
    else
      want = in_value((int32_t)(k / per), k % per);
    wrong += p[k] != want;
  }
  if (wrong) atomicAdd(counter, wrong);
}

extern "C" cudaError_t ds__cuda_fill_input(float *p, size_t n, int32_t rank, cudaStream_t s) {
  if (!n) return cudaSuccess;
  fill_input_kernel<<<grid_for(n), THREADS, 0, s>>>(p, n, rank);
  return cudaGetLastError();
}

extern "C" cudaError_t ds__cuda_fill(float *p, size_t n, float v, cudaStream_t s) {
  if (!n) return cudaSuccess;
  fill_kernel<<<grid_for(n), THREADS, 0, s>>>(p, n, v);
  return cudaGetLastError();
}

extern "C" cudaError_t ds__cuda_check(const float *p, size_t n, enum ds__cuda_expect how,
                                      int32_t world, int32_t src, size_t off, size_t per,
                                      unsigned long long *counter, cudaStream_t s) {
  if (!n) return cudaSuccess;
  check_kernel<<<grid_for(n), THREADS, 0, s>>>(p, n, (int)how, world, src, off,
                                               per ? per : 1, counter);
  return cudaGetLastError();
}
