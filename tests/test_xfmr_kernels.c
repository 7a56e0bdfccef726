/*
 * Tests for the kernels transformer models run beside their layers' math
 * (sim/train/compute.h): half-precision GEMMs on unaligned operands
 * (gemm_align below 8 elements) at the GPU table's matmul_unaligned_half,
 * and the backward's bias-gradient reductions and layout copies
 * (bwd_reduce_bytes, bwd_copy_bytes) as memory-bound kernels of their own.
 * Worked by hand on tiny-topo's TestGPU (fp32 10, fp16 20 TFLOPS, 1000
 * GB/s, efficiencies 1, no kernel overhead), its matmul_unaligned_half set
 * to 0.25 by the test.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sim/net/topo.h"
#include "sim/train/compute.h"
#include "sim/train/legacy_ew.h"
#include "sim/train/model.h"
#include "tests/support.h"

/* head: a matmul of 2 GFLOP forward, 4 backward per sample, 40 MB of fp32
 * traffic, 1000 weights, an operand 1 element aligned (GPT-2's LM head:
 * 50257 wide). head8: the same, aligned. fc: aligned, with 8 MB of
 * bias-gradient reduction and 4 MB of layout copies in its backward. mem:
 * a memory layer that says gemm_align 1 (no GEMM time to slow). Outputs 4
 * MB (fp32) per sample, and the loss copies 1 MB of them per sample. */
static const char *model_text =
    "schema_version: 1\nname: xk\nsample: s\ndefault_batch: 1\noptimizer: sgd\n"
    "output_bytes: 4000000\nloss_copy_bytes: 1000000\nlayers:\n"
    "  - name: head\n    class: matmul\n    fwd_flops: 2000000000\n    bwd_flops: 4000000000\n"
    "    fwd_bytes: 40000000\n    act_bytes: 0\n    gemm_align: 1\n"
    "    params:\n      - {name: w, numel: 1000}\n"
    "  - name: head8\n    class: matmul\n    fwd_flops: 2000000000\n    bwd_flops: 4000000000\n"
    "    fwd_bytes: 40000000\n    act_bytes: 0\n    gemm_align: 8\n"
    "    params:\n      - {name: w8, numel: 1000}\n"
    "  - name: fc\n    class: matmul\n    fwd_flops: 2000000000\n    bwd_flops: 4000000000\n"
    "    fwd_bytes: 40000000\n    act_bytes: 0\n    bwd_reduce_bytes: 8000000\n"
    "    bwd_copy_bytes: 4000000\n    params:\n      - {name: fcw, numel: 1000}\n"
    "  - name: mem\n    class: memory\n    fwd_flops: 0\n    bwd_flops: 0\n"
    "    fwd_bytes: 20000000\n    act_bytes: 0\n    gemm_align: 1\n    params: []\n";

enum { HEAD, HEAD8, FC, MEM };

struct fixture {
  struct ds_topo *topo;
  struct ds_model *model;
};

static void setup(struct fixture *f, double unaligned) {
  struct ds_err err = {0};
  cr_assert_eq(ds_test_load_model_text(model_text, &f->model, &err), DS_OK, "%s", err.msg);
  cr_assert_eq(ds_topo_load("tests/data/tiny-topo.yaml", NULL, &f->topo, &err), DS_OK, "%s",
               err.msg);
  f->topo->gpu.eff.matmul_unaligned_half = unaligned;
}

static void teardown(struct fixture *f) {
  ds_model_free(f->model);
  ds_topo_free(f->topo);
}

static struct ds_compute init(const struct fixture *f, enum ds_dtype dtype, enum ds_amp amp) {
  struct ds_compute c;
  struct ds_err err = {0};
  cr_assert_eq(ds_compute_init(f->topo, dtype, amp, &c, &err), DS_OK, "%s", err.msg);
  return c;
}

