/*
 * Tests for the upcast copies and the row reductions (sim/train/cast_reduce.c,
 * cast_reduce.h): the model file's amp_upcast_bytes and bwd_row_reductions,
 * the steps of a reduce_kernel's dependent memory chain as Reduce.cuh's
 * config gives them, and the time of each kernel on made-up GPUs
 * (ds_test_clock_gpus): ClockGPU, 4 SMs at 1000 MHz (4e9 SM cycles/s) and
 * 1000 GB/s reached in full (1000 B/ns), no kernel overhead unless a case
 * sets one; SlowMemGPU, 1000 SMs at 2000 MHz and 1 GB/s; NoClockGPU, no
 * clock. Rates: 0.738 SM cycles per upcast element, 455 per reduction step.
 */
#include <criterion/criterion.h>
#include <stdio.h>

#include "sim/train/cast_reduce.h"
#include "sim/train/compute.h"
#include "sim/train/model.h"
#include "tests/support.h"

/* first: takes the model's input (no input gradient needed for its casts'
 * backward, but a memory layer always has one). cast: a memory layer whose
 * forward casts 600000 B per sample, 120000 of them half -> fp32 (20000
 * elements); nokey: the same without amp_upcast_bytes. bias: a bias
 * gradient summing 100 rows per sample of 1000 outputs (fp32: 400400 B per
 * sample). mm: a matmul without FLOPs or activation bytes and one weight of
 * 1e6 elements. emb: an embedding (memory class: autocast leaves its
 * weight e of 1e6 elements in fp32); head: a matmul of no parameters of
 * its own using e (GPT-2's lm_head and wte). ampsum: bias's reduction
 * with autocast traffic and an fp32 input under autocast (the third
 * number, 4: an add of fp32 embeddings); halfsum: the same without the
 * third number (half under autocast). */
static const char *model_text =
    "schema_version: 1\nname: t\nsample: s\ndefault_batch: 1\noptimizer: sgd\n"
    "output_bytes: 4000\noutput_classes: 1000\nlayers:\n"
    "  - {name: first, class: memory, fwd_flops: 0, bwd_flops: 0, fwd_bytes: 0,"
    " act_bytes: 0, params: []}\n"
    "  - {name: cast, class: memory, fwd_flops: 0, bwd_flops: 0, fwd_bytes: 0, act_bytes: 0,"
    " op_fwd_bytes: 0, amp_fwd_bytes: 0, amp_cast_bytes: 600000, amp_grad_cast_bytes: 0,"
    " amp_upcast_bytes: 120000, bwd_bytes: 0, amp_bwd_bytes: 0, params: []}\n"
    "  - {name: nokey, class: memory, fwd_flops: 0, bwd_flops: 0, fwd_bytes: 0, act_bytes: 0,"
    " op_fwd_bytes: 0, amp_fwd_bytes: 0, amp_cast_bytes: 600000, amp_grad_cast_bytes: 0,"
    " bwd_bytes: 0, amp_bwd_bytes: 0, params: []}\n"
    "  - {name: bias, class: memory, fwd_flops: 0, bwd_flops: 0, fwd_bytes: 0, act_bytes: 0,"
    " bwd_bytes: 0, amp_bwd_bytes: 0, bwd_reduce_bytes: 400400,"
    " bwd_row_reductions: [[100, 1000]],"
    " params: []}\n"
    "  - {name: mm, class: matmul, fwd_flops: 0, bwd_flops: 0, fwd_bytes: 0, act_bytes: 0,"
    " op_fwd_bytes: 0, amp_fwd_bytes: 0, amp_cast_bytes: 0, amp_grad_cast_bytes: 0,"
    " params: [{name: w, numel: 1000000}]}\n"
    "  - {name: emb, class: memory, fwd_flops: 0, bwd_flops: 0, fwd_bytes: 0, act_bytes: 0,"
    " params: [{name: e, numel: 1000000}]}\n"
    "  - {name: head, class: matmul, fwd_flops: 0, bwd_flops: 0, fwd_bytes: 0, act_bytes: 0,"
    " op_fwd_bytes: 0, amp_fwd_bytes: 0, amp_cast_bytes: 0, amp_grad_cast_bytes: 0,"
    " params: [], tied_params: [e]}\n"
    "  - {name: ampsum, class: memory, fwd_flops: 0, bwd_flops: 0, fwd_bytes: 0, act_bytes: 0,"
    " op_fwd_bytes: 0, amp_fwd_bytes: 0, amp_cast_bytes: 0, amp_grad_cast_bytes: 0,"
    " bwd_bytes: 0, amp_bwd_bytes: 0, bwd_reduce_bytes: 400400,"
    " bwd_row_reductions: [[100, 1000, 4]], params: []}\n"
    "  - {name: halfsum, class: memory, fwd_flops: 0, bwd_flops: 0, fwd_bytes: 0, act_bytes: 0,"
    " op_fwd_bytes: 0, amp_fwd_bytes: 0, amp_cast_bytes: 0, amp_grad_cast_bytes: 0,"
    " bwd_bytes: 0, amp_bwd_bytes: 0, bwd_reduce_bytes: 400400,"
    " bwd_row_reductions: [[100, 1000]], params: []}\n";

