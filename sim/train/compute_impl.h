/*
 * Internal to the compute model (compute.h), whose parts share it:
 * compute.c, the maths and efficiencies each op class runs at
 * (ds_compute_init, ds_compute_set_tf32); compute_roofline.c, the roofline
 * and the rate of a layer's own kernel; compute_layer.c, a layer's forward
 * and backward passes; compute_conv.c, grouped convolutions' measured times
 * and cuDNN's layout transposes; compute_pool.c, max-pool's kernels;
 * compute_loss.c, the loss; compute_step.c, the optimizer step and its
 * companions. Not for other modules.
 */
#ifndef DS_COMPUTE_IMPL_H
#define DS_COMPUTE_IMPL_H

#include <stdint.h>

#include "sim/train/compute.h"
#include "sim/train/grouped_conv.h"

/* Model files give activation bytes in fp32. */
static inline double ds__compute_act_scale(const struct ds_compute *c) {
  return c->precision.act_bytes / 4.0;
}

/* compute_roofline.c: the time of the layer's own kernel in pass `backward`
 * at `batch`, and whether its FLOPs set it. */
double ds__compute_layer_kernel_ns(const struct ds_compute *c, const struct ds_layer *l,
                                   int backward, int64_t batch, double flops, double bytes,
                                   int *flop_bound);

/* compute_layer.c: a layer's forward and backward activation bytes at the
 * run's dtypes (max-pool's kernels take them). */
double ds__compute_fwd_act_bytes(const struct ds_compute *c, const struct ds_layer *l);
double ds__compute_bwd_act_bytes(const struct ds_compute *c, const struct ds_layer *l);

/* compute_conv.c: whether a grouped convolution's measured times price
 * layer l (recording the model where they cannot), and a pass's time from
 * them (0: the table has no entry of the run's mode). */
int ds__compute_grouped_conv_priced(const struct ds_compute *c, const struct ds_layer *l);
double ds__compute_grouped_pass_ns(const struct ds_compute *c, const struct ds_layer *l,
                                   enum ds_conv_pass pass, int64_t batch);

#endif /* DS_COMPUTE_IMPL_H */
