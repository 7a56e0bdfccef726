/*
 * Tests for the compute model under --amp with the model file's autocast
 * traffic (sim/train/model.h amp_fwd_bytes / amp_cast_bytes, written by
 * tools/export_model.py from CUDA autocast's cast policies): a layer's
 * activation bytes in the dtypes autocast gives them, its cast kernels as
 * separate memory-bound kernels, and the loss run in fp32 with the cast of
 * the half outputs. Worked by hand on tiny-topo's TestGPU (fp32 10, fp16
 * 20 TFLOPS, 1000 GB/s, efficiencies 1, no kernel overhead).
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

/* mm: a matmul (2 GFLOP forward, 4 backward per sample, 1000 weights) whose
 * fp32 traffic is 40 MB, under autocast 10 MB plus 6 MB of casts (its fp32
 * input cast to half: 1 M elements x (4 + 2) B). act: a memory layer of
 * 20 MB in fp32 and, under autocast, 30 MB (fp32 ops fed half inputs) plus
 * 12 MB of casts, and 3 MB of gradients autograd casts back to a half
 * input's dtype in backward. old: a memory layer without the keys. gelu:
 * a composite module of 20 MB in and out whose ops move 80 MB (op_fwd_bytes). 
 * lin: a memory-bound matmul (2 MFLOP per sample, 2 MB of autocast
 * traffic) with a weight of 1 M and a bias of 1000 elements. Outputs 4 MB
 * (fp32) per sample. */
static const char *model_text =
    "schema_version: 1\nname: amp\nsample: s\ndefault_batch: 1\noptimizer: sgd\n"
    "output_bytes: 4000000\nlayers:\n"
    "  - name: mm\n    class: matmul\n    fwd_flops: 2000000000\n    bwd_flops: 4000000000\n"
    "    fwd_bytes: 40000000\n    act_bytes: 0\n    amp_fwd_bytes: 10000000\n"
    "    amp_cast_bytes: 6000000\n    amp_grad_cast_bytes: 0\n"
    "    params:\n      - {name: w, numel: 1000}\n"
    "  - name: act\n    class: memory\n    fwd_flops: 0\n    bwd_flops: 0\n"
    "    fwd_bytes: 20000000\n    act_bytes: 0\n    amp_fwd_bytes: 30000000\n"
    "    amp_cast_bytes: 12000000\n    amp_grad_cast_bytes: 3000000\n    params: []\n"
    "  - name: old\n    class: memory\n    fwd_flops: 0\n    bwd_flops: 0\n"
    "    fwd_bytes: 20000000\n    act_bytes: 0\n    params: []\n"
    "  - name: gelu\n    class: memory\n    fwd_flops: 0\n    bwd_flops: 0\n"
    "    fwd_bytes: 20000000\n    act_bytes: 0\n    op_fwd_bytes: 80000000\n    params: []\n"
    "  - name: lin\n    class: matmul\n    fwd_flops: 2000000\n    bwd_flops: 4000000\n"
    "    fwd_bytes: 4000000\n    act_bytes: 0\n    amp_fwd_bytes: 2000000\n"
    "    amp_cast_bytes: 0\n    amp_grad_cast_bytes: 0\n"
    "    params:\n      - {name: lin.w, numel: 1000000}\n      - {name: lin.b, numel: 1000}\n";

struct fixture {
  struct ds_topo *topo;
  struct ds_model *model;
};

static void setup(struct fixture *f) {
  char path[] = "/tmp/ddpsim-amp-model-XXXXXX";
  ds_test_write_temp(path, model_text);
  struct ds_err err = {0};
  cr_assert_eq(ds_model_load(path, &f->model, &err), DS_OK, "%s", err.msg);
  unlink(path);
  cr_assert_eq(ds_topo_load("tests/data/tiny-topo.yaml", NULL, &f->topo, &err), DS_OK, "%s",
               err.msg);
}

static void teardown(struct fixture *f) {
  ds_model_free(f->model);
  ds_topo_free(f->topo);
}

static struct ds_compute init(const struct fixture *f, enum ds_amp amp) {
  struct ds_compute c;
  struct ds_err err = {0};
  cr_assert_eq(ds_compute_init(f->topo, DS_DTYPE_FP32, amp, &c, &err), DS_OK, "%s", err.msg);
  return c;
}