static void setup(struct ds_test_compute *f, const char *gpu, double overhead_us,
                  enum ds_amp amp) {
  ds_test_compute_setup(f, ds_test_clock_gpus, gpu, 0.5, overhead_us, model_text,
                        DS_DTYPE_FP32, amp);
}

Test(cast_reduce, the_keys_are_read) {
  struct ds_test_compute f;
  setup(&f, "ClockGPU", 0, DS_AMP_NONE);
  cr_assert_float_eq(f.m->layers[1].amp_upcast_bytes, 120000, 0);
  cr_assert_float_eq(f.m->layers[2].amp_upcast_bytes, 0, 0, "absent: none");
  cr_assert_eq(f.m->layers[3].n_row_reductions, 1);
  cr_assert_float_eq(f.m->layers[3].row_reductions[0][0], 100, 0);
  cr_assert_float_eq(f.m->layers[3].row_reductions[0][1], 1000, 0);
  cr_assert_eq(f.m->layers[2].n_row_reductions, 0);
  ds_test_compute_free(&f);
}

/* Reduce.cuh's config by hand (setReduceConfig: 4 outputs a lane where
 * they divide by 4, CTAs of 32 x 4 threads; target grid SMs x 16 on the
 * H200's 2048 threads an SM, compute capability 9.0), against
 * the grids the H200 traces show: 8192 x 768 on 132 SMs: 2048 values a
 * thread, 6 output CTAs, ctas = max(min(2112 / 6 = 352, 2048 / 16 = 128),
 * 2048 / 256 = 8) = 128 (the trace's grid 6 x 128): 2048 / 128 = 16
 * values, then 128 / 4 = 32 partials: 48. 8192 x 3072: 24 CTAs, min(88,
 * 128) = 88 (24 x 88): 24 + 22 = 46. 8192 x 2304: 18 CTAs, 118 (18 x 118):
 * 18 + 30 = 48. 4096 x 768: 1024 values, min(352, 64) = 64 (6 x 64): 16 +
 * 16 = 32. 20480 x 128 on 4 SMs: 5120 values, 1 output CTA, target 64:
 * max(min(64, 320), 20) = 64: 80 + 16 = 96.
 * Rows too few to split (under 4 x 16 and 256): each warp takes outputs of
 * its own and a thread sums every row, 4 loads at a time (vt0): 32 x 1000
 * (a classifier's bias at batch 32), 8 (the trace's 32 x 768: grid 2, 32 x
 * 4 threads); 8 x 786432 (GPT-2's position embedding's broadcast add at
 * batch 8), 2 (the trace's grid 1536 = 196608 vectors / 128).
 * The vector width halves 4 -> 2 -> 1 to divide the outputs, and a CTA
 * takes 512 / width threads: 8192 x 770, 2 a lane: 385 vectors, block 32
 * x 8 (256 threads), 1024 values a thread, 13 output CTAs, target 132 x 8
 * = 1056: max(min(82, 64), 4) = 64: 16 + 64 / 8 = 24 (4 or 1 outputs a
 * lane: 47). 12288 x 2 (a question-answering head at batch 32), 2 a lane:
 * 1 vector, block 1 x 256, 48 values: 48 (192 at 1 a lane and 4 rows of
 * threads). 32 x 3 (BERT's classifier at batch 32), 1 a lane, 512
 * threads at most: block 2 x 32 (the trace's), 32 rows under 32 x 16: each
 * thread sums all 32, 8 steps. */
