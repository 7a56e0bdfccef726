/*
 * Tests for the elementwise kernels off PyTorch's vectorised path
 * (sim/train/legacy_ew.c, legacy_ew.h): the model file's legacy_ew and
 * nhwc_legacy_ew keys, and their time per SM cycle in the forward, the
 * backward and autograd's additions, against the roofline where that is
 * longer or the GPU has no clock. Expected values are worked by hand on
 * made-up GPUs (ds_test_clock_gpus): ClockGPU, 4 SMs at 1000 MHz (4e9 SM
 * cycles/s) and 1000 GB/s reached in full, no kernel overhead; the rates
 * are legacy_ew.h's: in fp32 runs (elementwise_kernel<128, 2>) 0.248 SM
 * cycles per strided operand-element and 0.624 per transposed one, with
 * 2-byte elements (<128, 4>) 0.212 and 0.561; under --amp 0.446 per cast
 * one (the dynamic-casting kernel).
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "sim/train/compute.h"
#include "sim/train/legacy_ew.h"
#include "sim/train/model.h"
#include "tests/support.h"

/* gate: per sample, its forward ops move 1e6 bytes, 8e5 of them in kernels
 * off the vectorised path with 40000 strided operand-elements (in
 * channels-last the same bytes as 40000 transposed ones); its backward's
 * 6e5 bytes all off the path (10000 transposed); its additions' 3e5 bytes
 * too (10000 of each kind). plain: the same layer without the keys. half:
 * half its backward's bytes off the path (3e5, 10000 transposed) and a
 * third of its additions' (1e5, 10000 strided). fp32add: a forward all off
 * the path (8e5 B, 40000 strided) that autocast keeps in fp32 (its
 * amp_fwd_bytes are its op_fwd_bytes). copier: a backward of layout copies
 * only, 5e5 bytes, 4e5 of them a transposing clone (20000 transposed).
 * maskadd: a forward of 1e6 bytes (6e5 under autocast), 8e5 of them off the
 * path with 40000 strided operand-elements, 30000 of which mix dtypes under
 * autocast (an attention mask's add: legacy_ew.h's cast kind, 0.446).
 * resadd: a forward of 1e6 bytes (8e5 under autocast), 5e5 of those in
 * contiguous ops that mix dtypes under autocast with 40000 operand-elements
 * (amp_cast_ew: GPT-2's residual adds, unrolled_elementwise_kernel at
 * 0.334). */
static const char *model_text =
    "schema_version: 1\nname: t\nsample: s\ndefault_batch: 1\noptimizer: sgd\nlayers:\n"
    "  - {name: gate, class: memory, fwd_flops: 0, bwd_flops: 0, fwd_bytes: 1000000,"
    " act_bytes: 0, op_fwd_bytes: 1000000, bwd_bytes: 600000, amp_bwd_bytes: 300000,"
    " bwd_accum_bytes: 300000, amp_bwd_accum_bytes: 150000,"
    " legacy_ew: {fwd: [800000, 40000, 0], bwd: [600000, 0, 10000],"
    " accum: [300000, 10000, 10000]},"
    " nhwc_legacy_ew: {fwd: [800000, 0, 40000]}, params: []}\n"
    "  - {name: plain, class: memory, fwd_flops: 0, bwd_flops: 0, fwd_bytes: 1000000,"
    " act_bytes: 0, op_fwd_bytes: 1000000, bwd_bytes: 600000, amp_bwd_bytes: 300000,"
    " bwd_accum_bytes: 300000, amp_bwd_accum_bytes: 150000,"
    " params: [{name: w, numel: 1}]}\n"
    "  - {name: half, class: memory, fwd_flops: 0, bwd_flops: 0, fwd_bytes: 1000000,"
    " act_bytes: 0, op_fwd_bytes: 1000000, bwd_bytes: 600000, amp_bwd_bytes: 300000,"
    " bwd_accum_bytes: 300000, amp_bwd_accum_bytes: 150000,"
    " legacy_ew: {bwd: [300000, 0, 10000], accum: [100000, 10000, 0]}, params: []}\n"
    "  - {name: fp32add, class: memory, fwd_flops: 0, bwd_flops: 0, fwd_bytes: 800000,"
    " act_bytes: 0, op_fwd_bytes: 800000, amp_fwd_bytes: 800000, amp_cast_bytes: 0,"
    " amp_grad_cast_bytes: 0, legacy_ew: {fwd: [800000, 40000, 0]}, params: []}\n"
    "  - {name: copier, class: memory, fwd_flops: 0, bwd_flops: 0, fwd_bytes: 0,"
    " act_bytes: 0, bwd_bytes: 0, amp_bwd_bytes: 0, bwd_copy_bytes: 500000,"
    " legacy_ew: {copy: [400000, 0, 20000]}, params: []}\n"
    "  - {name: maskadd, class: memory, fwd_flops: 0, bwd_flops: 0, fwd_bytes: 1000000,"
    " act_bytes: 0, op_fwd_bytes: 1000000, amp_fwd_bytes: 600000, amp_cast_bytes: 0,"
    " amp_grad_cast_bytes: 0, legacy_ew: {fwd: [800000, 40000, 0, 30000]}, params: []}\n"
    "  - {name: resadd, class: memory, fwd_flops: 0, bwd_flops: 0, fwd_bytes: 1000000,"
    " act_bytes: 0, op_fwd_bytes: 1000000, amp_fwd_bytes: 800000, amp_cast_bytes: 0,"
    " amp_grad_cast_bytes: 0, amp_cast_ew: [500000, 40000], params: []}\n";