Test(xfmr_kernels, an_unaligned_half_gemm_runs_at_the_unaligned_efficiency) {
  /* --dtype fp16, batch 1: head's forward 2e9 / (20e12 x 0.25) = 400 us
   * (its bytes, 20 MB + 2 kB, take 20 us); backward 4e9 / 5e12 = 800 us.
   * head8, aligned: 2e9 / 20e12 = 100 us and 200 us. --amp fp16 runs the
   * same math: 400 and 800 us, the forward after autocast's cast of the
   * 1000 weights (6 kB, 0.006 us): 400.006 us, the backward before its
   * gradient's cast to fp32 (6 kB at the roofline, TestGPU having no
   * clock): 800.006 us. */
  struct fixture f;
  setup(&f, 0.25);
  struct ds_compute c = init(&f, DS_DTYPE_FP16, DS_AMP_NONE);
  cr_assert(ds_compute_gemm_unaligned(&c, &f.model->layers[HEAD]));
  cr_assert_float_eq(ds_compute_fwd_ns(&c, &f.model->layers[HEAD], 1), 400000, 1e-6);
  cr_assert_float_eq(ds_compute_bwd_ns(&c, &f.model->layers[HEAD], 1), 800000, 1e-6);
  cr_assert_float_eq(ds_compute_fwd_ns(&c, &f.model->layers[HEAD8], 1), 100000, 1e-6);
  cr_assert_float_eq(ds_compute_bwd_ns(&c, &f.model->layers[HEAD8], 1), 200000, 1e-6);
  struct ds_compute amp = init(&f, DS_DTYPE_FP32, DS_AMP_FP16);
  cr_assert_float_eq(ds_compute_fwd_ns(&amp, &f.model->layers[HEAD], 1), 400006, 1e-6);
  cr_assert_float_eq(ds_compute_bwd_ns(&amp, &f.model->layers[HEAD], 1), 800006, 1e-6);
  teardown(&f);
}

Test(xfmr_kernels, the_rule_is_not_applied_in_fp32_aligned_memory_or_unmeasured) {
  /* fp32 math (vector FP32, 10 TFLOPS): head = head8 = 2e9 / 10e12 = 200
   * us forward. A memory layer's gemm_align changes nothing: 20 MB / 1000
   * GB/s = 20 us. A GPU without matmul_unaligned_half: head runs as head8
   * in fp16, 100 us. */
  struct fixture f;
  setup(&f, 0.25);
  struct ds_compute fp32 = init(&f, DS_DTYPE_FP32, DS_AMP_NONE);
  cr_assert_not(ds_compute_gemm_unaligned(&fp32, &f.model->layers[HEAD]));
  cr_assert_float_eq(ds_compute_fwd_ns(&fp32, &f.model->layers[HEAD], 1), 200000, 1e-6);
  cr_assert_float_eq(ds_compute_fwd_ns(&fp32, &f.model->layers[HEAD8], 1), 200000, 1e-6);
  struct ds_compute half = init(&f, DS_DTYPE_FP16, DS_AMP_NONE);
  cr_assert_not(ds_compute_gemm_unaligned(&half, &f.model->layers[HEAD8]));
  cr_assert_not(ds_compute_gemm_unaligned(&half, &f.model->layers[MEM]));
  cr_assert_float_eq(ds_compute_fwd_ns(&half, &f.model->layers[MEM], 1), 10000, 1e-6);
  teardown(&f);
  setup(&f, 0);
  struct ds_compute none = init(&f, DS_DTYPE_FP16, DS_AMP_NONE);
  cr_assert_not(ds_compute_gemm_unaligned(&none, &f.model->layers[HEAD]));
  cr_assert_float_eq(ds_compute_fwd_ns(&none, &f.model->layers[HEAD], 1), 100000, 1e-6);
  teardown(&f);
}

Test(xfmr_kernels, bias_reductions_and_copies_are_backward_kernels_of_their_own) {
  /* fc in fp32 at batch 2: forward 4e9 / 10e12 = 400 us, untouched.
   * Backward: the math 8e9 / 10e12 = 800 us (its bytes, 2 x 80 MB + 8 kB,
   * take 160 us), then the reduction 2 x 8 MB = 16 MB, 16 us, and the
   * copies 2 x 4 MB, 8 us: 824 us. In fp16 the gradients are half: 8 + 4
   * us over 400 us of math. With a 5 us kernel overhead each of the two
   * kernels pays it: 24 + 10 us. A layer without the keys adds nothing. */
  struct fixture f;
  setup(&f, 0.25);
  struct ds_compute c = init(&f, DS_DTYPE_FP32, DS_AMP_NONE);
  const struct ds_layer *fc = &f.model->layers[FC];
  cr_assert_float_eq(ds_compute_fwd_ns(&c, fc, 2), 400000, 1e-6);
  cr_assert_float_eq(ds_compute_bwd_extra_ns(&c, fc, 2), 24000, 1e-6);
  cr_assert_float_eq(ds_compute_bwd_ns(&c, fc, 2), 824000, 1e-6);
  cr_assert_float_eq(ds_compute_bwd_extra_ns(&c, &f.model->layers[HEAD8], 2), 0, 1e-9);
  struct ds_compute half = init(&f, DS_DTYPE_FP16, DS_AMP_NONE);
  cr_assert_float_eq(ds_compute_bwd_extra_ns(&half, fc, 2), 12000, 1e-6);
  cr_assert_float_eq(ds_compute_bwd_ns(&half, fc, 2), 412000, 1e-6);
  c.params.kernel_overhead_ns = 5000;
  cr_assert_float_eq(ds_compute_bwd_extra_ns(&c, fc, 2), 34000, 1e-6);
  teardown(&f);
}