Test(cast_reduce, reduce_steps_follow_the_config) {
  cr_assert_float_eq(ds_row_reduce_steps(8192, 768, 132, 2048), 48, 0);
  cr_assert_float_eq(ds_row_reduce_steps(8192, 3072, 132, 2048), 46, 0);
  cr_assert_float_eq(ds_row_reduce_steps(8192, 2304, 132, 2048), 48, 0);
  cr_assert_float_eq(ds_row_reduce_steps(4096, 768, 132, 2048), 32, 0);
  cr_assert_float_eq(ds_row_reduce_steps(20480, 128, 4, 2048), 96, 0);
  cr_assert_float_eq(ds_row_reduce_steps(32, 1000, 132, 2048), 8, 0);
  cr_assert_float_eq(ds_row_reduce_steps(8, 786432, 132, 2048), 2, 0);
  cr_assert_float_eq(ds_row_reduce_steps(8192, 770, 132, 2048), 24, 0);
  cr_assert_float_eq(ds_row_reduce_steps(12288, 2, 132, 2048), 48, 0);
  cr_assert_float_eq(ds_row_reduce_steps(32, 3, 132, 2048), 8, 0);
}

/* The target grid takes the GPU's own threads per SM (setReduceConfig:
 * SMs x floor(maxThreadsPerMultiProcessor / the CTA's threads)). 8192 x
 * 3072 on 132 SMs: 4 outputs a lane, 768 vectors, CTAs of 32 x 4 = 128
 * threads, 8192 / 4 = 2048 values a thread, 768 / 32 = 24 output CTAs.
 * 2048 threads (9.0): 16 CTAs an SM, target 132 x 16 = 2112, ctas =
 * max(min(ceil(2112 / 24) = 88, 2048 / 16 = 128), 2048 / 256 = 8) = 88:
 * ceil(2048 / 88) = 24 + ceil(88 / 4) = 22, 46 steps. 1536 (8.9): 12 an
 * SM, target 1584, ceil(1584 / 24) = 66: ceil(2048 / 66) = 32 +
 * ceil(66 / 4) = 17, 49 steps. 1024 (7.5): 8 an SM, target 1056, 44:
 * ceil(2048 / 44) = 47 + 11 = 58. 8192 x 768 (6 output CTAs) is 48 on
 * all three: ceil(target / 6) >= 176 is past 2048 / 16 = 128 there. */
Test(cast_reduce, the_target_grid_takes_the_gpus_threads_per_sm) {
  cr_assert_float_eq(ds_row_reduce_steps(8192, 3072, 132, 2048), 46, 0);
  cr_assert_float_eq(ds_row_reduce_steps(8192, 3072, 132, 1536), 49, 0);
  cr_assert_float_eq(ds_row_reduce_steps(8192, 3072, 132, 1024), 58, 0);
  cr_assert_float_eq(ds_row_reduce_steps(8192, 3072, 132, 0), 46, 0, "unknown: 2048");
  for (int t = 1024; t <= 2048; t += 512)
    cr_assert_float_eq(ds_row_reduce_steps(8192, 768, 132, t), 48, 0, "%d", t);
}

/* The same through the GPU table: two GPUs alike but for their compute
 * capability, 132 SMs at 1000 MHz and 1000 GB/s. A reduction of 1024 rows
 * per sample of 3072 outputs at batch 8 (8192 rows), fp32: (8192 + 1) x
 * 3072 = 25168896 elements x 4 = 100675584 B, 100675.584 ns at the
 * roofline, plus 46 steps x 455 cycles / 1 GHz = 20930 ns on sm_90, 49 x
 * 455 = 22295 ns on sm_89.
 * Without compute_capability: Ada's family has one (8.9: 1536), Ampere's
 * two (8.0 and 8.6: unknown, 2048 taken). */
