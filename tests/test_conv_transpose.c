/*
 * Tests for cuDNN's layout transposes around NCHW convolutions
 * (sim/train/compute_conv.c ds_compute_conv_transpose_bytes/_ns, compute.h):
 * which convolutions get them, the tensors and bytes per pass, and where
 * the rule does not apply (no TF32 tensor cores as on V100, FP32 math,
 * --channels-last, depthwise). Worked by hand on a made-up GPU with TF32
 * (1000 GB/s reached in full, 1 us per kernel) and toy layers at batch 10,
 * fp32. The schedule test checks the ops on the shipped H200 and V100.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sim/net/topo.h"
#include "sim/train/compute.h"
#include "sim/train/model.h"
#include "tests/support.h"

static const char *gpus_text =
    "schema_version: 1\ngpus:\n"
    "  - name: TcGPU\n    # no arch\n    sms: 4\n    fp32: 10TFLOPS\n    tf32: 80TFLOPS\n"
    "    fp16: 160TFLOPS\n    mem: 16GB\n    mem_bw: 1000GBps\n"
    "  - name: NoTf32GPU\n    # no arch\n    sms: 4\n    fp32: 10TFLOPS\n    fp16: 160TFLOPS\n"
    "    mem: 16GB\n    mem_bw: 1000GBps\n";

/* c0, c1: 3x3 convolutions 2 -> 4 channels on 10x10 (x 200 + y 400
 * elements, fwd_bytes 2400; weight 72); c0 is the model's first layer.
 * p1: 1x1 unit stride on 14x14 (6 x 196 = 1176 elements): a GEMM on NCHW.
 * p2: 1x1 unit stride on 7x7 (6 x 49 = 294). p3: 1x1 stride 2, 2x28x28 ->
 * 4x14x14 (1568 + 784 = 2352 elements; 2352 / 6 = 392 is no square).
 * dw: depthwise 3x3 (weight [4, 1, 3, 3]). */
static const char *model_text =
    "schema_version: 1\nname: t\nsample: s\ndefault_batch: 1\noptimizer: sgd\nlayers:\n"
    "  - {name: c0, class: conv, fwd_flops: 0, bwd_flops: 0, fwd_bytes: 2400, act_bytes: 0,"
    " params: [{name: c0.weight, numel: 72, shape: [4, 2, 3, 3]}]}\n"
    "  - {name: c1, class: conv, fwd_flops: 0, bwd_flops: 0, fwd_bytes: 2400, act_bytes: 0,"
    " params: [{name: c1.weight, numel: 72, shape: [4, 2, 3, 3]}]}\n"
    "  - {name: p1, class: conv, fwd_flops: 0, bwd_flops: 0, fwd_bytes: 4704, act_bytes: 0,"
    " params: [{name: p1.weight, numel: 8, shape: [4, 2, 1, 1]}]}\n"
    "  - {name: p2, class: conv, fwd_flops: 0, bwd_flops: 0, fwd_bytes: 1176, act_bytes: 0,"
    " params: [{name: p2.weight, numel: 8, shape: [4, 2, 1, 1]}]}\n"
    "  - {name: p3, class: conv, fwd_flops: 0, bwd_flops: 0, fwd_bytes: 9408, act_bytes: 0,"
    " params: [{name: p3.weight, numel: 8, shape: [4, 2, 1, 1]}]}\n"
    "  - {name: dw, class: conv, fwd_flops: 0, bwd_flops: 0, fwd_bytes: 3200, act_bytes: 0,"
    " params: [{name: dw.weight, numel: 36, shape: [4, 1, 3, 3]}]}\n";

static void setup(struct ds_test_compute *f, const char *gpu, enum ds_amp amp) {
  ds_test_compute_setup(f, gpus_text, gpu, 0.5, 1, model_text, DS_DTYPE_FP32, amp);
}