Test(autocast, a_matmuls_casts_are_kernels_of_their_own) {
  /* --amp fp16, batch 1: mm's forward max(2e9 / 20e12 = 100 us, (10 MB +
   * 2 B x 1000 half weights) / 1000 GB/s = 10.002 us) = 100 us, then its
   * input's cast kernel 6 MB / 1000 GB/s = 6 us and its weight's cast,
   * 1000 x 6 B = 6 kB, 0.006 us: 106.006 us (the casts do not hide under
   * the math: other kernels). Backward max(4e9 / 20e12 = 200 us, 2 x 10
   * MB + 4 B x 1000 (half weight read, half gradient written) = 20.004 us)
   * + the gradient's cast back 6 us + the weight gradient's cast to fp32, a
   * kernel of its own (1000 x 6 B: 0.006 us; TestGPU has no clock, so both
   * upcasts take the roofline) = 206.006 us. */
  struct fixture f;
  setup(&f);
  struct ds_compute c = init(&f, DS_AMP_FP16);
  cr_assert_float_eq(ds_compute_fwd_ns(&c, &f.model->layers[0], 1), 106006, 1e-6);
  cr_assert_float_eq(ds_compute_bwd_ns(&c, &f.model->layers[0], 1), 206006, 1e-6);
  teardown(&f);
}

Test(autocast, memory_layers_move_autocasts_bytes_not_half_of_fp32s) {
  /* act at batch 4 under --amp fp16: forward 4 x 30 MB / 1000 GB/s = 120
   * us + casts 4 x 12 MB = 48 us: 168 us (halving fp32's 20 MB would say
   * 40 us); backward 2 x 120 + the casts back 48 + the engine's gradient
   * casts 4 x 3 MB = 12 us: 300 us. Without --amp: 4 x 20 MB = 80
   * us forward, 160 us backward, the keys unused. old (no keys) under
   * --amp: 4 x 20 MB / 2 = 40 us, as before. */
  struct fixture f;
  setup(&f);
  struct ds_compute c = init(&f, DS_AMP_FP16);
  cr_assert_float_eq(ds_compute_fwd_ns(&c, &f.model->layers[1], 4), 168000, 1e-6);
  cr_assert_float_eq(ds_compute_bwd_ns(&c, &f.model->layers[1], 4), 300000, 1e-6);
  cr_assert_float_eq(ds_compute_fwd_ns(&c, &f.model->layers[2], 4), 40000, 1e-6);
  cr_assert_float_eq(ds_compute_bwd_ns(&c, &f.model->layers[2], 4), 80000, 1e-6);
  struct ds_compute fp32 = init(&f, DS_AMP_NONE);
  cr_assert_float_eq(ds_compute_fwd_ns(&fp32, &f.model->layers[1], 4), 80000, 1e-6);
  cr_assert_float_eq(ds_compute_bwd_ns(&fp32, &f.model->layers[1], 4), 160000, 1e-6);
  teardown(&f);
}

Test(autocast, the_loss_runs_in_fp32_after_a_cast) {
  /* 3 samples of 4 MB fp32 outputs (1 M elements each). fp32: read the
   * outputs and write their gradient, 2 x 12 MB = 24 MB: 24 us. --amp: the
   * same fp32 pass (autocast's fp32 list) plus the cast of the half
   * outputs to fp32 and of the gradient back, 2 x 3 M x 6 B = 36 MB: 60 MB,
   * 60 us. */
  struct fixture f;
  setup(&f);
  double bytes;
  struct ds_compute fp32 = init(&f, DS_AMP_NONE);
  cr_assert_float_eq(ds_compute_loss_ns(&fp32, f.model, 3, &bytes), 24000, 1e-6);
  cr_assert_float_eq(bytes, 24e6, 1e-3);
  struct ds_compute amp = init(&f, DS_AMP_FP16);
  cr_assert_float_eq(ds_compute_loss_ns(&amp, f.model, 3, &bytes), 60000, 1e-6);
  cr_assert_float_eq(bytes, 60e6, 1e-3);
  teardown(&f);
}