static const char sm_gpus[] =
    "schema_version: 1\ngpus:\n"
    "  - {name: Sm90, arch: Hopper, compute_capability: \"9.0\", sms: 132, fp32: 10TFLOPS,"
    " fp16: 20TFLOPS, mem: 16GB, mem_bw: 1000GBps, boost_mhz: 1000}\n"
    "  - {name: Sm89, arch: Ada, compute_capability: \"8.9\", sms: 132, fp32: 10TFLOPS,"
    " fp16: 20TFLOPS, mem: 16GB, mem_bw: 1000GBps, boost_mhz: 1000}\n"
    "  - {name: AdaNoCc, arch: Ada, sms: 132, fp32: 10TFLOPS,"
    " fp16: 20TFLOPS, mem: 16GB, mem_bw: 1000GBps, boost_mhz: 1000}\n"
    "  - {name: AmpereNoCc, arch: Ampere, sms: 132, fp32: 10TFLOPS,"
    " fp16: 20TFLOPS, mem: 16GB, mem_bw: 1000GBps, boost_mhz: 1000}\n";

static double reduce_ns_on(const char *gpu, int32_t want_threads) {
  struct ds_test_compute f;
  ds_test_compute_setup(&f, sm_gpus, gpu, 0.5, 0, model_text, DS_DTYPE_FP32, DS_AMP_NONE);
  cr_assert_eq(f.c.sm_max_threads, want_threads, "%s: %d", gpu, f.c.sm_max_threads);
  struct ds_layer l = f.m->layers[3];
  l.row_reductions[0][0] = 1024;
  l.row_reductions[0][1] = 3072;
  double bytes, ns = ds_row_reduce_ns(&f.c, &l, 8, &bytes);
  cr_assert_float_eq(bytes, 100675584, 1e-6, "%s: %.17g", gpu, bytes);
  ds_test_compute_free(&f);
  return ns;
}

Test(cast_reduce, an_sm_89_gpu_splits_over_fewer_ctas_than_an_sm_90) {
  cr_assert_float_eq(reduce_ns_on("Sm90", 2048), 100675.584 + 20930, 1e-6);
  cr_assert_float_eq(reduce_ns_on("Sm89", 1536), 100675.584 + 22295, 1e-6);
  cr_assert_float_eq(reduce_ns_on("AdaNoCc", 1536), 100675.584 + 22295, 1e-6);
  cr_assert_float_eq(reduce_ns_on("AmpereNoCc", 0), 100675.584 + 20930, 1e-6);
}

/* bias at batch 10, fp32: 1000 rows x 1000 outputs, (1000 + 1) x 1000 x 4
 * = 4004000 B = 4004 ns, and 250 values a thread (under 256: no split):
 * 250 steps x 455 cycles / 1e9 Hz = 113750 ns. Its bwd_reduce_bytes are
 * all the row reduction's: nothing more at the roofline. Under --amp fp16
 * 2-byte elements: 2002 ns, the same steps. */
Test(cast_reduce, a_row_reduction_pays_its_steps) {
  struct ds_test_compute f;
  setup(&f, "ClockGPU", 0, DS_AMP_NONE);
  const struct ds_layer *l = &f.m->layers[3];
  double bytes;
  cr_assert_float_eq(ds_row_reduce_ns(&f.c, l, 10, &bytes), 4004 + 113750, 1e-6);
  cr_assert_float_eq(bytes, 4004000, 1e-6);
  cr_assert_float_eq(ds_compute_bwd_extra_ns(&f.c, l, 10), 4004 + 113750, 1e-6);
  ds_test_compute_free(&f);
  setup(&f, "ClockGPU", 0, DS_AMP_FP16);
  cr_assert_float_eq(ds_compute_bwd_extra_ns(&f.c, &f.m->layers[3], 10), 2002 + 113750, 1e-6);
  ds_test_compute_free(&f);
}