Test(xfmr_kernels, the_losss_copies_are_a_kernel_of_their_own) {
  /* 3 samples in fp32: the loss's two passes over 12 MB of outputs, 24 us,
   * then its copies, 3 x 1 MB: 3 us; 27 MB moved. In fp16 both halve:
   * 12 + 1.5 us. With a 5 us kernel overhead the copies pay their own. */
  struct fixture f;
  setup(&f, 0.25);
  double bytes;
  struct ds_compute c = init(&f, DS_DTYPE_FP32, DS_AMP_NONE);
  cr_assert_float_eq(ds_compute_loss_ns(&c, f.model, 3, &bytes), 27000, 1e-6);
  cr_assert_float_eq(bytes, 27e6, 1e-3);
  struct ds_compute half = init(&f, DS_DTYPE_FP16, DS_AMP_NONE);
  cr_assert_float_eq(ds_compute_loss_ns(&half, f.model, 3, &bytes), 13500, 1e-6);
  cr_assert_float_eq(bytes, 13.5e6, 1e-3);
  c.params.kernel_overhead_ns = 5000;
  cr_assert_float_eq(ds_compute_loss_ns(&c, f.model, 3, &bytes), 37000, 1e-6);
  teardown(&f);
}

Test(xfmr_kernels, bad_keys_are_located) {
  static const char *const bad[][2] = {
      {"    gemm_align: 3\n", "gemm_align 1, 2, 4 or 8"},
      {"    gemm_align: x\n", ":8:"},
      {"    bwd_reduce_bytes: -1\n",
       ":8:23: key 'layers[0].bwd_reduce_bytes': expected an integer from 0 to 1000000000000000, "
       "got -1"},
      {"    bwd_copy_bytes: 1.5\n", ":8:"},
  };
  struct ds_model *m = NULL;
  struct ds_err err = {0};
  const char *negative_copy =
      "schema_version: 1\nname: b\nsample: s\ndefault_batch: 1\n"
      "optimizer: sgd\nloss_copy_bytes: -5\nlayers:\n  - name: l\n"
      "    fwd_flops: 1\n    bwd_flops: 1\n    fwd_bytes: 1\n"
      "    act_bytes: 0\n    params:\n      - {name: w, numel: 1}\n";
  cr_assert_eq(ds_test_load_model_text(negative_copy, &m, &err), DS_EINPUT);
  cr_assert(strstr(err.msg, "loss_copy_bytes") && strstr(err.msg, ":6:"), "%s", err.msg);
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    char text[1024];
    snprintf(text, sizeof text,
             "schema_version: 1\nname: b\nsample: s\ndefault_batch: 1\noptimizer: sgd\n"
             "layers:\n  - name: l\n%s    class: matmul\n    fwd_flops: 1\n    bwd_flops: 1\n"
             "    fwd_bytes: 1\n    act_bytes: 0\n    params:\n      - {name: w, numel: 1}\n",
             bad[i][0]);
    m = NULL;
    err = (struct ds_err){0};
    cr_assert_eq(ds_test_load_model_text(text, &m, &err), DS_EINPUT, "%s", bad[i][0]);
    cr_assert(strstr(err.msg, bad[i][1]), "%s: %s", bad[i][0], err.msg);
  }
}

