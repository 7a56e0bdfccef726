/*
 * Tests for grouped convolutions at their measured kernel times
 * (sim/train/grouped_conv.c, compute_conv.c ds_compute_grouped_conv): the
 * table's lookup (nearest shape, the same stride first), the scaling to a
 * GPU's SMs and clock, the interpolation over batch, how compute_layer.c
 * charges a grouped layer (at least its roofline, no layout transposes;
 * depthwise untouched), and the model file's groups/stride keys. The table's times are what
 * bench/gpu_kernels.py measured on the H200 (132 SMs at 1980 MHz); at that
 * GPU, shape and batch the lookup must give the measured time back.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "sim/net/topo.h"
#include "sim/train/compute.h"
#include "sim/train/grouped_conv.h"
#include "sim/train/model.h"
#include "tests/support.h"

#define H200_SMS 132
#define H200_HZ 1980e6

/* ResNeXt-50's layer1 3x3: 128 channels in 32 groups of 4, 56x56, stride
 * 1; measured at batch 32 in TF32: forward 151.4 us, input gradient 141.7,
 * weight gradient 253.2 (bench/results/gpu-2026-11-26b-h200/kernels.csv). */
static const struct ds_gconv_shape layer1 = {4, 128, 3136, 1};

/* The lookups on the built-in table. */
static double builtin_ns(enum ds_gconv_mode mode, enum ds_conv_pass pass,
                         const struct ds_gconv_shape *s, int64_t batch, int32_t sms, double hz) {
  return ds_gconv_ns(&ds_gconv_builtin, mode, pass, s, batch, sms, hz);
}

static int builtin_nearest(enum ds_gconv_mode mode, const struct ds_gconv_shape *s,
                           struct ds_gconv_shape *out) {
  return ds_gconv_nearest(&ds_gconv_builtin, mode, s, out);
}

Test(grouped_conv, the_measured_gpu_shape_and_batch_give_the_measured_time) {
  cr_assert_float_eq(builtin_ns(DS_GCONV_TF32, DS_CONV_FWD, &layer1, 32, H200_SMS, H200_HZ),
                     151400, 1e-6);
  cr_assert_float_eq(builtin_ns(DS_GCONV_TF32, DS_CONV_DGRAD, &layer1, 32, H200_SMS, H200_HZ),
                     141700, 1e-6);
  cr_assert_float_eq(builtin_ns(DS_GCONV_TF32, DS_CONV_WGRAD, &layer1, 32, H200_SMS, H200_HZ),
                     253200, 1e-6);
  /* FP32 without TF32 ran slower: 314.4 us forward */
  cr_assert_float_eq(builtin_ns(DS_GCONV_FP32, DS_CONV_FWD, &layer1, 32, H200_SMS, H200_HZ),
                     314400, 1e-6);
}

Test(grouped_conv, time_scales_with_sms_times_clock) {
  double h200 = builtin_ns(DS_GCONV_FP32, DS_CONV_WGRAD, &layer1, 32, H200_SMS, H200_HZ);
  cr_assert_float_eq(builtin_ns(DS_GCONV_FP32, DS_CONV_WGRAD, &layer1, 32, 66, 990e6),
                     4 * h200, 1e-6, "half the SMs at half the clock: 4x the time");
  cr_assert_eq(builtin_ns(DS_GCONV_FP32, DS_CONV_WGRAD, &layer1, 32, 0, H200_HZ), 0,
               "a GPU without its SMs: no measured time");
  cr_assert_eq(builtin_ns(DS_GCONV_FP32, DS_CONV_WGRAD, &layer1, 32, H200_SMS, 0), 0);
}

/* Cycles per output at 32 and 64, interpolated in log2(batch): batch 45 is
 * f = log2(45 / 32) of the way; outside 32..128 the end's cost per output
 * holds, so time is proportional to batch there. */