/* Under --amp fp16 at batch 10, ampsum's reduction reads its fp32
 * gradient: (1000 + 1) x 1000 x 4 B = 4004 ns and 250 steps (113750 ns),
 * not the half size (2002 ns) halfsum's reads. Its bwd_reduce_bytes,
 * scaled to half (2002000 B), are under the reduction's 4004000: nothing
 * more at the roofline. In fp32 both read 4 B: 4004 + 113750. */
Test(cast_reduce, a_row_reduction_reads_its_gradients_autocast_dtype) {
  struct ds_test_compute f;
  setup(&f, "ClockGPU", 0, DS_AMP_FP16);
  const struct ds_layer *fp = &f.m->layers[7], *half = &f.m->layers[8];
  cr_assert_float_eq(fp->row_reductions[0][2], 4, 0);
  cr_assert_float_eq(half->row_reductions[0][2], 0, 0, "absent: half");
  cr_assert_float_eq(ds_row_reduce_elem_bytes(&f.c, fp, 0), 4, 0);
  cr_assert_float_eq(ds_row_reduce_elem_bytes(&f.c, half, 0), 2, 0);
  cr_assert_float_eq(ds_compute_bwd_extra_ns(&f.c, fp, 10), 4004 + 113750, 1e-6);
  cr_assert_float_eq(ds_compute_bwd_extra_ns(&f.c, half, 10), 2002 + 113750, 1e-6);
  ds_test_compute_free(&f);
  setup(&f, "ClockGPU", 0, DS_AMP_NONE);
  cr_assert_float_eq(ds_compute_bwd_extra_ns(&f.c, &f.m->layers[7], 10), 4004 + 113750, 1e-6);
  cr_assert_float_eq(ds_compute_bwd_extra_ns(&f.c, &f.m->layers[8], 10), 4004 + 113750, 1e-6);
  ds_test_compute_free(&f);
}

/* The file's bytes are per sample at the export's batch: one bias sum of
 * 1 row per sample and 1000 outputs exported at batch 2 is (2 + 1) x 1000
 * x 4 B / 2 = 6000 B per sample. At batch 32 that is 192000 B, of which
 * the reduction moves (32 + 1) x 4000 = 132000: the other 60000 B are its
 * output row spread per sample, not another kernel (60 ns at this GPU's
 * roofline, which the sum must not add). */
Test(cast_reduce, the_export_batchs_output_row_is_no_other_kernel) {
  struct ds_test_compute f;
  setup(&f, "ClockGPU", 0, DS_AMP_NONE);
  struct ds_layer l = f.m->layers[3];
  l.row_reductions[0][0] = 1;
  l.row_reductions[0][1] = 1000;
  l.bwd_reduce_bytes = 6000;
  double bytes, rows_ns = ds_row_reduce_ns(&f.c, &l, 32, &bytes);
  cr_assert_float_eq(bytes, 132000, 1e-6);
  cr_assert_float_eq(ds_compute_bwd_extra_ns(&f.c, &l, 32), rows_ns, 1e-6);
  /* 200000 B more per batch: what is past the rows' bound (256000 B), 136000 B, runs */
  l.bwd_reduce_bytes = 6000 + 200000.0 / 32;
  cr_assert_float_eq(ds_compute_bwd_extra_ns(&f.c, &l, 32),
                     rows_ns + ds_compute_class_kernel_ns(&f.c, DS_LAYER_MEMORY, 0, 392000 - 256000),
                     1e-6);
  ds_test_compute_free(&f);
}

/* Without a clock the reduction keeps its bytes at the roofline: 4004 ns. */
Test(cast_reduce, no_clock_keeps_the_roofline) {
  struct ds_test_compute f;
  setup(&f, "NoClockGPU", 0, DS_AMP_NONE);
  double bytes;
  cr_assert_float_eq(ds_row_reduce_ns(&f.c, &f.m->layers[3], 10, &bytes), 0, 0);
  cr_assert_float_eq(ds_compute_bwd_extra_ns(&f.c, &f.m->layers[3], 10), 4004, 1e-6);
  cr_assert_float_eq(ds_upcast_ns(&f.c, 6e6, 1), 6000, 1e-6);
  ds_test_compute_free(&f);
}