Test(xfmr_kernels, gpt2s_lm_head_on_h200_runs_at_the_fitted_rate) {
  /* The shipped files end to end: H200's matmul_unaligned_half 0.125
   * (tools/gen_gpus.py: 123.2 / 989.4 TFLOP/s), GPT-2's lm_head exported
   * with gemm_align 1 and 2 x 1024 x 768 x 50257 FLOPs per sample. At
   * batch 8 under --amp bf16 its forward's math is 632.38 GFLOP /
   * (989.4e12 x 0.125) = 5.113 ms, plus the kernel overhead, autocast's
   * cast of its input (a kernel of its own) and of wte's weight it shares
   * (tied_params: 50257 x 768 elements, 4 B read and 2 B written, a kernel
   * of its own at the roofline); in fp32 the rule is off. */
  struct ds_topo *topo;
  struct ds_model *model;
  struct ds_err err = {0};
  cr_assert_eq(ds_topo_load("validation/topologies/nd-h200-v5.yaml", "topologies/gpus.yaml",
                            &topo, &err), DS_OK,
               "%s", err.msg);
  cr_assert_eq(ds_model_load("models/gpt2.yaml", &model, &err), DS_OK, "%s", err.msg);
  cr_assert_float_eq(topo->gpu.eff.matmul_unaligned_half, 0.125, 1e-9);
  const struct ds_layer *head = NULL;
  for (int32_t i = 0; i < model->n_layers; i++)
    if (strcmp(model->layers[i].name, "lm_head") == 0) head = &model->layers[i];
  cr_assert_not_null(head);
  cr_assert_eq(head->gemm_align, 1);
  cr_assert_float_eq(head->fwd_flops, 2.0 * 1024 * 768 * 50257, 1);
  struct ds_compute c;
  cr_assert_eq(ds_compute_init(topo, DS_DTYPE_FP32, DS_AMP_BF16, &c, &err), DS_OK, "%s",
               err.msg);
  cr_assert(ds_compute_gemm_unaligned(&c, head));
  double math_ns = 8 * head->fwd_flops / (989.4e12 * 0.125) * 1e9;
  double cast_ns = ds_compute_class_kernel_ns(&c, DS_LAYER_MEMORY, 0, 8 * head->amp_cast_bytes);
  double tied_bytes, tied_ns = ds_compute_weight_cast_ns(&c, head, &tied_bytes);
  cr_assert_float_eq(tied_bytes, 50257.0 * 768 * 6, 0.5);
  cr_assert_float_eq(tied_ns, ds_compute_class_kernel_ns(&c, DS_LAYER_MEMORY, 0, tied_bytes),
                     1e-9);
  cr_assert_float_eq(ds_compute_fwd_ns(&c, head, 8),
                     math_ns + c.params.kernel_overhead_ns + cast_ns + tied_ns, 1e-6 * math_ns);
  struct ds_compute fp32;
  cr_assert_eq(ds_compute_init(topo, DS_DTYPE_FP32, DS_AMP_NONE, &fp32, &err), DS_OK, "%s",
               err.msg);
  cr_assert_not(ds_compute_gemm_unaligned(&fp32, head));
  ds_model_free(model);
  ds_topo_free(topo);
}

/* An unfused attention core (compute.h): its batched products at the
 * attention class's rate, its other vectorised kernels at the memory's,
 * its kernels off the vectorised path at theirs, the times added. Per
 * sample: core, products forward 2 kernels, 4 GFLOP, 8 MB (4 MB under
 * autocast), backward 4 kernels, 8 GFLOP, 16 MB (8 MB); the rest forward 3
 * kernels, 30 MB (20 MB), backward 4 kernels, 50 MB (30 MB); 10 MB of
 * strided elementwise kernels (5e6 operand-elements) forward: op_fwd_bytes
 * 48 MB, amp_fwd_bytes 32 MB. old: the same layer without the parts. */
static const char *attn_text =
    "schema_version: 1\nname: at\nsample: s\ndefault_batch: 1\noptimizer: sgd\nlayers:\n"
    "  - name: w\n    class: matmul\n    fwd_flops: 1\n    bwd_flops: 2\n    fwd_bytes: 1\n"
    "    act_bytes: 0\n    params:\n      - {name: w, numel: 1}\n"
    "  - name: core\n    class: attention\n    fwd_flops: 4000000000\n"
    "    bwd_flops: 8000000000\n    fwd_bytes: 48000000\n    act_bytes: 0\n"
    "    op_fwd_bytes: 48000000\n    amp_fwd_bytes: 32000000\n    amp_cast_bytes: 0\n"
    "    amp_grad_cast_bytes: 0\n"
    "    attn_products: {fwd: [2, 4000000000, 8000000, 4000000], "
    "bwd: [4, 8000000000, 16000000, 8000000]}\n"
    "    attn_rest: {fwd: [3, 30000000, 20000000], bwd: [4, 50000000, 30000000]}\n"
    "    legacy_ew: {fwd: [10000000, 5000000, 0]}\n    params: []\n"
    "  - name: old\n    class: attention\n    fwd_flops: 4000000000\n"
    "    bwd_flops: 8000000000\n    fwd_bytes: 48000000\n    act_bytes: 0\n"
    "    op_fwd_bytes: 48000000\n    params: []\n";

enum { ATTN_CORE = 1, ATTN_OLD = 2 };

