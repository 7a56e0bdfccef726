/*
 * Tests for layer norm's kernels (sim/train/norm.c ds_layer_norm_ns,
 * norm.h): the model file's layer_norm [rows, N] (model_ops.c), PyTorch's
 * kernels per pass (layer_norm_kernel.cu: the vectorised forward, or two
 * kernels where N is not a multiple of 4; the backward's input gradient and
 * gamma/beta reduction, or its partial path for many rows), their bytes,
 * rates and overheads. Expected values are worked by hand on a made-up GPU:
 * 8 SMs at 1000 MHz, 1000 GB/s reached in full (1000 B/ns); the rates are
 * norm.c's: 2.179 element passes per SM per clock (forward; 3.277 on
 * 2-byte elements), 6.89 element reads per CTA per clock (gamma/beta, 32
 * columns per CTA), each fitted on kernel times less kernel_overhead.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "sim/net/topo.h"
#include "sim/train/compute.h"
#include "sim/train/model.h"
#include "sim/train/norm.h"
#include "tests/support.h"

static const char *gpus_text =
    "schema_version: 1\ngpus:\n"
    "  - name: LnGPU\n    # no arch\n    sms: 8\n    fp32: 10TFLOPS\n    tf32: 80TFLOPS\n"
    "    fp16: 160TFLOPS\n    bf16: 160TFLOPS\n    mem: 16GB\n    mem_bw: 1000GBps\n"
    "    boost_mhz: 1000\n"
    "  - name: NoClockGPU\n    # no arch\n    sms: 8\n    fp32: 10TFLOPS\n    fp16: 160TFLOPS\n"
    "    mem: 16GB\n    mem_bw: 1000GBps\n";

/* ln: 100 rows of 64 per sample, gamma and beta; odd: rows of 66 (not a
 * multiple of 4); bare: no weights (elementwise_affine=False). */
static const char *model_text =
    "schema_version: 1\nname: t\nsample: s\ndefault_batch: 1\noptimizer: sgd\nlayers:\n"
    "  - {name: ln, class: memory, fwd_flops: 0, bwd_flops: 0, fwd_bytes: 51200,"
    " act_bytes: 25600, layer_norm: [100, 64],"
    " params: [{name: ln.weight, numel: 64}, {name: ln.bias, numel: 64}]}\n"
    "  - {name: odd, class: memory, fwd_flops: 0, bwd_flops: 0, fwd_bytes: 52800,"
    " act_bytes: 26400, layer_norm: [100, 66],"
    " params: [{name: odd.weight, numel: 66}, {name: odd.bias, numel: 66}]}\n"
    "  - {name: bare, class: memory, fwd_flops: 0, bwd_flops: 0, fwd_bytes: 51200,"
    " act_bytes: 25600, layer_norm: [100, 64], params: []}\n"
    "  - {name: relu, class: memory, fwd_flops: 0, bwd_flops: 0, fwd_bytes: 51200,"
    " act_bytes: 25600, params: []}\n";

static void setup(struct ds_test_compute *f, const char *gpu, double overhead_us,
                  enum ds_dtype dtype) {
  ds_test_compute_setup(f, gpus_text, gpu, 0.5, overhead_us, model_text, dtype, DS_AMP_NONE);
}

Test(layer_norm, the_key_gives_rows_and_n) {
  struct ds_test_compute f;
  setup(&f, "LnGPU", 0, DS_DTYPE_FP32);
  cr_assert_eq(f.m->layers[0].ln_rows, 100);
  cr_assert_eq(f.m->layers[0].ln_cols, 64);
  cr_assert_eq(f.m->layers[3].ln_rows, 0, "a layer without the key is no layer norm");
  ds_test_compute_free(&f);
}

/* ln at batch 10: M = 1000 rows, 64000 elements. Forward, one kernel: 2 *
 * 64000 element passes on min(1000, 8) SMs, 128000 / (8 * 2.179) = 7342.82
 * ns; its bytes X + Y (2 * 64000 * 4) + mean, rstd (2 * 1000 * 4) + gamma,
 * beta (128 * 4) = 520512 B = 520.512 ns, shorter. Backward: the input
 * gradient 3 * 64000 * 4 + 8000 + gamma 64 * 4 = 776256 B = 776.256 ns at
 * the roofline; gamma/beta on ceil(64 / 32) = 2 CTAs (one wave): 2 * 1000 *
 * 32 / 6.89 = 9288.82 ns against its bytes 2 * 64000 * 4 + 8000 + 2 * 64 *
 * 4 = 520512 B = 520.512 ns. */