/* 6e6 B of upcasts = 1e6 elements: 1e6 x 0.738 / 4e9 = 184500 ns against
 * 6000 ns at the roofline; two kernels at 4 us overhead: 192500. On
 * SlowMemGPU the bytes take 6e6 ns, the SMs 369 ns: the roofline. */
Test(cast_reduce, an_upcast_runs_at_the_sm_rate) {
  struct ds_test_compute f;
  setup(&f, "ClockGPU", 0, DS_AMP_NONE);
  cr_assert_float_eq(ds_upcast_ns(&f.c, 6e6, 1), 184500, 1e-6);
  cr_assert_float_eq(ds_upcast_ns(&f.c, 0, 1), 0, 0);
  ds_test_compute_free(&f);
  setup(&f, "ClockGPU", 4, DS_AMP_NONE);
  cr_assert_float_eq(ds_upcast_ns(&f.c, 6e6, 2), 184500 + 8000, 1e-6);
  ds_test_compute_free(&f);
  setup(&f, "SlowMemGPU", 0, DS_AMP_NONE);
  cr_assert_float_eq(ds_upcast_ns(&f.c, 6e6, 1), 6e6, 1e-3);
  ds_test_compute_free(&f);
}

/* cast at batch 10 under --amp fp16. Forward: 4.8e6 B down at the
 * roofline (4800 ns) and 1.2e6 B up (2e5 elements: 36900 ns). Backward:
 * the casts back, 4.8e6 B up (8e5 elements: 147600 ns) and 1.2e6 B down
 * (1200 ns). nokey: forward 6e6 B down (6000 ns); backward 6e6 B up
 * (184500 ns). Neither layer moves other bytes. */
Test(cast_reduce, autocast_casts_split_by_direction) {
  struct ds_test_compute f;
  setup(&f, "ClockGPU", 0, DS_AMP_FP16);
  const struct ds_layer *c = &f.m->layers[1], *n = &f.m->layers[2];
  cr_assert_float_eq(ds_compute_fwd_ns(&f.c, c, 10), 4800 + 36900, 1e-6);
  cr_assert_float_eq(ds_compute_bwd_ns(&f.c, c, 10), 147600 + 1200, 1e-6);
  cr_assert_float_eq(ds_compute_fwd_ns(&f.c, n, 10), 6000, 1e-6);
  cr_assert_float_eq(ds_compute_bwd_ns(&f.c, n, 10), 184500, 1e-6);
  ds_test_compute_free(&f);
}

/* mm's backward under --amp: the half weight read and its half gradient
 * written (4e6 B: 4000 ns), then the gradient's cast to fp32, an upcast
 * of 1e6 elements (184500 ns). In fp32: the weight read and its gradient
 * written, 8e6 B (8000 ns), no cast. */
Test(cast_reduce, a_weights_gradient_is_upcast) {
  struct ds_test_compute f;
  setup(&f, "ClockGPU", 0, DS_AMP_FP16);
  cr_assert_float_eq(ds_compute_bwd_ns(&f.c, &f.m->layers[4], 1), 4000 + 184500, 1e-6);
  ds_test_compute_free(&f);
  setup(&f, "ClockGPU", 0, DS_AMP_NONE);
  cr_assert_float_eq(ds_compute_bwd_ns(&f.c, &f.m->layers[4], 1), 8000, 1e-6);
  ds_test_compute_free(&f);
}

/* head's tied weight under --amp: autocast casts e to half for head's
 * matmul (emb, an embedding, never does), one _to_copy of 1e6 x (4 + 2) B
 * at the roofline: 6000 ns forward; its ToCopyBackward0 upcasts the half
 * gradient, 1e6 elements x 0.738 / 4e9 = 184500 ns backward. head moves
 * no other bytes. In fp32: neither (0, 0). */