static void setup(struct ds_test_compute *f, const char *gpu, enum ds_amp amp) {
  ds_test_compute_setup(f, ds_test_clock_gpus, gpu, 0.5, 0, model_text, DS_DTYPE_FP32, amp);
}

Test(legacy_ew, the_keys_are_read_per_layout_and_pass) {
  struct ds_test_compute f;
  setup(&f, "ClockGPU", DS_AMP_NONE);
  const struct ds_layer *g = &f.m->layers[0], *p = &f.m->layers[1];
  cr_assert_float_eq(g->legacy[0][DS_LEGACY_FWD].bytes, 800000, 0);
  cr_assert_float_eq(g->legacy[0][DS_LEGACY_FWD].strided_elems, 40000, 0);
  cr_assert_float_eq(g->legacy[0][DS_LEGACY_BWD].transposed_elems, 10000, 0);
  cr_assert_float_eq(g->legacy[0][DS_LEGACY_ACCUM].strided_elems, 10000, 0);
  cr_assert_float_eq(g->legacy[1][DS_LEGACY_FWD].transposed_elems, 40000, 0);
  cr_assert_float_eq(g->legacy[1][DS_LEGACY_BWD].bytes, 0, 0, "a pass not given is zero");
  for (int layout = 0; layout < 2; layout++)
    for (int pass = 0; pass < DS_LEGACY_PASSES; pass++)
      cr_assert_float_eq(p->legacy[layout][pass].bytes, 0, 0, "no keys, no counts");
  ds_test_compute_free(&f);
}

/* Batch 10, fp32. Forward: the vectorised rest, (1e6 - 8e5) x 10 = 2e6 B,
 * takes 2000 ns; the others 40000 x 10 x 0.248 = 99200 cycles = 24800 ns
 * against their 8e6 B = 8000 ns. The plain layer: all 1e7 B at the
 * roofline, 10000 ns. Backward: no vectorised bytes left (no kernel); 10000
 * x 10 x 0.624 = 62400 cycles = 15600 ns against 6e6 B = 6000 ns; the
 * additions (10000 x 0.248 + 10000 x 0.624) x 10 = 87200 cycles = 21800 ns
 * against 3e6 B = 3000 ns. The plain layer's backward: 6e6 B + the addition's 3e6 B, and
 * its weight (read, gradient written: 8 B) = 9008 ns. */
Test(legacy_ew, kernels_off_the_vectorised_path_run_at_the_sm_rate) {
  struct ds_test_compute f;
  setup(&f, "ClockGPU", DS_AMP_NONE);
  const struct ds_layer *g = &f.m->layers[0], *p = &f.m->layers[1];
  double bytes;
  cr_assert_float_eq(ds_legacy_ew_ns(&f.c, g, DS_LEGACY_FWD, 10, &bytes), 24800, 1e-6);
  cr_assert_float_eq(bytes, 8e6, 1e-6);
  cr_assert_float_eq(ds_compute_fwd_ns(&f.c, g, 10), 2000 + 24800, 1e-6);
  cr_assert_float_eq(ds_compute_fwd_ns(&f.c, p, 10), 10000 + 4e-3, 1e-6,
                     "without the keys: one roofline (and its weight's 4 B)");
  cr_assert_float_eq(ds_compute_bwd_extra_ns(&f.c, g, 10), 21800, 1e-6);
  cr_assert_float_eq(ds_compute_bwd_ns(&f.c, g, 10), 15600 + 21800, 1e-6);
  cr_assert_float_eq(ds_compute_bwd_ns(&f.c, p, 10), 6000 + 8e-3 + 3000, 1e-6);
  ds_test_compute_free(&f);
}

/* --channels-last reads nhwc_legacy_ew: 40000 x 10 x 0.624 = 249600 cycles
 * = 62400 ns; its backward has no counts, so all 6e6 B run at the roofline
 * (6000 ns) and so do the additions (3000 ns). */
