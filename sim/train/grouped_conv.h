#ifndef DDPSIM_SIM_TRAIN_GROUPED_CONV_H
#define DDPSIM_SIM_TRAIN_GROUPED_CONV_H

/*
 * Grouped convolutions at their measured kernel times.
 *
 * cuDNN runs a grouped 3x3 convolution with few channels per group (ResNeXt:
 * 32 groups of 4 to 64 channels) far below the dense convolutions' rate: on
 * an H200, ResNeXt-50's 3x3 layers run at 2-18 TFLOP/s of TF32 where dense
 * ones of the same channels run at 150-250 (bench/results/
 * gpu-2026-11-26b-h200/kernels.csv), and their time does not follow their
 * FLOPs or their bytes. No rate per FLOP or per byte describes them, so
 * ddpsim uses the kernels' measured times: a table (traces/gconv_table.h),
 * by default the built-in one measured on an H200 (grouped_conv_table.inc,
 * written by tools/gen_grouped_conv.py from bench/gpu_kernels.py's rows),
 * or a calibration file's `grouped_conv` section measured on the user's GPU
 * (--calib, traces/calib_file.h):
 *
 *   1. the entry of the same math mode nearest the layer's shape (channels
 *      per group, output positions, stride: an exact match where the model
 *      is ResNeXt);
 *   2. its cost in SM cycles per output element at each measured batch,
 *      interpolated in log2(batch) and held at the ends;
 *   3. times the layer's output elements, over the target GPU's SMs x boost
 *      clock (on the GPU the table was measured on, the measured times come
 *      back). A calibration file's table (on_target) was measured on the
 *      simulated machine: its own SMs and clock are the target's, so its
 *      times apply unscaled whatever GPU the topology names.
 *
 * Step 3 assumes a kernel whose rate scales with SMs and clock (Habitat's
 * "wave scaling" for kernels not bound by memory: Yu et al., USENIX ATC
 * 2021); cuDNN's kernels for other generations (V100's FP32, A100's TF32)
 * are assumed to do as well per SM cycle as Hopper's did, unless a
 * calibration file measured them. The compute model keeps the roofline as
 * a lower bound (compute_layer.c).
 */
#include <stdint.h>

#include "traces/gconv_table.h"

struct ds_gconv_shape {
  int64_t group_width;   /* input channels per group */
  int64_t out_channels;
  double out_positions;  /* output height x width */
  int32_t stride;
};

/* The built-in table: H200 measurements (grouped_conv_table.inc). */
extern const struct ds_gconv_table ds_gconv_builtin;

/* Nanoseconds of one pass of a grouped convolution of shape s at batch
 * (> 0) on a GPU of sms SMs at clock_hz (t's own when t->on_target,
 * whatever sms and clock_hz say), from table t's entry nearest s in mode
 * (steps 1-3 above); 0 when sms or clock_hz is unknown (and t not on
 * target) or t has no entry of mode. */
double ds_gconv_ns(const struct ds_gconv_table *t, enum ds_gconv_mode mode,
                   enum ds_conv_pass pass, const struct ds_gconv_shape *s, int64_t batch,
                   int32_t sms, double clock_hz);

/* The entry of t step 1 picks: its shape into *out; -1 when mode has
 * none. */
/* Whether t has an entry of mode (a calibration file's may lack some). */
int ds_gconv_has_mode(const struct ds_gconv_table *t, enum ds_gconv_mode mode);

int ds_gconv_nearest(const struct ds_gconv_table *t, enum ds_gconv_mode mode,
                     const struct ds_gconv_shape *s, struct ds_gconv_shape *out);

#endif