Test(grouped_conv, batches_between_measured_ones_interpolate_per_output) {
  double t32 = builtin_ns(DS_GCONV_HALF, DS_CONV_FWD, &layer1, 32, H200_SMS, H200_HZ);
  double t64 = builtin_ns(DS_GCONV_HALF, DS_CONV_FWD, &layer1, 64, H200_SMS, H200_HZ);
  double t128 = builtin_ns(DS_GCONV_HALF, DS_CONV_FWD, &layer1, 128, H200_SMS, H200_HZ);
  cr_assert(t32 > 0 && t64 > t32 && t128 > t64);
  double f = log2(45.0 / 32);
  double expect = ((1 - f) * t32 / 32 + f * t64 / 64) * 45;
  cr_assert_float_eq(builtin_ns(DS_GCONV_HALF, DS_CONV_FWD, &layer1, 45, H200_SMS, H200_HZ),
                     expect, 1e-6);
  cr_assert_float_eq(builtin_ns(DS_GCONV_HALF, DS_CONV_FWD, &layer1, 256, H200_SMS, H200_HZ),
                     2 * t128, 1e-6);
  cr_assert_float_eq(builtin_ns(DS_GCONV_HALF, DS_CONV_FWD, &layer1, 16, H200_SMS, H200_HZ),
                     t32 / 2, 1e-6);
}

Test(grouped_conv, a_shape_not_measured_takes_the_nearest_with_its_stride) {
  struct ds_gconv_shape got;
  /* 3000 positions, 4 per group: layer1's entry */
  struct ds_gconv_shape near = {4, 128, 3000, 1};
  cr_assert_eq(builtin_nearest(DS_GCONV_TF32, &near, &got), 0);
  cr_assert_eq(got.group_width, 4);
  cr_assert_float_eq(got.out_positions, 3136, 0);
  /* layer1's size with stride 2: a strided entry (8 per group at 28x28,
   * 3 doublings away) beats the same size unstrided */
  struct ds_gconv_shape strided = {4, 128, 3136, 2};
  cr_assert_eq(builtin_nearest(DS_GCONV_TF32, &strided, &got), 0);
  cr_assert_eq(got.stride, 2);
  /* time per output of the entry, times this layer's outputs */
  double entry = builtin_ns(DS_GCONV_TF32, DS_CONV_FWD, &layer1, 32, H200_SMS, H200_HZ);
  cr_assert_float_eq(builtin_ns(DS_GCONV_TF32, DS_CONV_FWD, &near, 32, H200_SMS, H200_HZ),
                     entry * 3000 / 3136, 1e-6);
  struct ds_gconv_shape wide = {4, 256, 3136, 1}; /* 64 groups: twice the outputs */
  cr_assert_float_eq(builtin_ns(DS_GCONV_TF32, DS_CONV_FWD, &wide, 32, H200_SMS, H200_HZ),
                     2 * entry, 1e-6);
}

/* A GPU like the H200 for the compute model: 132 SMs at 1980 MHz; a huge
 * FLOP rate and bandwidth so that the roofline is far below the table. */
static const char *gpus_text =
    "schema_version: 1\ngpus:\n"
    "  - name: GcGPU\n    # no arch\n    sms: 132\n    fp32: 1000TFLOPS\n    tf32: 8000TFLOPS\n"
    "    fp16: 16000TFLOPS\n    bf16: 16000TFLOPS\n    mem: 16GB\n    mem_bw: 1000000GBps\n"
    "    boost_mhz: 1980\n"
    "  - name: SlowGPU\n    # no arch\n    sms: 132\n    fp32: 1TFLOPS\n    tf32: 8TFLOPS\n"
    "    fp16: 16TFLOPS\n    bf16: 16TFLOPS\n    mem: 16GB\n    mem_bw: 100GBps\n"
    "    boost_mhz: 1980\n"
    "  - name: NoTf32GPU\n    # no arch\n    sms: 132\n    fp32: 1000TFLOPS\n"
    "    fp16: 16000TFLOPS\n    mem: 16GB\n    mem_bw: 1000000GBps\n    boost_mhz: 1980\n";

/* gc: layer1's grouped 3x3 per sample (fwd_flops 2 * 128 * 3136 * 4 * 9);
 * dw: a depthwise 3x3 (one channel per group); the first layer has no
 * input gradient (backward FLOPs = forward's). */
static const char *model_text =
    "schema_version: 1\nname: t\nsample: s\ndefault_batch: 1\noptimizer: sgd\nlayers:\n"
    "  - {name: stem, class: conv, fwd_flops: 1000, bwd_flops: 1000, fwd_bytes: 4000,"
    " act_bytes: 0, params: [{name: stem.weight, numel: 27, shape: [1, 3, 3, 3]}]}\n"
    "  - {name: gc, class: conv, fwd_flops: 28901376, bwd_flops: 57802752,"
    " fwd_bytes: 3211264, act_bytes: 0, groups: 32, stride: 1,"
    " params: [{name: gc.weight, numel: 4608, shape: [128, 4, 3, 3]}]}\n"
    "  - {name: dw, class: conv, fwd_flops: 7225344, bwd_flops: 14450688,"
    " fwd_bytes: 3211264, act_bytes: 0, groups: 128, stride: 1,"
    " params: [{name: dw.weight, numel: 1152, shape: [128, 1, 3, 3]}]}\n";