Test(legacy_ew, channels_last_takes_the_nhwc_counts) {
  struct ds_test_compute f;
  setup(&f, "ClockGPU", DS_AMP_NONE);
  const struct ds_layer *g = &f.m->layers[0];
  f.c.channels_last = 1;
  cr_assert_float_eq(ds_compute_fwd_ns(&f.c, g, 10), 2000 + 62400, 1e-6);
  cr_assert_float_eq(ds_compute_bwd_ns(&f.c, g, 10), 6000 + 3000, 1e-6);
  f.c.channels_last = 0;
  cr_assert_float_eq(ds_compute_fwd_ns(&f.c, g, 10), 2000 + 24800, 1e-6);
  ds_test_compute_free(&f);
}

/* 1 GB/s: the 8e6 B take 8e6 ns, far beyond the SMs' 99200 cycles on 1000
 * SMs at 2 GHz (49.6 ns), so the forward is the old roofline of all 1e7 B. */
Test(legacy_ew, the_roofline_wins_when_memory_is_slow) {
  struct ds_test_compute f;
  setup(&f, "SlowMemGPU", DS_AMP_NONE);
  const struct ds_layer *g = &f.m->layers[0];
  double bytes;
  cr_assert_float_eq(ds_legacy_ew_ns(&f.c, g, DS_LEGACY_FWD, 10, &bytes), 8e6, 1e-3);
  cr_assert_float_eq(ds_compute_fwd_ns(&f.c, g, 10), 1e7, 1e-3);
  ds_test_compute_free(&f);
}

Test(legacy_ew, a_gpu_without_a_clock_keeps_one_roofline) {
  struct ds_test_compute f;
  setup(&f, "NoClockGPU", DS_AMP_NONE);
  const struct ds_layer *g = &f.m->layers[0];
  double bytes = -1;
  cr_assert_float_eq(ds_legacy_ew_ns(&f.c, g, DS_LEGACY_FWD, 10, &bytes), 0, 0);
  cr_assert_float_eq(bytes, 0, 0);
  cr_assert_float_eq(ds_compute_fwd_ns(&f.c, g, 10), 10000, 1e-6);
  ds_test_compute_free(&f);
}

/* Under --amp fp16 the activations are 2 bytes: the counted bytes halve
 * (8e5 x 10 / 2 = 4e6 B), and the kernel is elementwise_kernel<128, 4>:
 * 40000 x 10 x 0.212 = 84800 cycles = 21200 ns. The forward's vectorised
 * rest is op_fwd_bytes at 2 bytes (the file has no amp_fwd_bytes): 5e6 -
 * 4e6 = 1e6 B = 1000 ns. */
Test(legacy_ew, half_activations_halve_the_bytes_not_the_cycles) {
  struct ds_test_compute f;
  setup(&f, "ClockGPU", DS_AMP_FP16);
  const struct ds_layer *g = &f.m->layers[0];
  double bytes;
  cr_assert_float_eq(ds_legacy_ew_ns(&f.c, g, DS_LEGACY_FWD, 10, &bytes), 21200, 1e-6);
  cr_assert_float_eq(bytes, 4e6, 1e-6);
  cr_assert_float_eq(ds_compute_fwd_ns(&f.c, g, 10), 1000 + 21200, 1e-6);
  ds_test_compute_free(&f);
}

/* Partial passes: half's backward runs its vectorised 3e5 x 10 = 3e6 B
 * (3000 ns) and then 10000 x 10 x 0.624 = 62400 cycles = 15600 ns; its
 * additions 2e5 x 10 = 2e6 B (2000 ns) and then 10000 x 10 x 0.248 = 24800
 * cycles = 6200 ns against their 1e6 B = 1000 ns. */
Test(legacy_ew, a_pass_partly_off_the_path_runs_both_parts) {
  struct ds_test_compute f;
  setup(&f, "ClockGPU", DS_AMP_NONE);
  const struct ds_layer *h = &f.m->layers[2];
  cr_assert_float_eq(ds_compute_bwd_extra_ns(&f.c, h, 10), 2000 + 6200, 1e-6);
  cr_assert_float_eq(ds_compute_bwd_ns(&f.c, h, 10), 3000 + 15600 + 2000 + 6200, 1e-6);
  ds_test_compute_free(&f);
}

/* copier's backward: its copies' vectorised rest, 1e5 x 10 = 1e6 B, 1000
 * ns; the transposing clone 20000 x 10 x 0.624 = 124800 cycles = 31200 ns
 * against its 4e6 B = 4000 ns. Without the count: all 5e6 B, 5000 ns. */