static double tb(const struct ds_test_compute *f, int32_t l, int bwd) {
  return ds_compute_conv_transpose_bytes(&f->c, f->m, l, 10, bwd);
}

/* c1 forward: x and y read and written, 2 * 600 * 10 * 4 = 48000 B, and
 * the 3x3 weight 2 * 72 * 4 = 576 B: 48576 B, 3 kernels: 48.576 ns + 3 us.
 * Backward: the data gradient's dy, dx and weight and the weight
 * gradient's x, dy and dW, 2 x 48576 B, 6 kernels. c0 (first layer): the
 * weight gradient's alone. */
Test(conv_transpose, a_3x3_convolution_transposes_its_tensors_and_weight) {
  struct ds_test_compute f;
  setup(&f, "TcGPU", DS_AMP_NONE);
  cr_assert_float_eq(tb(&f, 1, 0), 48576, 1e-9);
  cr_assert_float_eq(ds_compute_conv_transpose_ns(&f.c, f.m, 1, 10, 0), 48.576 + 3000, 1e-9);
  cr_assert_float_eq(tb(&f, 1, 1), 2 * 48576, 1e-9);
  cr_assert_float_eq(ds_compute_conv_transpose_ns(&f.c, f.m, 1, 10, 1), 97.152 + 6000, 1e-9);
  cr_assert_float_eq(tb(&f, 0, 0), 48576, 1e-9);
  cr_assert_float_eq(tb(&f, 0, 1), 48576, 1e-9, "the first layer has no data gradient");
  cr_assert_float_eq(ds_compute_conv_transpose_ns(&f.c, f.m, 0, 10, 1), 48.576 + 3000, 1e-9);
  ds_test_compute_free(&f);
}

/* 1x1: p1 (unit stride, 196 positions) is a GEMM on NCHW; p2 (49) and p3
 * (stride 2) transpose x and y only: 2 * 294 * 40 = 23520 B and 2 * 2352 *
 * 40 = 188160 B forward, twice that backward. dw: none. */
Test(conv_transpose, which_1x1_and_depthwise_convolutions_are_spared) {
  struct ds_test_compute f;
  setup(&f, "TcGPU", DS_AMP_NONE);
  cr_assert_float_eq(tb(&f, 2, 0), 0, 0);
  cr_assert_float_eq(tb(&f, 2, 1), 0, 0);
  cr_assert_float_eq(ds_compute_conv_transpose_ns(&f.c, f.m, 2, 10, 0), 0, 0);
  cr_assert_float_eq(tb(&f, 3, 0), 23520, 1e-9);
  cr_assert_float_eq(tb(&f, 3, 1), 47040, 1e-9);
  cr_assert_float_eq(ds_compute_conv_transpose_ns(&f.c, f.m, 3, 10, 0), 23.52 + 2000, 1e-9);
  cr_assert_float_eq(tb(&f, 4, 0), 188160, 1e-9);
  cr_assert_float_eq(tb(&f, 5, 0), 0, 0);
  ds_test_compute_free(&f);
}

/* ds_compute_conv_transpose gives what the pair gives, for one call: c1
 * forward 3048.576 ns over 48576 B, c0 backward (weight gradient alone)
 * the same, and p1's GEMM on NCHW 0 ns over 0 B. */
