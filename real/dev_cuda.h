/*
 * Pieces of the cuda device (dev_cuda.cu) that `ddpreal collective`
 * (collective.cu) shares: choosing the GPU, the NCCL communicator with a
 * bounded wait, the fill and check kernels, and the check macros that turn
 * a cudaError_t / ncclResult_t into a status whose message names the rank
 * and the call. Internal to real/ (ds__ names); the device itself is
 * ds_device_cuda, declared in device.h.
 *
 * Every wait on the GPU or on NCCL is bounded (ds_real_timeout_s, options.h, env
 * DDPREAL_TIMEOUT_S, default 300 s) and watches ncclCommGetAsyncError, so a
 * rank whose peer died returns an error instead of hanging.
 */
#ifndef DS_DEV_CUDA_H
#define DS_DEV_CUDA_H

#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime_api.h>
#include <nccl.h>

#include "base/status.h"
#include "launch.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The largest GEMM edge of gemm mode (dev_cuda.cu) and of the calibration's
 * GEMMs (calibrate.cu): three 8192^2 float matrices are 768 MiB. Bigger
 * ops run the GEMM several times (reps) to reach their flops. */
#define DS_CUDA_GEMM_MAX_DIM 8192

/* Status for a failed CUDA runtime call: DS_EIO, "rank R: CALL failed:
 * cudaErrorX (text)". */
ds_status ds__cuda_fail(struct ds_err *err, int32_t rank, const char *call, cudaError_t e);
/* Status for a failed NCCL call: DS_EIO, with NCCL's last error when comm
 * is not NULL, and a hint to rerun with NCCL_DEBUG=WARN. */
ds_status ds__nccl_fail(struct ds_err *err, int32_t rank, const char *call,
                        ncclResult_t res, ncclComm_t comm);

/* Both need `rank` (int32_t) and `err` (struct ds_err *) in scope; they
 * return from the calling function. */
#define DS_CUDA_CHECK(call)                                        \
  do {                                                             \
    cudaError_t ds__e_ = (call);                                   \
    if (ds__e_ != cudaSuccess) return ds__cuda_fail(err, rank, #call, ds__e_); \
  } while (0)
/* A non-blocking communicator may answer ncclInProgress; the call has then
 * been accepted and ds__nccl_settle waits until it is through. */
#define DS_NCCL_CHECK(comm, call)                                   \
  do {                                                              \
    ncclResult_t ds__r_ = (call);                                   \
    if (ds__r_ == ncclInProgress)                                   \
      ds__r_ = ds__nccl_settle((comm), rank, #call, err);           \
    if (ds__r_ != ncclSuccess) return ds__nccl_fail(err, rank, #call, ds__r_, (comm)); \
  } while (0)

/* Picks the GPU of a rank (ordinal % GPU count; the ordinal is the rank's
 * place among the local_world ranks of its node) and makes it current.
 * Ordinals past the GPU count need shared (--share-gpus), else DS_EUSAGE;
 * when local_world > GPU count and shared, sets NCCL_HOSTID to a per-rank value
 * (NCCL 2.28 refuses two ranks of one host on one GPU; distinct host ids
 * make it connect them through its network transport, over loopback when
 * fork_local) and NCCL_MULTI_RANK_GPU_ENABLE=1 (NCCL >= 2.30), and the
 * rank whose ordinal is the GPU count prints once to stderr that shared
 * GPUs do not time like separate ones. Must run before any NCCL call.
 * no_gpu_hint ends the message when no GPU is found: the way out for the
 * caller's command (the replay's --device cpu; calibrate has none). */
ds_status ds__cuda_pick_gpu(int32_t rank, int32_t local_world, int32_t ordinal, int shared,
                            int fork_local, const char *no_gpu_hint, int *gpu, int *gpu_count,
                            struct ds_err *err);

/* Creates the communicator of world ranks: rank 0's ncclGetUniqueId is
 * broadcast through l, every rank calls ncclCommInitRankConfig on a
 * non-blocking config and waits for it (bounded). On failure the
 * communicator is aborted and *out is NULL. */
ds_status ds__nccl_comm_init(struct ds_launcher *l, int32_t rank, int32_t world,
                             ncclComm_t *out, struct ds_err *err);

/* Polls ncclCommGetAsyncError until the communicator leaves ncclInProgress
 * (bounded); returns its state (ncclSystemError on timeout, with a message
 * in err). */
ncclResult_t ds__nccl_settle(ncclComm_t comm, int32_t rank, const char *call,
                             struct ds_err *err);

/* Waits until the n events have completed, polling them and the
 * communicator's async error (comm may be NULL). `what` names the wait in
 * messages. */
ds_status ds__cuda_wait_events(const cudaEvent_t *ev, size_t n, ncclComm_t comm,
                               int32_t rank, const char *what, struct ds_err *err);

/* The rank-dependent input: p[i] = (rank+1) + (i % 7). */
cudaError_t ds__cuda_fill_input(float *p, size_t n, int32_t rank, cudaStream_t s);
/* p[i] = v. */
cudaError_t ds__cuda_fill(float *p, size_t n, float v, cudaStream_t s);

/* What a collective's output must hold, element k of n. */
enum ds__cuda_expect {
  DS__EXPECT_SUM,     /* sum over ranks of the input at off + k */
  DS__EXPECT_RANK,    /* rank `src`'s input at off + k */
  DS__EXPECT_GATHERED /* rank k / per's input at k % per */
};
/* Adds the number of wrong elements of p[0..n) to *counter (device). */
cudaError_t ds__cuda_check(const float *p, size_t n, enum ds__cuda_expect how,
                           int32_t world, int32_t src, size_t off, size_t per,
                           unsigned long long *counter, cudaStream_t s);

#ifdef __cplusplus
}
#endif

#endif /* DS_DEV_CUDA_H */
