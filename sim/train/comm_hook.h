/*
 * DDP communication hooks (`--comm-hook`), as PyTorch implements them in
 * torch/distributed/algorithms/ddp_comm_hooks (docs/strategies.md,
 * "Communication hooks"):
 *
 *   fp16, bf16  default_hooks.fp16_compress_hook / bf16_compress_hook: in
 *               the hook, on the backward stream, the bucket is cast to the
 *               half type and divided by the world size; the all-reduce
 *               moves 2 bytes per element; a future callback (on a stream
 *               from CUDA's pool, which the schedule calls `copy`) casts the
 *               result back into the bucket.
 *   powersgd:R  powerSGD_hook.powerSGD_hook with PowerSGDState(
 *               matrix_approximation_rank=R) and its defaults
 *               (min_compression_rate 2, use_error_feedback and warm_start
 *               on, batch_tensors_with_same_shape off). Each tensor is
 *               viewed as n x m = shape[0] x rest with rank r = min(n, m, R)
 *               and compressed when (n + m) r * 2 < n m; per bucket the
 *               uncompressed tensors (biases, norms, small matrices) are
 *               all-reduced as one buffer, then P = M Q (n x r) and,
 *               after P is orthogonalised, Q = M^T P (m x r): three
 *               all-reduces of sum(numel), sum(n r), sum(m r) elements.
 *               Its decompress callback ends with torch.cuda.synchronize,
 *               which blocks the autograd thread: the next backward kernel
 *               is launched only when the bucket's hook has finished.
 *               Modelled after the warm-up (start_powerSGD_iter): the
 *               simulated iteration 0 runs the warm-up's vanilla
 *               all-reduce, every later one is the compressed steady state.
 *
 * Every compute op's duration is the roofline (compute.h) of its summed
 * FLOPs and bytes plus one kernel_overhead per further kernel it launches
 * (the hook's kernels are memory bound, so the sum of their rooflines is
 * the roofline of their sums).
 */
#ifndef DS_COMM_HOOK_H
#define DS_COMM_HOOK_H

#include <stddef.h>
#include <stdint.h>

#include "base/status.h"
#include "sim/train/compute.h"
#include "sim/train/model.h"