Test(legacy_ew, the_backwards_copies_run_off_the_path) {
  struct ds_test_compute f;
  setup(&f, "ClockGPU", DS_AMP_NONE);
  struct ds_layer *c = &f.m->layers[4];
  cr_assert_float_eq(ds_compute_bwd_extra_ns(&f.c, c, 10), 1000 + 31200, 1e-6);
  cr_assert_float_eq(ds_compute_bwd_ns(&f.c, c, 10), 1000 + 31200, 1e-6);
  memset(&c->legacy[0][DS_LEGACY_COPY], 0, sizeof c->legacy[0][DS_LEGACY_COPY]);
  cr_assert_float_eq(ds_compute_bwd_extra_ns(&f.c, c, 10), 5000, 1e-6);
  ds_test_compute_free(&f);
}

/* A kernel overhead of 1 us: each part off the path is a kernel of its own
 * (one overhead), the vectorised rest another; fp32add's forward is all off
 * the path, so it runs one kernel, not two: 24800 + 1000 ns. */
Test(legacy_ew, each_kernel_pays_one_overhead) {
  struct ds_test_compute f;
  ds_test_compute_setup(&f, ds_test_clock_gpus, "ClockGPU", 0.5, 1, model_text, DS_DTYPE_FP32,
                        DS_AMP_NONE);
  cr_assert_float_eq(ds_compute_fwd_ns(&f.c, &f.m->layers[0], 10), 2000 + 1000 + 24800 + 1000,
                     1e-6);
  cr_assert_float_eq(ds_compute_fwd_ns(&f.c, &f.m->layers[3], 10), 24800 + 1000, 1e-6);
  ds_test_compute_free(&f);
}

/* Under --amp an op autocast keeps in fp32 keeps its bytes: fp32add's
 * amp_fwd_bytes are its op_fwd_bytes (ratio 1), so its 8e6 B take 8000 ns
 * and no vectorised rest is left (had its bytes been halved, 4e6 B would
 * remain as a second kernel); its kernel has 4-byte elements, so the SM
 * time is 40000 x 10 x 0.248 = 99200 cycles = 24800 ns, which binds. */
Test(legacy_ew, autocast_keeps_an_fp32_ops_bytes) {
  struct ds_test_compute f;
  setup(&f, "ClockGPU", DS_AMP_FP16);
  const struct ds_layer *a = &f.m->layers[3];
  double bytes;
  cr_assert_float_eq(ds_legacy_ew_ns(&f.c, a, DS_LEGACY_FWD, 10, &bytes), 24800, 1e-6);
  cr_assert_float_eq(bytes, 8e6, 1e-6);
  cr_assert_float_eq(ds_compute_fwd_ns(&f.c, a, 10), 24800, 1e-6);
  ds_test_compute_free(&f);
}

/* --dtype bf16 (no autocast): 2-byte elements everywhere, so the kernels
 * are elementwise_kernel<128, 4>: the forward 40000 x 10 x 0.212 = 84800
 * cycles = 21200 ns (8e5 x 10 / 2 = 4e6 B, 4000 ns), the backward 10000 x
 * 10 x 0.561 = 56100 cycles = 14025 ns, the additions (10000 x 0.212 +
 * 10000 x 0.561) x 10 = 77300 cycles = 19325 ns; the same layer in fp32
 * takes 24800, 15600 and 21800 ns (above): the rate follows the element
 * size, the run's dtype, not --amp alone. */
Test(legacy_ew, two_byte_elements_keep_the_half_rates) {
  struct ds_test_compute f;
  ds_test_compute_setup(&f, ds_test_clock_gpus, "ClockGPU", 0.5, 0, model_text, DS_DTYPE_BF16,
                        DS_AMP_NONE);
  const struct ds_layer *g = &f.m->layers[0];
  double bytes;
  cr_assert_float_eq(ds_legacy_ew_ns(&f.c, g, DS_LEGACY_FWD, 10, &bytes), 21200, 1e-6);
  cr_assert_float_eq(bytes, 4e6, 1e-6);
  cr_assert_float_eq(ds_legacy_ew_ns(&f.c, g, DS_LEGACY_BWD, 10, &bytes), 14025, 1e-6);
  cr_assert_float_eq(ds_legacy_ew_ns(&f.c, g, DS_LEGACY_ACCUM, 10, &bytes), 19325, 1e-6);
  ds_test_compute_free(&f);
}

/* A file without nhwc_legacy_ew anywhere (a model whose input is not 4-d)
 * keeps its counts under --channels-last; one with some keeps its own. */