Test(xfmr_kernels, an_attention_core_is_its_products_plus_the_rest) {
  /* TestGPU at 1 GHz (set here: legacy_ew's rate is per SM cycle), 10
   * SMs. fp32, batch 1: the products 4e9 / 10e12 = 400 us (their 8 MB, 8
   * us, under it); the rest 30 MB / 1000 GB/s = 30 us; the strided
   * kernels 5e6 x DS_LEGACY_STRIDED_CYCLES_FP32 cycles / (10 x 1e9) (their
   * 10 MB take 10 us at the roofline): 400 + 30 + 124 = 554 us, of which
   * the products' 400 us are SM-bound. The old rule takes one kernel:
   * max(400 us, 48 MB = 48 us) = 400. Backward at batch 2: 16e9 / 10e12 =
   * 1600 us (32 MB under it) + 100 MB of the rest, 100 us: 1700 us (old:
   * max(1600, 2 x 96 MB = 192 us) = 1600). */
  struct ds_model *m;
  struct ds_topo *topo;
  struct ds_err err = {0};
  cr_assert_eq(ds_test_load_model_text(attn_text, &m, &err), DS_OK, "%s", err.msg);
  cr_assert_eq(ds_topo_load("tests/data/tiny-topo.yaml", NULL, &topo, &err), DS_OK, "%s",
               err.msg);
  const struct ds_layer *core = &m->layers[ATTN_CORE], *old = &m->layers[ATTN_OLD];
  cr_assert(ds_layer_attn_parts(core));
  cr_assert_not(ds_layer_attn_parts(old));
  struct ds_compute c;
  cr_assert_eq(ds_compute_init(topo, DS_DTYPE_FP32, DS_AMP_NONE, &c, &err), DS_OK, "%s",
               err.msg);
  c.sm_clock_hz = 1e9;
  double legacy = 5e6 * DS_LEGACY_STRIDED_CYCLES_FP32 / 1e10 * 1e9;
  cr_assert_float_eq(legacy, 124000, 1e-6);
  cr_assert_float_eq(ds_compute_fwd_ns(&c, core, 1), 400000 + 30000 + legacy, 1e-6);
  cr_assert_float_eq(ds_compute_sm_bound_ns(&c, core, 0, 1), 400000, 1e-6);
  cr_assert_float_eq(ds_compute_fwd_ns(&c, old, 1), 400000, 1e-6);
  cr_assert_float_eq(ds_compute_bwd_ns(&c, core, 2), 1700000, 1e-6);
  cr_assert_float_eq(ds_compute_bwd_ns(&c, old, 2), 1600000, 1e-6);
  /* --amp fp16: the products on the half rate, 4e9 / 20e12 = 200 us; the
   * rest's autocast bytes, 20 MB: 20 us; the strided kernels at the 2-byte
   * elements' rate (the layer's autocast bytes are 2/3 of its fp32 ones),
   * 5e6 x DS_LEGACY_STRIDED_CYCLES (0.212) / 1e10 s = 106 us: 326 us. Backward,
   * batch 1: 8e9 / 20e12 = 400 us + 30 us. */
  struct ds_compute amp;
  cr_assert_eq(ds_compute_init(topo, DS_DTYPE_FP32, DS_AMP_FP16, &amp, &err), DS_OK, "%s",
               err.msg);
  amp.sm_clock_hz = 1e9;
  cr_assert_float_eq(ds_compute_fwd_ns(&amp, core, 1), 326000, 1e-6);
  cr_assert_float_eq(ds_compute_bwd_ns(&amp, core, 1), 430000, 1e-6);
  /* A 5 us kernel overhead: each kernel pays it. Forward: the products' 2,
   * the rest's 3, the strided kernels' one (ds_legacy_ew_ns): +30 us. Backward: 4 + 4: +40
   * us. No clock (TestGPU's own): the strided kernels' 10 MB join the
   * rest's roofline, 400 + 40 + 25 = 465 us. */
  c.params.kernel_overhead_ns = 5000;
  cr_assert_float_eq(ds_compute_fwd_ns(&c, core, 1), 410000 + 45000 + legacy + 5000, 1e-6);
  cr_assert_float_eq(ds_compute_bwd_ns(&c, core, 2), 1740000, 1e-6);
  c.sm_clock_hz = 0;
  cr_assert_float_eq(ds_compute_fwd_ns(&c, core, 1), 465000, 1e-6);
  ds_model_free(m);
  ds_topo_free(topo);
}

/* A weight and two cores as attn_text's, the second saving a 2 MB bool dropout mask
 * (act_int_bytes) that its rest writes forward and reads backward. */