Test(layer_norm, forward_one_kernel_backward_two_at_their_rates) {
  struct ds_test_compute f;
  setup(&f, "LnGPU", 0, DS_DTYPE_FP32);
  const struct ds_layer *l = &f.m->layers[0];
  struct ds_ln_kernels k;
  double fwd = ds_layer_norm_ns(&f.c, l, 10, 0, &k);
  cr_assert_eq(k.kernels, 1);
  cr_assert_float_eq(k.bytes, 520512, 1e-6);
  cr_assert_float_eq(fwd, 128000 / (8 * 2.179), 1e-6);
  cr_assert_float_eq(ds_compute_fwd_ns(&f.c, l, 10), fwd, 1e-9,
                     "the layer's forward is its layer-norm kernel");
  double bwd = ds_layer_norm_ns(&f.c, l, 10, 1, &k);
  cr_assert_eq(k.kernels, 2);
  cr_assert_eq(k.gamma_beta_partial, 0);
  cr_assert_float_eq(k.row_ns, 776.256, 1e-6);
  cr_assert_float_eq(k.gamma_beta_ns, 64000 / 6.89, 1e-6);
  cr_assert_float_eq(k.bytes, 776256 + 520512, 1e-6);
  cr_assert_float_eq(bwd, 776.256 + 64000 / 6.89, 1e-6);
  cr_assert_float_eq(ds_compute_bwd_ns(&f.c, l, 10), bwd, 1e-9);
  ds_test_compute_free(&f);
}

/* Each kernel pays kernel_overhead (4 us): one forward, two backward. */
Test(layer_norm, each_kernel_pays_the_overhead) {
  struct ds_test_compute f;
  setup(&f, "LnGPU", 4, DS_DTYPE_FP32);
  const struct ds_layer *l = &f.m->layers[0];
  cr_assert_float_eq(ds_compute_fwd_ns(&f.c, l, 10), 128000 / (8 * 2.179) + 4000, 1e-6);
  cr_assert_float_eq(ds_compute_bwd_ns(&f.c, l, 10), 776.256 + 64000 / 6.89 + 2 * 4000, 1e-6);
  ds_test_compute_free(&f);
}

/* odd at batch 10 (N = 66, not a multiple of 4): RowwiseMomentsCUDAKernel
 * reads X, writes the statistics, 66000 * 4 + 8000 = 272000 B = 272 ns;
 * LayerNormForwardCUDAKernel reads X, the statistics and the weights, writes
 * Y, 2 * 66000 * 4 + 8000 + 132 * 4 = 536528 B = 536.528 ns; both at the
 * roofline. */
Test(layer_norm, an_unaligned_row_runs_two_forward_kernels) {
  struct ds_test_compute f;
  setup(&f, "LnGPU", 0, DS_DTYPE_FP32);
  struct ds_ln_kernels k;
  double fwd = ds_layer_norm_ns(&f.c, &f.m->layers[1], 10, 0, &k);
  cr_assert_eq(k.kernels, 2);
  cr_assert_float_eq(k.bytes, 272000 + 536528, 1e-6);
  cr_assert_float_eq(fwd, 272 + 536.528, 1e-6);
  ds_test_compute_free(&f);
}

/* bare (no weights): no gamma/beta kernel; the input gradient reads no
 * gamma: 3 * 64000 * 4 + 8000 = 776000 B. */
Test(layer_norm, no_weights_no_gamma_beta_kernel) {
  struct ds_test_compute f;
  setup(&f, "LnGPU", 0, DS_DTYPE_FP32);
  struct ds_ln_kernels k;
  double bwd = ds_layer_norm_ns(&f.c, &f.m->layers[2], 10, 1, &k);
  cr_assert_eq(k.kernels, 1);
  cr_assert_float_eq(k.gamma_beta_ns, 0, 0);
  cr_assert_float_eq(bwd, 776, 1e-6);
  ds_test_compute_free(&f);
}