Test(conv_transpose, one_call_gives_the_ns_and_the_bytes) {
  struct ds_test_compute f;
  setup(&f, "TcGPU", DS_AMP_NONE);
  double bytes = -1;
  cr_assert_float_eq(ds_compute_conv_transpose(&f.c, f.m, 1, 10, 0, &bytes), 48.576 + 3000, 1e-9);
  cr_assert_float_eq(bytes, 48576, 1e-9);
  cr_assert_float_eq(ds_compute_conv_transpose(&f.c, f.m, 0, 10, 1, &bytes), 48.576 + 3000, 1e-9);
  cr_assert_float_eq(bytes, 48576, 1e-9);
  bytes = -1;
  cr_assert_float_eq(ds_compute_conv_transpose(&f.c, f.m, 2, 10, 0, &bytes), 0, 0);
  cr_assert_float_eq(bytes, 0, 0);
  for (int32_t l = 0; l < f.m->n_layers; l++)
    for (int bwd = 0; bwd < 2; bwd++) {
      double ns = ds_compute_conv_transpose(&f.c, f.m, l, 10, bwd, &bytes);
      cr_assert_eq(ns, ds_compute_conv_transpose_ns(&f.c, f.m, l, 10, bwd), "layer %d", l);
      cr_assert_eq(bytes, tb(&f, l, bwd), "layer %d", l);
    }
  ds_test_compute_free(&f);
}

/* fp16 autocast: 2 B per element, c1 forward 24000 + 288 B. */
Test(conv_transpose, half_tensors_move_half_the_bytes) {
  struct ds_test_compute f;
  setup(&f, "TcGPU", DS_AMP_FP16);
  cr_assert_float_eq(tb(&f, 1, 0), 24288, 1e-9);
  ds_test_compute_free(&f);
}

Test(conv_transpose, not_without_tf32_tensor_cores_fp32_math_or_nchw) {
  struct ds_test_compute f;
  setup(&f, "NoTf32GPU", DS_AMP_NONE); /* V100-like: FP32 NCHW kernels */
  cr_assert_float_eq(tb(&f, 1, 0), 0, 0);
  cr_assert_float_eq(tb(&f, 1, 1), 0, 0);
  ds_test_compute_free(&f);
  setup(&f, "TcGPU", DS_AMP_NONE);
  ds_compute_set_tf32(&f.c, f.topo_loaded, DS_TF32_NONE);
  cr_assert_float_eq(tb(&f, 1, 0), 0, 0, "--tf32 none: FP32 math");
  ds_compute_set_tf32(&f.c, f.topo_loaded, DS_TF32_CONV);
  cr_assert_float_eq(tb(&f, 1, 0), 48576, 1e-9);
  f.c.channels_last = 1;
  cr_assert_float_eq(tb(&f, 1, 0), 0, 0, "--channels-last");
  ds_test_compute_free(&f);
}

/* The schedule: ResNet-50 on H200 has conv1's transposes (first layer:
 * forward and the weight gradient's), layer1.0.conv2's (3x3) and none for
 * layer1.0.conv1 (1x1, 56x56); none on V100 or with --channels-last. */
static char *schedule_of(const char *args) {
  char path[] = "/tmp/ddpsim-tcsched-XXXXXX", cmd[1024];
  ds_test_write_temp(path, "");
  snprintf(cmd, sizeof cmd, "--model resnet50 --strategy single --world-size 1 --batch 8 %s "
           "--schedule %s", args, path);
  struct ds_test_result r = ds_test_cli(cmd);
  cr_assert_eq(r.status, 0, "%s", r.err);
  ds_test_release(&r);
  char *text = ds_test_slurp(path);
  unlink(path);
  return text;
}

Test(conv_transpose, the_schedule_has_the_ops_where_the_rule_applies) {
  char *h = schedule_of("--topo validation/topologies/nd-h200-v5.yaml");
  cr_assert(strstr(h, ",compute,fwd,conv1.transpose,"));
  cr_assert(strstr(h, ",compute,bwd,conv1.transpose,"));
  cr_assert(strstr(h, ",compute,bwd,layer1.0.conv2.transpose,"));
  cr_assert_null(strstr(h, "layer1.0.conv1.transpose"));
  free(h);
  char *v = schedule_of("--topo dgx1-v100");
  cr_assert_null(strstr(v, ".transpose"));
  free(v);
  char *n = schedule_of("--topo validation/topologies/nd-h200-v5.yaml --channels-last");
  cr_assert_null(strstr(n, ".transpose"));
  free(n);
}