#ifdef __cplusplus
extern "C" {
#endif

enum ds_hook_kind { DS_HOOK_NONE, DS_HOOK_FP16, DS_HOOK_BF16, DS_HOOK_POWERSGD };

struct ds_comm_hook {
  enum ds_hook_kind kind;
  int32_t rank; /* PowerSGD's matrix_approximation_rank (>= 1) */
};

/* PowerSGDState's default min_compression_rate. */
#define DS_POWERSGD_MIN_COMPRESSION_RATE 2
/* Largest --comm-hook powersgd:RANK accepted. */
#define DS_POWERSGD_MAX_RANK 1024

/* Parses "none", "fp16", "bf16" or "powersgd:RANK" (1 <= RANK <= 1024);
 * otherwise DS_EUSAGE with a message naming flag and what was expected. */
ds_status ds_comm_hook_parse(const char *flag, const char *text, struct ds_comm_hook *out,
                             struct ds_err *err);
/* "none", "fp16", "bf16", "powersgd:4" into buf. */
void ds_comm_hook_name(const struct ds_comm_hook *h, char *buf, size_t cap);

/* PowerSGD needs every tensor's shape: DS_EUSAGE naming the model file and
 * the first tensor without one. DS_OK for the other hooks. */
ds_status ds_comm_hook_check_model(const struct ds_comm_hook *h, const struct ds_model *m,
                                   struct ds_err *err);

/* One parameter tensor as PowerSGD views it: n x m, rank r, compressed or
 * all-reduced as is. A tensor without a shape is viewed as 1-D (numel x 1,
 * never compressed); ds_comm_hook_check_model refuses such models. */
struct ds_psgd_tensor {
  int64_t n, m;
  int64_t r;
  int compress;
};
void ds_psgd_view(const struct ds_param *p, int32_t rank, struct ds_psgd_tensor *out);

/* Where a hook op runs. */
enum ds_hook_where {
  DS_HOOK_IN_BACKWARD, /* in the hook, on the backward (compute) stream */
  DS_HOOK_ALLREDUCE,   /* an all-reduce on the comm stream */
  DS_HOOK_CALLBACK     /* a future callback, on a pool stream (`copy`) */
};

struct ds_hook_op {
  enum ds_hook_where where;
  char what[24]; /* appended to "bucketB." in the op name; "" for the bucket's all-reduce */
  double bytes;  /* memory traffic, or the all-reduce's payload */
  double flops;  /* GEMM and orthogonalisation FLOPs; elementwise ones not counted */
  double dur_ns; /* compute ops; 0 for all-reduces (the ring prices them) */
  int32_t kernels;
};

#define DS_HOOK_MAX_OPS 12

/* One bucket's communication: ops in dependency order (each after the one
 * before). blocks_backward: the hook ends in torch.cuda.synchronize on the
 * autograd thread: the host waits for the device (ddp_reducer.c's psgd_sync op)
 * and the next compute-stream op for the last. */
struct ds_hook_plan {
  struct ds_hook_op op[DS_HOOK_MAX_OPS];
  int32_t n;
  int blocks_backward;
  /* dist.all_reduce calls the hook makes (each host_collective, ddp_reducer.c):
   * its all-reduce ops, and PowerSGD's of an empty buffer, left out of op
   * (they move nothing) but still called */
  int32_t pg_calls;
};

/* PowerSGD before start_powerSGD_iter runs default_hooks' _allreduce_fut,
 * whose division moved: PyTorch 1.9's divides in the future's callback,
 * after the all-reduce (`fut.then(div_by_group_size)`); later ones divide
 * first, in the hook, against fp16 overflow. */
enum ds_hook_warmup {
  DS_HOOK_NO_WARMUP = 0,      /* compressing (or no PowerSGD) */
  DS_HOOK_WARMUP_DIV_FIRST,   /* .div_(world_size), then the all-reduce */
  DS_HOOK_WARMUP_DIV_AFTER    /* the all-reduce, then .div_ in the callback (1.9) */
};

/* The plan of one bucket whose tensors are params[idx[0..count)] (indices
 * into m->params), gradients in c->dtype. warmup: PowerSGD's vanilla
 * all-reduce before start_powerSGD_iter, its division where that PyTorch
 * puts it. With no hook: the bucket's all-reduce alone. */
void ds_comm_hook_plan(const struct ds_comm_hook *h, const struct ds_model *m,
                       const struct ds_compute *c, const int32_t *idx, int32_t count,
                       enum ds_hook_warmup warmup, struct ds_hook_plan *out);

/* All-reduces per bucket (collective ids are (bucket index) * this + j). */
int32_t ds_comm_hook_colls_per_bucket(const struct ds_comm_hook *h);

struct ds_buckets;

/* Bytes per GPU the hook holds all iteration (memory.h's ds_ddp_memory.hook):
 *   fp16/bf16: none (their buffers come and go: ds_comm_hook_ready_bytes);
 *   powersgd:  error feedback (every bucket, in the gradient dtype) + every
 *              P and Q (warm start keeps them) + the largest bucket's
 *              clone and uncompressed buffer (one hook runs at a time). */
/* What the hook allocates as each bucket becomes ready, by the layer whose
 * backward makes it ready (bk's ready_layer), into per_layer[n_layers]
 * (zeroed here): fp16/bf16's compress hook
 * (default_hooks.py _compress_hook) makes the bucket's half copy
 * (`buffer.to(dtype)`, 2 bytes per element; none when the gradients already
 * are that type), all-reduces it and, in the future's `then`, copies the
 * result back into the bucket in place ("to reduce the peak memory",
 * pytorch#45968); nothing holds the copy once that callback has run, so it
 * is freed bucket by bucket as its all-reduce completes. The memory walk
 * counts every bucket made ready so far as still in flight, the bound when
 * communication lags behind backward. Other hooks: zeros. */
void ds_comm_hook_ready_bytes(const struct ds_comm_hook *h, const struct ds_model *m,
                              enum ds_dtype dtype, const struct ds_buckets *bk,
                              double *per_layer);
double ds_comm_hook_memory(const struct ds_comm_hook *h, const struct ds_model *m,
                           enum ds_dtype dtype, const struct ds_buckets *bk);

#ifdef __cplusplus
}
#endif

#endif /* DS_COMM_HOOK_H */