/* ln at batch 700: M = 70000 > 65536 and 64 / 32 = 2 < 8 / 2 SMs: the
 * partial path. P = min(32768 / 2, ceil(70000 / 32)) = 2188 rows of partial
 * sums for gamma and beta, 2 * 2188 * 64 * 4 = 1120256 B written; the
 * partial kernel reads dY, X and the statistics, 2 * 70000 * 64 * 4 + 2 *
 * 70000 * 4 = 36400000 B: (36400000 + 1120256) / 1000 = 37520.256 ns;
 * each sum(0) reads its 560128 B and writes 256: 560.384 ns, two of them. */
Test(layer_norm, many_rows_and_few_columns_take_the_partial_path) {
  struct ds_test_compute f;
  setup(&f, "LnGPU", 0, DS_DTYPE_FP32);
  struct ds_ln_kernels k;
  ds_layer_norm_ns(&f.c, &f.m->layers[0], 700, 1, &k);
  cr_assert_eq(k.gamma_beta_partial, 1);
  cr_assert_eq(k.kernels, 4, "input gradient, partial sums, two sum(0)s");
  cr_assert_float_eq(k.gamma_beta_ns, 37520.256 + 2 * 560.384, 1e-6);
  ds_test_compute_free(&f);
}

/* --dtype bf16: 2-byte elements, the statistics still fp32. Forward at the
 * half kernel's rate, 3.277 element passes per SM per clock (norm.c):
 * 128000 / (8 * 3.277) = 4882.51 ns, not fp32's 7342.82 (its bytes 2 *
 * 64000 * 2 + 8000 + 128 * 2 = 264256 B = 264.256 ns, shorter); the input
 * gradient 3 * 64000 * 2 + 8000 + 64 * 2 = 392128 B; gamma/beta at the one
 * rate whatever the element size (9288.82 ns). fp16 the same. */
Test(layer_norm, half_elements_move_half_the_bytes) {
  enum ds_dtype halves[] = {DS_DTYPE_BF16, DS_DTYPE_FP16};
  for (size_t i = 0; i < 2; i++) {
    struct ds_test_compute f;
    setup(&f, "LnGPU", 0, halves[i]);
    struct ds_ln_kernels k;
    double fwd = ds_layer_norm_ns(&f.c, &f.m->layers[0], 10, 0, &k);
    cr_assert_float_eq(k.bytes, 264256, 1e-6);
    cr_assert_float_eq(fwd, 128000 / (8 * 3.277), 1e-6, "%zu", i);
    ds_layer_norm_ns(&f.c, &f.m->layers[0], 10, 1, &k);
    cr_assert_float_eq(k.row_ns, 392.128, 1e-6);
    cr_assert_float_eq(k.gamma_beta_ns, 64000 / 6.89, 1e-6);
    ds_test_compute_free(&f);
  }
}

/* A GPU without a clock: every kernel at the roofline (forward 520.512 ns;
 * gamma/beta 520.512 ns). */
Test(layer_norm, no_clock_means_the_roofline) {
  struct ds_test_compute f;
  setup(&f, "NoClockGPU", 0, DS_DTYPE_FP32);
  struct ds_ln_kernels k;
  cr_assert_float_eq(ds_layer_norm_ns(&f.c, &f.m->layers[0], 10, 0, NULL), 520.512,
                     1e-6);
  ds_layer_norm_ns(&f.c, &f.m->layers[0], 10, 1, &k);
  cr_assert_float_eq(k.gamma_beta_ns, 520.512, 1e-6);
  ds_test_compute_free(&f);
}

Test(layer_norm, bad_keys_are_located) {
  static const char *const bad[][3] = {
      {"matmul", "    layer_norm: [128, 768]\n", "memory-class layers"},
      {"memory", "    layer_norm: [128]\n", "layer_norm [rows, N], got 1 number"},
      {"memory", "    layer_norm: [0, 768]\n", "expected an integer from 1"},
      {"memory", "    layer_norm: [128, 20000000]\n", "N at most 16777216"},
      {"memory", "    layer_norm: 768\n", ":13:"},
      /* a max-pool's keys beside it: refused at layer_norm's line (17) */
      {"memory",
       "    pool_kernel: [2, 2]\n    pool_stride: [2, 2]\n    pool_padding: [0, 0]\n"
       "    pool_input: [4, 8, 8]\n    layer_norm: [128, 768]\n",
       ":17:"},
      {"memory",
       "    pool_kernel: [2, 2]\n    pool_stride: [2, 2]\n    pool_padding: [0, 0]\n"
       "    pool_input: [4, 8, 8]\n    layer_norm: [128, 768]\n",
       "expected layer_norm or pool_kernel on one layer, not both"},
  };
  struct ds_model *m = NULL;
  struct ds_err err = {0};
  char text[1024], label[32];
  ds_test_one_layer_model(text, sizeof text, "memory", "    layer_norm: [128, 768]\n");
  cr_assert_eq(ds_test_load_model_text(text, &m, &err), DS_OK, "%s", err.msg);
  cr_assert_eq(m->layers[0].ln_cols, 768);
  ds_model_free(m);
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    ds_test_one_layer_model(text, sizeof text, bad[i][0], bad[i][1]);
    snprintf(label, sizeof label, "case %zu", i);
    ds_test_assert_model_refused(text, bad[i][2], label);
  }
}