Test(legacy_ew, channels_last_falls_back_where_the_file_has_no_nhwc_counts) {
  struct ds_model *m = NULL;
  struct ds_err err = {0};
  char text[1024];
  ds_test_one_layer_model(text, sizeof text, "memory",
                          "    op_fwd_bytes: 10\n    legacy_ew: {fwd: [8, 4, 2]}\n");
  cr_assert_eq(ds_test_load_model_text(text, &m, &err), DS_OK, "%s", err.msg);
  cr_assert_float_eq(m->layers[0].legacy[1][DS_LEGACY_FWD].bytes, 8, 0);
  cr_assert_float_eq(m->layers[0].legacy[1][DS_LEGACY_FWD].transposed_elems, 2, 0);
  ds_model_free(m);
  struct ds_test_compute f;
  setup(&f, "ClockGPU", DS_AMP_NONE);
  cr_assert_float_eq(f.m->layers[2].legacy[1][DS_LEGACY_BWD].bytes, 0, 0,
                     "the file has nhwc counts: half has none of its own");
  ds_test_compute_free(&f);
}

/* maskadd under --amp fp16: its pass keeps 6e5 / 1e6 = 0.6 of its bytes, so
 * 2-byte elements: the 10000 plain strided operand-elements at 0.212 and the
 * 30000 cast ones at 0.446, (10000 x 0.212 + 30000 x 0.446) x 10 = 155000
 * cycles = 38750 ns against their 8e5 x 0.6 x 10 = 4.8e6 B = 4800 ns. Had
 * they no cast count, 40000 x 10 x 0.212 = 84800 cycles = 21200 ns. In an
 * fp32 run nothing mixes dtypes: all 40000 at 0.248, 99200 cycles = 24800
 * ns, as gate's. */
Test(legacy_ew, mixed_dtype_ops_run_the_cast_rate_under_autocast) {
  struct ds_test_compute f;
  setup(&f, "ClockGPU", DS_AMP_FP16);
  struct ds_layer *m = &f.m->layers[5];
  double bytes;
  cr_assert_float_eq(m->legacy[0][DS_LEGACY_FWD].amp_cast_elems, 30000, 0);
  cr_assert_float_eq(ds_legacy_ew_ns(&f.c, m, DS_LEGACY_FWD, 10, &bytes), 38750, 1e-6);
  cr_assert_float_eq(bytes, 4.8e6, 1e-6);
  m->legacy[0][DS_LEGACY_FWD].amp_cast_elems = 0;
  cr_assert_float_eq(ds_legacy_ew_ns(&f.c, m, DS_LEGACY_FWD, 10, &bytes), 21200, 1e-6);
  ds_test_compute_free(&f);
  setup(&f, "ClockGPU", DS_AMP_NONE);
  cr_assert_float_eq(ds_legacy_ew_ns(&f.c, &f.m->layers[5], DS_LEGACY_FWD, 10, &bytes), 24800,
                     1e-6);
  cr_assert_float_eq(bytes, 8e6, 1e-6);
  ds_test_compute_free(&f);
}

/* resadd under --amp fp16, batch 10: its contiguous mixed-dtype ops take
 * 40000 x 10 x 0.334 = 133600 SM cycles = 33400 ns against their 5e5 x 10
 * = 5e6 B at the roofline, 5000 ns; the rest of its autocast bytes, (8e5 -
 * 5e5) x 10 = 3e6 B, 3000 ns: 36400 ns. In an fp32 run those ops are
 * vectorised (nothing mixes dtypes): all 1e7 B at the roofline, 10000 ns;
 * so too under --amp on a GPU without a clock (8e6 B, 8000 ns). */
Test(legacy_ew, contiguous_mixed_dtype_ops_run_the_unrolled_cast_rate_under_autocast) {
  struct ds_test_compute f;
  setup(&f, "ClockGPU", DS_AMP_FP16);
  const struct ds_layer *r = &f.m->layers[6];
  double bytes;
  cr_assert_float_eq(r->amp_cast_ew_bytes, 500000, 0);
  cr_assert_float_eq(r->amp_cast_ew_elems, 40000, 0);
  cr_assert_float_eq(ds_legacy_cast_ew_ns(&f.c, r, 10, &bytes), 33400, 1e-6);
  cr_assert_float_eq(bytes, 5e6, 1e-6);
  cr_assert_float_eq(ds_compute_fwd_ns(&f.c, r, 10), 3000 + 33400, 1e-6);
  cr_assert_float_eq(f.m->layers[5].amp_cast_ew_elems, 0, 0, "absent: zero");
  ds_test_compute_free(&f);
  setup(&f, "ClockGPU", DS_AMP_NONE);
  cr_assert_float_eq(ds_legacy_cast_ew_ns(&f.c, &f.m->layers[6], 10, &bytes), 0, 0);
  cr_assert_float_eq(bytes, 0, 0);
  cr_assert_float_eq(ds_compute_fwd_ns(&f.c, &f.m->layers[6], 10), 10000, 1e-6);
  ds_test_compute_free(&f);
  setup(&f, "NoClockGPU", DS_AMP_FP16);
  cr_assert_float_eq(ds_compute_fwd_ns(&f.c, &f.m->layers[6], 10), 8000, 1e-6);
  ds_test_compute_free(&f);
}