static void setup(struct ds_test_compute *f, const char *gpu) {
  ds_test_compute_setup(f, gpus_text, gpu, 1, 0, model_text, DS_DTYPE_FP32, DS_AMP_NONE);
}

Test(grouped_conv, the_model_file_gives_the_weights_geometry) {
  struct ds_test_compute f;
  setup(&f, "GcGPU");
  const struct ds_layer *gc = &f.m->layers[1];
  cr_assert_eq(gc->conv_groups, 32);
  cr_assert_eq(gc->conv_stride, 1);
  cr_assert_eq(gc->conv_out_channels, 128);
  cr_assert_eq(gc->conv_group_width, 4);
  cr_assert_eq(gc->conv_kernel_area, 9);
  cr_assert_eq(f.m->layers[0].conv_groups, 1, "no groups key: one group");
  cr_assert(ds_compute_grouped_conv(&f.c, gc));
  cr_assert(!ds_compute_grouped_conv(&f.c, &f.m->layers[0]));
  cr_assert(!ds_compute_grouped_conv(&f.c, &f.m->layers[2]), "depthwise keeps the roofline");
  ds_test_compute_free(&f);
}

/* In fp32 training on a GPU with TF32, convolutions run TF32: layer gc at
 * batch 32 is the table's TF32 entry: 151.4 us forward, 141.7 + 253.2 us
 * backward, and no transposes (on a plain convolution they would be
 * charged: it is Ampere-like, TF32, NCHW). */
Test(grouped_conv, a_grouped_layer_is_charged_its_measured_passes) {
  struct ds_test_compute f;
  setup(&f, "GcGPU");
  const struct ds_layer *gc = &f.m->layers[1];
  cr_assert_float_eq(ds_compute_fwd_ns(&f.c, gc, 32), 151400, 1e-6);
  cr_assert_float_eq(ds_compute_bwd_ns(&f.c, gc, 32), 141700 + 253200, 1e-6);
  cr_assert_eq(ds_compute_conv_transpose_ns(&f.c, f.m, 1, 32, 0), 0);
  cr_assert_eq(ds_compute_conv_transpose_ns(&f.c, f.m, 1, 32, 1), 0);
  /* --tf32 none: the FP32 entry */
  ds_compute_set_tf32(&f.c, f.topo_loaded, DS_TF32_NONE);
  cr_assert_float_eq(ds_compute_fwd_ns(&f.c, gc, 32), 314400, 1e-6);
  ds_test_compute_free(&f);
}

/* Pure fp16 (model.half()): on a GPU with TF32 the table's half entry, 105.0
 * us forward at batch 32; on one without (Volta, Turing: cuDNN 7 runs half
 * grouped convolutions off the tensor cores) the FP32 entry, 314.4 us forward
 * and 516.2 + 586.7 us backward; channels-last keeps its own entry (45.7 us);
 * a calibration file's table (measured with the machine's cuDNN) keeps its
 * half entry: 200 us at its own 132 SMs and 1980 MHz. */
Test(grouped_conv, half_grouped_convolutions_without_tf32_take_the_fp32_entries) {
  struct ds_test_compute f;
  ds_test_compute_setup(&f, gpus_text, "GcGPU", 1, 0, model_text, DS_DTYPE_FP16, DS_AMP_NONE);
  cr_assert_float_eq(ds_compute_fwd_ns(&f.c, &f.m->layers[1], 32), 105000, 1e-6);
  ds_test_compute_free(&f);

  ds_test_compute_setup(&f, gpus_text, "NoTf32GPU", 1, 0, model_text, DS_DTYPE_FP16,
                        DS_AMP_NONE);
  const struct ds_layer *gc = &f.m->layers[1];
  cr_assert_eq(ds_compute_gconv_mode(&f.c), DS_GCONV_FP32);
  cr_assert_float_eq(ds_compute_fwd_ns(&f.c, gc, 32), 314400, 1e-6);
  cr_assert_float_eq(ds_compute_bwd_ns(&f.c, gc, 32), 516200 + 586700, 1e-6);
  f.c.channels_last = 1;
  cr_assert_float_eq(ds_compute_fwd_ns(&f.c, gc, 32), 45700, 1e-6);
  f.c.channels_last = 0;
  static const struct ds_gconv_entry measured[] = {
      {DS_GCONV_HALF, 4, 128, 3136, 1, 32, {200, 300, 400}}};
  const struct ds_gconv_table calib = {measured, 1, 132, 1980e6, 1, 1};
  f.c.gconv = &calib;
  cr_assert_eq(ds_compute_gconv_mode(&f.c), DS_GCONV_HALF);
  cr_assert_float_eq(ds_compute_fwd_ns(&f.c, gc, 32), 200000, 1e-6);
  ds_test_compute_free(&f);
}