/* A layer_norm on a layer a batch norm's running_mean buffer names (the
 * buffers come after the layers): refused at the layer_norm key (line 13),
 * naming the buffer; without the buffer the same layer loads. */
Test(layer_norm, a_layer_norm_on_a_batch_norm_is_refused) {
  char text[1024];
  ds_test_one_layer_model(text, sizeof text, "memory", "    layer_norm: [128, 768]\n");
  size_t n = strlen(text);
  snprintf(text + n, sizeof text - n,
           "buffers:\n  - {name: l.running_mean, numel: 768, bytes: 3072, dtype: float32}\n");
  ds_test_assert_model_refused(text, "buffer l.running_mean makes layer \"l\" one", "bn");
  ds_test_assert_model_refused(text, ":13:", "bn line");
  snprintf(text + n, sizeof text - n,
           "buffers:\n  - {name: m.running_mean, numel: 768, bytes: 3072, dtype: float32}\n");
  struct ds_model *m = NULL;
  struct ds_err err = {0};
  cr_assert_eq(ds_test_load_model_text(text, &m, &err), DS_OK, "%s", err.msg);
  cr_assert_eq(m->layers[0].bn_channels, 0);
  ds_model_free(m);
}

/* The shipped GPT-2 on the H200 (132 SMs at 1980 MHz) at batch 8: ln_1's
 * 8192 rows of 768 take 2 * 8192 * 768 / (132 * 2.179 * 1.98e9) s = 22.09
 * us forward plus the topology's 4 us overhead, 26.09 us: the mean of the
 * kernel the rate was fitted on (norm.c, 26.093 us); the gamma/beta kernel
 * 2 * 8192 * 32 / (6.89 * 1.98e9) s = 38.43 us, plus 4: 42.43 (42.423
 * measured). */
Test(layer_norm, gpt2_on_h200_runs_the_fitted_kernels) {
  struct ds_model *m = ds_test_model("models/gpt2.yaml");
  struct ds_topo *t = NULL;
  struct ds_err err = {0};
  cr_assert_eq(ds_topo_load("validation/topologies/nd-h200-v5.yaml", "topologies/gpus.yaml", &t,
                            &err), DS_OK, "%s", err.msg);
  struct ds_compute c;
  cr_assert_eq(ds_compute_init(t, DS_DTYPE_FP32, DS_AMP_NONE, &c, &err), DS_OK, "%s", err.msg);
  const struct ds_layer *l = NULL;
  for (int32_t i = 0; i < m->n_layers; i++)
    if (strcmp(m->layers[i].name, "transformer.h.0.ln_1") == 0) l = &m->layers[i];
  cr_assert_not_null(l);
  cr_assert_eq(l->ln_rows, 1024, "the exporter marks GPT-2's layer norms");
  cr_assert_eq(l->ln_cols, 768);
  struct ds_ln_kernels k;
  double fwd = ds_layer_norm_ns(&c, l, 8, 0, &k);
  cr_assert_float_eq(fwd, 2.0 * 8192 * 768 / (132 * 2.179 * 1.98e9) * 1e9 + 4000, 1e-3);
  ds_layer_norm_ns(&c, l, 8, 1, &k);
  cr_assert_eq(k.kernels, 2);
  cr_assert_float_eq(k.gamma_beta_ns, 2.0 * 8192 * 32 / (6.89 * 1.98e9) * 1e9 + 4000, 1e-3);
  ds_topo_free(t);
  ds_model_free(m);
}