/* Line 13 is the key's line in ds_test_one_layer_model's text (16 after AMP's three). */
#define AMP "    amp_fwd_bytes: 3\n    amp_cast_bytes: 0\n    amp_grad_cast_bytes: 0\n"
Test(legacy_ew, bad_keys_are_located) {
  static const char *const bad[][2] = {
      {"    legacy_ew: [1, 2, 3]\n",
       ":13:16: key 'layers[0].legacy_ew': expected legacy_ew as a map of fwd, bwd, accum, copy"},
      {"    nhwc_legacy_ew: {fwd: [1, 2, 3], back: [1, 2, 3]}\n", "back"},
      {"    legacy_ew: {fwd: [1, 2]}\n", "operand-elements], got 2 numbers"},
      {"    legacy_ew: {fwd: [1, 2, 0, 3, 4]}\n", "operand-elements], got 5 numbers"},
      {"    legacy_ew: {fwd: [1, 2, 0, 3]}\n",
       ":13:32: key 'layers[0].legacy_ew.fwd[3]': expected autocast cast operand-elements at "
       "most the strided ones (2), got 3"},
      {"    bwd_copy_bytes: 2\n    legacy_ew: {copy: [1, 2, 0, 1]}\n",
       ":14:33: key 'layers[0].legacy_ew.copy[3]': expected no fourth number: autocast cast "
       "operand-elements are only for fwd"},
      {"    bwd_bytes: 3\n    amp_bwd_bytes: 2\n    legacy_ew: {bwd: [1, 2, 0, 0]}\n",
       "key 'layers[0].legacy_ew.bwd[3]': expected no fourth number"},
      {"    bwd_accum_bytes: 3\n    amp_bwd_accum_bytes: 2\n    legacy_ew: {accum: [1, 2, 0, 1]}\n",
       "key 'layers[0].legacy_ew.accum[3]': expected no fourth number"},
      {"    legacy_ew: {fwd: [1, 2, 0, -1]}\n",
       "expected an integer from 0 to 1000000000000000, got -1"},
      {"    legacy_ew: {bwd: [1, -2, 3]}\n",
       "key 'layers[0].legacy_ew.bwd[1]': expected an integer from 0 to 1000000000000000, got -2"},
      {"    nhwc_legacy_ew: {fwd: [1, 2]}\n", "key 'layers[0].nhwc_legacy_ew.fwd': expected "
                                              "[bytes"},
      {"    legacy_ew: {accum: [1, 2, x]}\n", ":13:"},
      {"    legacy_ew: {fwd: [1, 3, 0]}\n",
       ":13:26: key 'layers[0].legacy_ew.fwd[1]': expected strided and transposed "
       "operand-elements at most the bytes + 1 (2: each moves at least a byte), got 3 + 0"},
      {"    legacy_ew: {fwd: [1, 1, 1000000000000000]}\n",
       "key 'layers[0].legacy_ew.fwd[2]': expected strided and transposed operand-elements at "
       "most the bytes + 1 (2"},
      {"    legacy_ew: {fwd: 5}\n", "expected [bytes, strided operand-elements"},
      {"    legacy_ew: {fwd: [2, 0, 0]}\n", "fwd bytes at most the layer's fwd_bytes (1), got 2"},
      {"    op_fwd_bytes: 4\n    legacy_ew: {fwd: [5, 0, 0]}\n",
       "fwd bytes at most the layer's op_fwd_bytes (4), got 5"},
      {"    legacy_ew: {bwd: [1, 0, 0]}\n", "no bwd counts on a layer without bwd_bytes"},
      {"    bwd_copy_bytes: 2\n    legacy_ew: {copy: [3, 0, 1]}\n",
       "copy bytes at most the layer's bwd_copy_bytes (2), got 3"},
      {"    bwd_bytes: 3\n    amp_bwd_bytes: 2\n    nhwc_legacy_ew: {accum: [1, 0, 0]}\n",
       "accum bytes at most the layer's bwd_accum_bytes (0), got 1"},
      {"    amp_cast_ew: [1, 2]\n",
       ":13:18: key 'layers[0].amp_cast_ew': expected amp_cast_ew only beside amp_fwd_bytes"},
      {AMP "    amp_cast_ew: [4, 2]\n",
       ":16:18: key 'layers[0].amp_cast_ew': expected amp_cast_ew bytes at most the layer's "
       "amp_fwd_bytes (3), got 4"},
      {AMP "    amp_cast_ew: [1]\n",
       "expected [autocast bytes, operand-elements], got 1 number"},
      {AMP "    amp_cast_ew: [3, 5]\n",
       ":16:22: key 'layers[0].amp_cast_ew[1]': expected operand-elements at most the bytes + 1 (4: each "
       "moves at least a byte), got 5"},
      {AMP "    amp_cast_ew: [1, -2]\n",
       "key 'layers[0].amp_cast_ew[1]': expected an integer from 0 to 1000000000000000, got -2"},
  };
  struct ds_model *m = NULL;
  struct ds_err err = {0};
  char text[1024], label[32];
  ds_test_one_layer_model(text, sizeof text, "memory",
                          "    bwd_accum_bytes: 5\n    amp_bwd_accum_bytes: 3\n"
                          "    legacy_ew: {accum: [3, 2, 1]}\n");
  cr_assert_eq(ds_test_load_model_text(text, &m, &err), DS_OK, "%s", err.msg);
  cr_assert_float_eq(m->layers[0].legacy[0][DS_LEGACY_ACCUM].transposed_elems, 1, 0);
  ds_model_free(m);
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    ds_test_one_layer_model(text, sizeof text, "memory", bad[i][0]);
    snprintf(label, sizeof label, "case %zu", i);
    ds_test_assert_model_refused(text, bad[i][1], label);
  }
}