static const char *masked_core_text =
    "schema_version: 1\nname: at\nsample: s\ndefault_batch: 1\noptimizer: sgd\nlayers:\n"
    "  - name: w\n    class: matmul\n    fwd_flops: 1\n    bwd_flops: 2\n    fwd_bytes: 1\n"
    "    act_bytes: 0\n    params:\n      - {name: w, numel: 1}\n"
    "  - name: plain\n    class: attention\n    fwd_flops: 4000000000\n"
    "    bwd_flops: 8000000000\n    fwd_bytes: 48000000\n    act_bytes: 0\n"
    "    op_fwd_bytes: 48000000\n"
    "    attn_products: {fwd: [2, 4000000000, 8000000, 4000000], "
    "bwd: [4, 8000000000, 16000000, 8000000]}\n"
    "    attn_rest: {fwd: [3, 30000000, 20000000], bwd: [4, 50000000, 30000000]}\n"
    "    params: []\n"
    "  - name: masked\n    class: attention\n    fwd_flops: 4000000000\n"
    "    bwd_flops: 8000000000\n    fwd_bytes: 48000000\n    act_bytes: 2000000\n"
    "    act_int_bytes: 2000000\n    op_fwd_bytes: 48000000\n"
    "    attn_products: {fwd: [2, 4000000000, 8000000, 4000000], "
    "bwd: [4, 8000000000, 16000000, 8000000]}\n"
    "    attn_rest: {fwd: [3, 30000000, 20000000], bwd: [4, 50000000, 30000000]}\n"
    "    params: []\n";

Test(xfmr_kernels, a_half_dtype_leaves_the_cores_dropout_mask_its_byte) {
  /* --dtype fp16, batch 1, 1000 GB/s: the plain core's rest moves 30 / 2 =
   * 15 MB forward and 25 MB backward; the masked one's (30 - 2) / 2 + 2 =
   * 16 MB and (50 - 2) / 2 + 2 = 26 MB: 1 us more each way (the products
   * the same). In fp32 the two are the same. */
  struct ds_model *m;
  struct ds_topo *topo;
  struct ds_err err = {0};
  cr_assert_eq(ds_test_load_model_text(masked_core_text, &m, &err), DS_OK, "%s", err.msg);
  cr_assert_eq(ds_topo_load("tests/data/tiny-topo.yaml", NULL, &topo, &err), DS_OK, "%s",
               err.msg);
  const struct ds_layer *plain = &m->layers[1], *masked = &m->layers[2];
  struct ds_compute half, fp32;
  cr_assert_eq(ds_compute_init(topo, DS_DTYPE_FP16, DS_AMP_NONE, &half, &err), DS_OK, "%s",
               err.msg);
  cr_assert_eq(ds_compute_init(topo, DS_DTYPE_FP32, DS_AMP_NONE, &fp32, &err), DS_OK, "%s",
               err.msg);
  cr_assert_float_eq(ds_compute_fwd_ns(&half, masked, 1) - ds_compute_fwd_ns(&half, plain, 1),
                     1000, 1e-6);
  cr_assert_float_eq(ds_compute_bwd_ns(&half, masked, 1) - ds_compute_bwd_ns(&half, plain, 1),
                     1000, 1e-6);
  cr_assert_float_eq(ds_compute_fwd_ns(&fp32, masked, 1), ds_compute_fwd_ns(&fp32, plain, 1),
                     1e-6);
  cr_assert_float_eq(ds_compute_bwd_ns(&fp32, masked, 1), ds_compute_bwd_ns(&fp32, plain, 1),
                     1e-6);
  ds_model_free(m);
  ds_topo_free(topo);
}