Test(autocast, the_losss_softmax_reads_long_rows_three_times) {
  /* SoftMax.cu's kernels: rows up to 1024 elements (persistent) or under
   * 48 KiB in fp32 (shared memory: 12,288 elements is exactly 48 KiB, too
   * many) read once: 2 + 1 + 3 = 6 passes; longer rows 4 + 1 + 4 = 9; no
   * output_classes: 2. */
  cr_assert_eq(ds_compute_loss_passes(0), 2);
  cr_assert_eq(ds_compute_loss_passes(1000), 6);
  cr_assert_eq(ds_compute_loss_passes(1024), 6);
  cr_assert_eq(ds_compute_loss_passes(12287), 6);
  cr_assert_eq(ds_compute_loss_passes(12288), 9);
  cr_assert_eq(ds_compute_loss_passes(50257), 9);
  /* the model above with GPT-2's vocabulary: 3 samples x 4 MB, 9 passes:
   * 108 MB, 108 us in fp32; --amp adds the two 6 B casts of 3 M elements,
   * 36 MB: 144 us */
  struct fixture f;
  setup(&f);
  f.model->output_classes = 50257;
  double bytes;
  struct ds_compute fp32 = init(&f, DS_AMP_NONE);
  cr_assert_float_eq(ds_compute_loss_ns(&fp32, f.model, 3, &bytes), 108000, 1e-6);
  struct ds_compute amp = init(&f, DS_AMP_FP16);
  cr_assert_float_eq(ds_compute_loss_ns(&amp, f.model, 3, &bytes), 144000, 1e-6);
  cr_assert_float_eq(bytes, 144e6, 1e-3);
  teardown(&f);
}

Test(autocast, a_composite_modules_ops_move_op_fwd_bytes) {
  /* gelu, batch 2, fp32: its ops move 2 x 80 MB = 160 MB / 1000 GB/s =
   * 160 us forward (not 40 us for its 2 x 20 MB of input and output),
   * 320 us backward. Under --amp without autocast keys, half of that:
   * 80 and 160 us. */
  struct fixture f;
  setup(&f);
  struct ds_compute fp32 = init(&f, DS_AMP_NONE);
  cr_assert_float_eq(ds_compute_fwd_ns(&fp32, &f.model->layers[3], 2), 160000, 1e-6);
  cr_assert_float_eq(ds_compute_bwd_ns(&fp32, &f.model->layers[3], 2), 320000, 1e-6);
  struct ds_compute amp = init(&f, DS_AMP_FP16);
  cr_assert_float_eq(ds_compute_fwd_ns(&amp, &f.model->layers[3], 2), 80000, 1e-6);
  cr_assert_float_eq(ds_compute_bwd_ns(&amp, &f.model->layers[3], 2), 160000, 1e-6);
  teardown(&f);
}

Test(autocast, a_weights_cast_is_a_kernel_per_tensor_before_the_layer) {
  /* lin under --amp fp16 with 2 us of kernel overhead: autocast's
   * cached_cast runs a _to_copy per weight tensor, 2 kernels reading fp32
   * and writing half, 1,001,000 x 6 B = 6,006,000 B: 6.006 us + 2 x 2 us =
   * 10.006 us; then lin's own kernel reads 2 MB of activations and its half
   * weights, 2 x 1,001,000 B: 4.002 MB, 4.002 us (its 2 MFLOP take 0.1 us)
   * + 2 us. Forward 10.006 + 6.002 = 16.008 us, not the old 8 B per
   * parameter inside the one kernel (2 MB + 8.008 MB: 12.008 us). Without
   * --amp, or for a memory layer (act, no parameters; the casts are of
   * convolutions' and matmuls' weights only): none. */
  struct fixture f;
  setup(&f);
  struct ds_compute c = init(&f, DS_AMP_FP16);
  c.params.kernel_overhead_ns = 2000;
  double bytes;
  cr_assert_float_eq(ds_compute_weight_cast_ns(&c, &f.model->layers[4], &bytes), 10006, 1e-6);
  cr_assert_float_eq(bytes, 6006000, 0.5);
  cr_assert_float_eq(ds_compute_fwd_ns(&c, &f.model->layers[4], 1), 16008, 1e-6);
  cr_assert_float_eq(ds_compute_weight_cast_ns(&c, &f.model->layers[1], &bytes), 0, 0);
  cr_assert_float_eq(bytes, 0, 0);
  struct ds_compute fp32 = init(&f, DS_AMP_NONE);
  cr_assert_float_eq(ds_compute_weight_cast_ns(&fp32, &f.model->layers[4], &bytes), 0, 0);
  cr_assert_float_eq(bytes, 0, 0);
  teardown(&f);
}