/* The loss's copies (loss_legacy_ew, a root key): 1e6 B per sample of
 * copies (loss_copy_bytes), 8e5 of them off the vectorised path with 40000
 * strided operand-elements (GPT-2's slice of the logits made contiguous and
 * its backward's copy into the zeroed gradient). The rest of the loss moves
 * nothing here (output_bytes 0). At 10 samples on ClockGPU, fp32: 40000 x
 * 10 x 0.248 = 99200 cycles = 24800 ns (their 8e6 B take 8000 ns at the
 * roofline), and the other 2e6 B 2000 ns: 26800, where one roofline over
 * all 1e7 B took 10000. Under --amp fp16 the copies move half bytes (the
 * logits are half) and run the 2-byte rate: 40000 x 10 x 0.212 = 84800
 * cycles = 21200 ns, the rest 1e6 B 1000 ns. */
static const char *loss_model_text =
    "schema_version: 1\nname: t\nsample: s\ndefault_batch: 1\noptimizer: sgd\n"
    "output_bytes: 0\nloss_copy_bytes: 1000000\nloss_legacy_ew: [800000, 40000, 0]\nlayers:\n"
    "  - {name: a, class: memory, fwd_flops: 0, bwd_flops: 0, fwd_bytes: 1,"
    " act_bytes: 0, params: [{name: w, numel: 1}]}\n";

Test(legacy_ew, the_losss_strided_copies_run_at_the_sm_rate) {
  struct ds_test_compute f;
  double bytes;
  ds_test_compute_setup(&f, ds_test_clock_gpus, "ClockGPU", 0.5, 0, loss_model_text,
                        DS_DTYPE_FP32, DS_AMP_NONE);
  cr_assert_float_eq(f.m->loss_legacy.bytes, 800000, 0);
  cr_assert_float_eq(f.m->loss_legacy.strided_elems, 40000, 0);
  cr_assert_float_eq(ds_legacy_loss_ns(&f.c, f.m, 10, &bytes), 24800, 1e-6);
  cr_assert_float_eq(bytes, 8e6, 1e-6);
  cr_assert_float_eq(ds_compute_loss_ns(&f.c, f.m, 10, &bytes), 26800, 1e-6);
  cr_assert_float_eq(bytes, 1e7, 1e-6, "the loss's bytes keep all the copies'");
  ds_test_compute_free(&f);
  ds_test_compute_setup(&f, ds_test_clock_gpus, "ClockGPU", 0.5, 0, loss_model_text,
                        DS_DTYPE_FP32, DS_AMP_FP16);
  cr_assert_float_eq(ds_legacy_loss_ns(&f.c, f.m, 10, &bytes), 21200, 1e-6);
  cr_assert_float_eq(bytes, 4e6, 1e-6);
  cr_assert_float_eq(ds_compute_loss_ns(&f.c, f.m, 10, &bytes), 22200, 1e-6);
  ds_test_compute_free(&f);
  ds_test_compute_setup(&f, ds_test_clock_gpus, "NoClockGPU", 0.5, 0, loss_model_text,
                        DS_DTYPE_FP32, DS_AMP_NONE);
  cr_assert_float_eq(ds_legacy_loss_ns(&f.c, f.m, 10, &bytes), 0, 0);
  cr_assert_float_eq(bytes, 0, 0, "without the GPU's clock: one roofline, as before");
  ds_test_compute_free(&f);
}

