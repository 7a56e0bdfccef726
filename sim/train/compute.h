/*
 * The compute model: a roofline per kernel.
 *
 *   t = max(flops / (peak(dtype) * flops_efficiency),
 *           bytes / (mem_bw * mem_efficiency)) + kernel_overhead
 *
 * peak(dtype) is the GPU table's dense tensor rate for fp16/bf16, TF32 for
 * fp32 when the topology says fp32_math: tf32 (cuDNN's default for
 * convolutions), vector FP32 otherwise. The efficiency factors and the
 * overhead come from the topology file's `compute` section, so every
 * predicted duration can be recomputed by hand from the files.
 */
#ifndef DS_COMPUTE_H
#define DS_COMPUTE_H

#include <stdint.h>

#include "base/status.h"
#include "sim/train/model.h"
#include "sim/net/topo.h"

#ifdef __cplusplus
extern "C" {
#endif

enum ds_dtype { DS_DTYPE_FP32, DS_DTYPE_FP16, DS_DTYPE_BF16 };

const char *ds_dtype_name(enum ds_dtype dtype);
/* Returns 0 and sets *out for "fp32", "fp16", "bf16"; -1 otherwise. */
int ds_dtype_parse(const char *name, enum ds_dtype *out);
int ds_dtype_bytes(enum ds_dtype dtype);

struct ds_compute {
  enum ds_dtype dtype;
  double peak_flops_per_s; /* for dtype, before efficiency */
  double mem_bw_bytes_per_s;
  struct ds_compute_params params;
};

/* Chooses the peak rate of the topology's GPU for dtype; DS_EUSAGE when the
 * GPU has no such math (bf16 on V100). */
ds_status ds_compute_init(const struct ds_topo *topo, enum ds_dtype dtype,
                          struct ds_compute *out, struct ds_err *err);

/* Roofline duration of one kernel, in nanoseconds (not rounded). */
double ds_compute_kernel_ns(const struct ds_compute *c, double flops,
                            double bytes);

/* Forward of one layer for `batch` samples: FLOPs and activation traffic
 * scale with the batch; the weights are read once. */
double ds_compute_fwd_ns(const struct ds_compute *c, const struct ds_layer *l,
                         int64_t batch);
/* Backward: bwd_flops, twice the forward traffic (read the saved
 * activations and output gradient, write the input gradient), the weights
 * read once and their gradients written once. */
double ds_compute_bwd_ns(const struct ds_compute *c, const struct ds_layer *l,
                         int64_t batch);
/* Optimizer step over every parameter: memory bound; SGD with momentum
 * reads parameter, gradient and momentum and writes parameter and momentum
 * (5 tensors); Adam reads 4 and writes 3 (7 tensors). */
double ds_compute_step_ns(const struct ds_compute *c,
                          const struct ds_model *model);
/* The loss and its gradient over `samples` outputs of the model: one
 * memory-bound kernel reading the outputs (output_bytes per sample, in
 * fp32, scaled to the dtype) and writing their gradient; *bytes receives
 * what it moves. Every strategy charges its loss with this, so one GPU
 * costs the same under each. */
double ds_compute_loss_ns(const struct ds_compute *c, const struct ds_model *model,
                          double samples, double *bytes);
/* Bytes moved by the optimizer step (for the schedule's bytes column). */
double ds_compute_step_bytes(const struct ds_compute *c,
                             const struct ds_model *model);

#ifdef __cplusplus
}
#endif

#endif /* DS_COMPUTE_H */