Test(xfmr_kernels, bad_attention_parts_are_located) {
  static const char *const bad[][2] = {
      {"    class: matmul\n    attn_products: {fwd: [1, 1, 1, 1], bwd: [0, 0, 0, 0]}\n"
       "    attn_rest: {fwd: [0, 0, 0], bwd: [0, 0, 0]}\n",
       ":10:20: key 'layers[0].attn_products': attn_products and attn_rest are for attention "
       "cores"},
      {"    class: attention\n    attn_products: {fwd: [1, 1, 1, 1], bwd: [0, 0, 0, 0]}\n",
       "expected attn_products and attn_rest together"},
      {"    class: attention\n    attn_products: {fwd: [1, 1, 1], bwd: [0, 0, 0, 0]}\n"
       "    attn_rest: {fwd: [0, 0, 0], bwd: [0, 0, 0]}\n",
       "key 'layers[0].attn_products.fwd': expected [kernels, FLOPs, bytes, amp bytes], got 3 "
       "numbers"},
      {"    class: attention\n    attn_products: {fwd: [1, 1, 1, 1]}\n"
       "    attn_rest: {fwd: [0, 0, 0], bwd: [0, 0, 0]}\n",
       "missing key 'bwd'"},
      {"    class: attention\n    attn_products: [1, 1, 1, 1]\n"
       "    attn_rest: {fwd: [0, 0, 0], bwd: [0, 0, 0]}\n",
       "expected attn_products as a map of fwd and bwd"},
      {"    class: attention\n    attn_products: {fwd: [0, 0, 0, 0], bwd: [0, 0, 0, 0]}\n"
       "    attn_rest: {fwd: [0, 0, 0], bwd: [0, 0, 0]}\n",
       "expected at least one fwd kernel in attn_products"},
      {"    class: attention\n    attn_products: {fwd: [2, 2, 1, 1], bwd: [0, 0, 0, 0]}\n"
       "    attn_rest: {fwd: [0, 0, 0], bwd: [0, 0, 0]}\n",
       "FLOPs at most the layer's fwd_flops (1) and bwd_flops (1)"},
      {"    class: attention\n    attn_products: {fwd: [2, 1, 3, 1], bwd: [0, 0, 0, 0]}\n"
       "    attn_rest: {fwd: [1, 9, 1], bwd: [0, 0, 0]}\n",
       "at most the layer's fwd_bytes (1), got 12"},
      {"    class: attention\n    attn_products: {fwd: [2, 1, 1, 1], bwd: [0, 0, 0, 0]}\n"
       "    attn_rest: {fwd: [1, -1, 1], bwd: [0, 0, 0]}\n",
       "expected an integer from 0 to"},
      /* FLOPs or bytes with no kernel to run them would be dropped */
      {"    class: attention\n    attn_products: {fwd: [1, 1, 0, 0], bwd: [0, 1, 0, 0]}\n"
       "    attn_rest: {fwd: [0, 0, 0], bwd: [0, 0, 0]}\n",
       "expected at least one bwd kernel in attn_products where it has FLOPs or bytes"},
      {"    class: attention\n    attn_products: {fwd: [1, 1, 0, 0], bwd: [0, 0, 0, 0]}\n"
       "    attn_rest: {fwd: [0, 0, 0], bwd: [0, 5, 0]}\n",
       ":11:16: key 'layers[0].attn_rest': expected at least one bwd kernel in attn_rest where "
       "it has bytes"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    char text[1024];
    snprintf(text, sizeof text,
             "schema_version: 1\nname: b\nsample: s\ndefault_batch: 1\noptimizer: sgd\n"
             "layers:\n  - name: l\n    fwd_flops: 1\n%s    bwd_flops: 1\n"
             "    fwd_bytes: 1\n    act_bytes: 0\n    params:\n      - {name: w, numel: 1}\n",
             bad[i][0]);
    struct ds_model *m = NULL;
    struct ds_err err = {0};
    cr_assert_eq(ds_test_load_model_text(text, &m, &err), DS_EINPUT, "%s", bad[i][0]);
    cr_assert(strstr(err.msg, bad[i][1]), "%s: %s", bad[i][0], err.msg);
  }
}

/* An attention part's bytes or amp bytes written with a unit ("12MiB") are
 * refused at their line and column naming the file and the key, with the
 * reminder that a model file's sizes are integer bytes per sample, also
 * through the CLI (exit 2); its kernels and FLOPs are no bytes: no
 * reminder there. */
#define PARTS(products, rest)                                                               \
  "schema_version: 1\nname: b\nsample: s\ndefault_batch: 1\noptimizer: sgd\n"               \
  "layers:\n  - name: l\n    class: attention\n    fwd_flops: 1\n    bwd_flops: 1\n"          \
  "    fwd_bytes: 1\n    act_bytes: 0\n    attn_products: " products "\n"                   \
  "    attn_rest: " rest "\n    params:\n      - {name: w, numel: 1}\n"
Test(xfmr_kernels, a_byte_count_with_a_unit_says_integer_bytes) {
  ds_test_assert_bytes_hint(PARTS("{fwd: [1, 1, 12MiB, 0], bwd: [0, 0, 0, 0]}",
                                  "{fwd: [0, 0, 0], bwd: [0, 0, 0]}"),
                            ":13:33: key 'layers[0].attn_products.fwd[2]'", 1);
  ds_test_assert_bytes_hint(PARTS("{fwd: [1, 1, 0, 0], bwd: [0, 0, 0, 12MiB]}",
                                  "{fwd: [0, 0, 0], bwd: [0, 0, 0]}"),
                            ":13:55: key 'layers[0].attn_products.bwd[3]'", 1);
  ds_test_assert_bytes_hint(PARTS("{fwd: [1, 1, 0, 0], bwd: [0, 0, 0, 0]}",
                                  "{fwd: [1, 12MiB, 0], bwd: [0, 0, 0]}"),
                            ":14:26: key 'layers[0].attn_rest.fwd[1]'", 1);
  ds_test_assert_bytes_hint(PARTS("{fwd: [1, 1, 0, 0], bwd: [0, 0, 0, 0]}",
                                  "{fwd: [1, 0, 0], bwd: [0, 0, 12MiB]}"),
                            ":14:45: key 'layers[0].attn_rest.bwd[2]'", 1);
  static const char *const counts[] = {
      PARTS("{fwd: [12MiB, 1, 0, 0], bwd: [0, 0, 0, 0]}", "{fwd: [0, 0, 0], bwd: [0, 0, 0]}"),
      PARTS("{fwd: [1, 12MiB, 0, 0], bwd: [0, 0, 0, 0]}", "{fwd: [0, 0, 0], bwd: [0, 0, 0]}"),
      PARTS("{fwd: [1, 1, 0, 0], bwd: [0, 0, 0, 0]}", "{fwd: [12MiB, 0, 0], bwd: [0, 0, 0]}"),
  };
  for (size_t i = 0; i < sizeof counts / sizeof *counts; i++) {
    struct ds_model *m = NULL;
    struct ds_err err = {0};
    cr_assert_eq(ds_test_load_model_text(counts[i], &m, &err), DS_EINPUT, "case %zu", i);
    cr_assert(strstr(err.msg, "got \"12MiB\"") && !strstr(err.msg, "integer bytes"),
              "case %zu: %s", i, err.msg);
  }
}
#undef PARTS

Test(xfmr_kernels, the_shipped_cores_products_are_their_flops) {
  /* The re-exported files: every attention core of GPT-2 and BERT runs
   * two products forward and four backward (two per product), which hold
   * all its FLOPs (flop_counter counts no elementwise op); softmax's
   * backward is two of the rest's kernels. GPT-2's core per sample: QK^T
   * and PV each 2 x 12 heads x 1024^2 x 64 FLOPs; their bytes in fp32:
   * QK^T reads Q and K (1024 x 768 each) and writes the scores (12 x
   * 1024^2), PV reads the probabilities and V and writes the output. */
  static const char *const files[] = {"models/gpt2.yaml", "models/bert-base.yaml",
                                      "models/bert-base-squad.yaml",
                                      "models/bert-large-squad.yaml",
                                      "models/bert-base-squad-dle.yaml",
                                      "models/bert-large-squad-dle.yaml"};
  static const int layers[] = {12, 12, 12, 24, 12, 24};
  for (size_t k = 0; k < sizeof files / sizeof *files; k++) {
    struct ds_model *m;
    struct ds_err err = {0};
    cr_assert_eq(ds_model_load(files[k], &m, &err), DS_OK, "%s", err.msg);
    int cores = 0;
    for (int32_t i = 0; i < m->n_layers; i++) {
      const struct ds_layer *l = &m->layers[i];
      if (l->cls != DS_LAYER_ATTENTION) continue;
      cores++;
      cr_assert(ds_layer_attn_parts(l), "%s %s", files[k], l->name);
      cr_assert_eq(l->attn_products[DS_ATTN_FWD].kernels, 2, "%s", l->name);
      cr_assert_eq(l->attn_products[DS_ATTN_BWD].kernels, 4, "%s", l->name);
      cr_assert_float_eq(l->attn_products[DS_ATTN_FWD].flops, l->fwd_flops, 0.5);
      cr_assert_float_eq(l->attn_products[DS_ATTN_BWD].flops, l->bwd_flops, 0.5);
      if (k == 0) {
        double s = 12.0 * 1024 * 1024, t = 1024.0 * 768;
        cr_assert_float_eq(l->attn_products[DS_ATTN_FWD].flops, 2 * 2 * s * 64, 0.5);
        cr_assert_float_eq(l->attn_products[DS_ATTN_FWD].bytes, 4 * 2 * (2 * t + s), 0.5);
      }
    }
    cr_assert_eq(cores, layers[k], "%s", files[k]);
    ds_model_free(m);
  }
}