Test(legacy_ew, a_loss_without_the_key_keeps_one_roofline_and_bad_ones_are_located) {
  static const char *const bad[][2] = {
      {"loss_legacy_ew: [1000001, 0, 0]\n",
       ":7:17: key 'loss_legacy_ew': expected loss_legacy_ew bytes at most loss_copy_bytes "
       "(1000000), got 1000001"},
      {"loss_legacy_ew: [1, 2]\n", "key 'loss_legacy_ew': expected [bytes, strided"},
      {"loss_legacy_ew: [10, 0, 12]\n", "key 'loss_legacy_ew[2]': expected strided and "
       "transposed operand-elements at most the bytes + 1 (11"},
      {"loss_legacy_ew: [1, -2, 0]\n",
       "key 'loss_legacy_ew[1]': expected an integer from 0 to 1000000000000000, got -2"},
  };
  const char *layer = "layers:\n  - {name: a, class: memory, fwd_flops: 0, bwd_flops: 0,"
                      " fwd_bytes: 1, act_bytes: 0, params: [{name: w, numel: 1}]}\n";
  const char *head = "schema_version: 1\nname: t\nsample: s\ndefault_batch: 1\noptimizer: sgd\n"
                     "output_bytes: 0\n";
  char text[1024], label[32];
  struct ds_test_compute f;
  double bytes;
  snprintf(text, sizeof text, "%sloss_copy_bytes: 1000000\n%s", head, layer);
  ds_test_compute_setup(&f, ds_test_clock_gpus, "ClockGPU", 0.5, 0, text, DS_DTYPE_FP32,
                        DS_AMP_NONE);
  cr_assert_float_eq(f.m->loss_legacy.bytes, 0, 0, "absent: zero");
  cr_assert_float_eq(ds_compute_loss_ns(&f.c, f.m, 10, &bytes), 10000, 1e-6);
  ds_test_compute_free(&f);
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    snprintf(text, sizeof text, "%s%s%s", head, bad[i][0], layer);
    /* the bound needs loss_copy_bytes, read before the key whatever the order */
    if (i == 0) snprintf(text, sizeof text, "%s%sloss_copy_bytes: 1000000\n%s", head, bad[i][0],
                         layer);
    snprintf(label, sizeof label, "case %zu", i);
    ds_test_assert_model_refused(text, bad[i][1], label);
  }
}

/* A byte count written with a unit ("12MiB", as a topology's sizes take)
 * is refused at its line and column, naming the file and the key, with
 * the reminder that a model file's sizes are integer bytes per sample,
 * also through the CLI (exit 2): the first number of legacy_ew's and
 * nhwc_legacy_ew's passes, of amp_cast_ew and of loss_legacy_ew (line 7,
 * after the five of the head and loss_copy_bytes). Their operand-element
 * counts are no bytes: no reminder there. */
Test(legacy_ew, a_byte_count_with_a_unit_says_integer_bytes) {
  char text[1024];
  ds_test_one_layer_model(text, sizeof text, "memory", "    legacy_ew: {fwd: [12MiB, 0, 0]}\n");
  ds_test_assert_bytes_hint(text, ":13:23: key 'layers[0].legacy_ew.fwd[0]'", 1);
  ds_test_one_layer_model(text, sizeof text, "memory",
                          "    nhwc_legacy_ew: {copy: [12MiB, 0, 0]}\n");
  ds_test_assert_bytes_hint(text, ":13:29: key 'layers[0].nhwc_legacy_ew.copy[0]'", 1);
  ds_test_one_layer_model(text, sizeof text, "memory", AMP "    amp_cast_ew: [12MiB, 0]\n");
  ds_test_assert_bytes_hint(text, ":16:19: key 'layers[0].amp_cast_ew[0]'", 1);
  ds_test_assert_bytes_hint("schema_version: 1\nname: t\nsample: s\ndefault_batch: 1\n"
                            "optimizer: sgd\nloss_copy_bytes: 100\nloss_legacy_ew: [12MiB, 0, 0]\n"
                            "layers:\n  - {name: a, class: memory, fwd_flops: 0, bwd_flops: 0,"
                            " fwd_bytes: 1, act_bytes: 0, params: [{name: w, numel: 1}]}\n",
                            ":7:18: key 'loss_legacy_ew[0]'", 1);
  static const char *const counts[] = {"    legacy_ew: {fwd: [100, 12MiB, 0]}\n",
                                       "    legacy_ew: {bwd: [100, 0, 12MiB]}\n",
                                       AMP "    amp_cast_ew: [1, 12MiB]\n"};
  for (size_t i = 0; i < sizeof counts / sizeof *counts; i++) {
    struct ds_model *m = NULL;
    struct ds_err err = {0};
    ds_test_one_layer_model(text, sizeof text, "memory", counts[i]);
    cr_assert_eq(ds_test_load_model_text(text, &m, &err), DS_EINPUT, "%s", counts[i]);
    cr_assert(strstr(err.msg, "got \"12MiB\"") && !strstr(err.msg, "integer bytes"), "%s: %s",
              counts[i], err.msg);
  }
}