Test(cast_reduce, a_tied_weights_cast_and_upcast_are_charged_to_its_user) {
  struct ds_test_compute f;
  setup(&f, "ClockGPU", 0, DS_AMP_FP16);
  const struct ds_layer *head = &f.m->layers[6];
  double bytes;
  cr_assert_eq(head->tied_cast_count, 1);
  cr_assert_float_eq(ds_compute_weight_cast_ns(&f.c, head, &bytes), 6000, 1e-6);
  cr_assert_float_eq(bytes, 6e6, 0);
  cr_assert_float_eq(ds_compute_fwd_ns(&f.c, head, 1), 6000, 1e-6);
  cr_assert_float_eq(ds_compute_bwd_ns(&f.c, head, 1), 184500, 1e-6);
  ds_test_compute_free(&f);
  setup(&f, "ClockGPU", 0, DS_AMP_NONE);
  head = &f.m->layers[6];
  cr_assert_float_eq(ds_compute_fwd_ns(&f.c, head, 1), 0, 0);
  cr_assert_float_eq(ds_compute_bwd_ns(&f.c, head, 1), 0, 0);
  ds_test_compute_free(&f);
}

/* The loss of 10 samples of 1000 classes under --amp: the passes over the
 * fp32 outputs (passes x 10 x 4000 B) and the backward's cast at the
 * roofline (1000 B/ns), the forward's cast of 1e4 half outputs to fp32 (6e4 B) at the
 * upcast rate: 1e4 x 0.738 / 4e9 = 1845 ns. */
Test(cast_reduce, the_losss_cast_is_an_upcast) {
  struct ds_test_compute f;
  setup(&f, "ClockGPU", 0, DS_AMP_FP16);
  double bytes, passes = ds_compute_loss_passes(1000);
  double ns = ds_compute_loss_ns(&f.c, f.m, 10, &bytes);
  cr_assert_float_eq(bytes, passes * 40000 + 2 * 60000, 1e-6);
  cr_assert_float_eq(ns, (passes * 40000 + 60000) / 1000 + 1845, 1e-6);
  ds_test_compute_free(&f);
}

Test(cast_reduce, bad_keys_are_located) {
  static const char *const bad[][2] = {
      {"    amp_fwd_bytes: 1\n    amp_cast_bytes: 2\n    amp_grad_cast_bytes: 0\n"
       "    amp_upcast_bytes: 3\n",
       "expected amp_upcast_bytes at most amp_cast_bytes (2), got 3"},
      {"    amp_upcast_bytes: -1\n", "expected an integer from 0"},
      {"    bwd_row_reductions: 5\n", "expected bwd_row_reductions as a list of at most 8"},
      {"    bwd_row_reductions: [[1, 2, 3, 4]]\n", "outputs] or [rows per sample, outputs, autocast bytes per element], got 4 numbers"},
      {"    bwd_row_reductions: [[1, 2, 3]]\n",
       "expected autocast bytes per element 2 (half) or 4 (fp32), got 3"},
      {"    bwd_row_reductions: [[1, 2, 0]]\n", "expected an integer from 1"},
      {"    bwd_row_reductions: [[0, 2]]\n", "expected an integer from 1"},
      {"    bwd_row_reductions: [[1, 2], [1, 2], [1, 2], [1, 2], [1, 2], [1, 2], [1, 2],"
       " [1, 2], [1, 2]]\n",
       "at most 8"},
  };
  char text[1024], label[32];
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    ds_test_one_layer_model(text, sizeof text, "memory", bad[i][0]);
    snprintf(label, sizeof label, "case %zu", i);
    ds_test_assert_model_refused(text, bad[i][1], label);
  }
}

/* amp_upcast_bytes written with a unit ("12MiB") is refused at its line
 * (16, after AMP's three keys) naming the file and the key, with the
 * reminder that a model file's sizes are integer bytes per sample, also
 * through the CLI (exit 2). */
Test(cast_reduce, a_byte_count_with_a_unit_says_integer_bytes) {
  char text[1024];
  ds_test_one_layer_model(text, sizeof text, "memory",
                          "    amp_fwd_bytes: 1\n    amp_cast_bytes: 2\n"
                          "    amp_grad_cast_bytes: 0\n    amp_upcast_bytes: 12MiB\n");
  ds_test_assert_bytes_hint(text, ":16:23: key 'layers[0].amp_upcast_bytes'", 1);
}