/* On a slow GPU the roofline is longer than the table: 2 * 28901376 * 32
 * FLOPs at 8 TFLOP/s of TF32 = 231.2 us > 151.4. */
Test(grouped_conv, the_roofline_stays_a_lower_bound) {
  struct ds_test_compute f;
  setup(&f, "SlowGPU");
  const struct ds_layer *gc = &f.m->layers[1];
  double flops_ns = 28901376.0 * 32 / 8e12 * 1e9;
  double bytes_ns = (3211264.0 * 32 + 4608 * 4) / 100e9 * 1e9;
  cr_assert_float_eq(ds_compute_fwd_ns(&f.c, gc, 32), fmax(flops_ns, bytes_ns), 1e-6);
  ds_test_compute_free(&f);
}

static ds_status load_error(const char *layer_line, struct ds_err *err) {
  char text[1024];
  snprintf(text, sizeof text,
           "schema_version: 1\nname: t\nsample: s\ndefault_batch: 1\noptimizer: sgd\n"
           "layers:\n%s", layer_line);
  struct ds_model *m = NULL;
  ds_status st = ds_test_load_model_text(text, &m, err);
  if (m) ds_model_free(m);
  return st;
}

Test(grouped_conv, bad_groups_keys_name_the_problem) {
  struct ds_err err = {0};
  const char *w = "params: [{name: g.weight, numel: 4608, shape: [128, 4, 3, 3]}]}\n";
  char line[512];
  snprintf(line, sizeof line, "  - {name: g, class: conv, fwd_flops: 1, bwd_flops: 1, "
           "fwd_bytes: 1, act_bytes: 0, groups: 32, %s", w);
  cr_assert_eq(load_error(line, &err), DS_EINPUT);
  cr_assert(strstr(err.msg, "groups and stride together"), "%s", err.msg);
  snprintf(line, sizeof line, "  - {name: g, class: memory, fwd_flops: 1, bwd_flops: 1, "
           "fwd_bytes: 1, act_bytes: 0, groups: 32, stride: 1, %s", w);
  cr_assert_eq(load_error(line, &err), DS_EINPUT);
  cr_assert(strstr(err.msg, "class: conv"), "%s", err.msg);
  snprintf(line, sizeof line, "  - {name: g, class: conv, fwd_flops: 1, bwd_flops: 1, "
           "fwd_bytes: 1, act_bytes: 0, groups: 1, stride: 1, %s", w);
  cr_assert_eq(load_error(line, &err), DS_EINPUT);
  cr_assert(strstr(err.msg, "key 'layers[0].groups': expected an integer from 2 to 1048576, got 1"),
            "%s", err.msg);
  snprintf(line, sizeof line, "  - {name: g, class: conv, fwd_flops: 1, bwd_flops: 1, "
           "fwd_bytes: 1, act_bytes: 0, groups: 3, stride: 1, %s", w);
  cr_assert_eq(load_error(line, &err), DS_EINPUT);
  cr_assert(strstr(err.msg, "does not divide"), "%s", err.msg);
  snprintf(line, sizeof line, "  - {name: g, class: conv, fwd_flops: 1, bwd_flops: 1, "
           "fwd_bytes: 1, act_bytes: 0, groups: 32, stride: 1, "
           "params: [{name: g.bias, numel: 128}]}\n");
  cr_assert_eq(load_error(line, &err), DS_EINPUT);
  cr_assert(strstr(err.msg, "no 4-d weight"), "%s", err.msg);
  cr_assert(strstr(err.msg, ":7:"), "the message names the line: %s", err.msg);
}
