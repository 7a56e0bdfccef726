/*
 * Interference of NCCL collectives with compute (sim/train/interference.c)
 * and the executor's re-rating of a kernel when a collective starts or ends
 * beside it (sim/train/exec_ops.c), worked by hand.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "sim/coll/nccl_model.h"
#include "sim/net/topo.h"
#include "sim/train/exec.h"
#include "sim/train/interference.h"
#include "tests/support.h"

/* A GPU of 100 SMs, 10 TFLOPS and 1000 GB/s, ideal: round numbers. */
static struct ds_compute round_gpu(void) {
  struct ds_compute c = {.dtype = DS_DTYPE_FP32, .peak_flops_per_s = 10e12,
                         .mem_bw_bytes_per_s = 1000e9, .sms = 100,
                         .params = {.flops_efficiency = 1, .mem_efficiency = 1}};
  for (int k = 0; k <= DS_LAYER_MEMORY; k++) {
    c.class_peak_flops_per_s[k] = 10e12;
    c.class_efficiency[k] = 1;
  }
  return c;
}

Test(interference, factors_by_hand) {
  /* Expected, because a compute-bound kernel runs on the SMs a collective
   * leaves (100 / (100 - 12)) and a memory-bound one on the HBM bandwidth
   * it leaves (1000 / (1000 - 250) GB/s), never below a tenth of it; the
   * topology's comm_interference multiplies either while a collective
   * runs. */
  struct ds_compute c = round_gpu();
  struct ds_coll_load load = {12, 250e9};
  /* the share of the op its SMs bound: 1 compute-bound, 0 memory-bound */
  cr_assert_float_eq(ds_interference_factor(&c, 1, load, 1), 100.0 / 88, 1e-12);
  cr_assert_float_eq(ds_interference_factor(&c, 0, load, 1), 1000.0 / 750, 1e-12);
  cr_assert_float_eq(ds_interference_factor(&c, 0, (struct ds_coll_load){12, 990e9}, 1), 10,
                     1e-12);
  cr_assert_float_eq(ds_interference_factor(&c, 1, (struct ds_coll_load){200, 0}, 1), 100,
                     1e-12);
  cr_assert_float_eq(ds_interference_factor(&c, 1, (struct ds_coll_load){0, 0}, 0), 1, 0);
  /* an op three quarters SM-bound: each part at its own pace */
  cr_assert_float_eq(ds_interference_factor(&c, 0.75, load, 1),
                     0.75 * 100.0 / 88 + 0.25 * 1000.0 / 750, 1e-12);
  c.params.comm_interference = 0.5;
  cr_assert_float_eq(ds_interference_factor(&c, 1, load, 1), 1.5 * 100.0 / 88, 1e-12);
  cr_assert_float_eq(ds_interference_factor(&c, 1, (struct ds_coll_load){0, 0}, 0), 1, 0);
}

/* mm: a matmul of 2 GFLOP forward and 4 backward per sample over 1 MB of
 * activations, with a bias gradient to reduce (2 MB read: a kernel of its
 * own); thin: a matmul of 1 MFLOP over 100 MB, bound by its bytes. */
static const char *parts_model =
    "schema_version: 1\nname: p\nsample: s\ndefault_batch: 1\noptimizer: sgd\nlayers:\n"
    "  - {name: mm, class: matmul, fwd_flops: 2000000000, bwd_flops: 4000000000,"
    " fwd_bytes: 1000000, act_bytes: 0, bwd_reduce_bytes: 2000000, params: [{name: w, numel: 1}]}\n"
    "  - {name: thin, class: matmul, fwd_flops: 1000000, bwd_flops: 2000000,"
    " fwd_bytes: 100000000, act_bytes: 0, params: [{name: v, numel: 1}]}\n";

/* stem: a convolution taking the model's input, as the exporter writes
 * one: its backward FLOPs are its forward's (the weight gradient only),
 * over 2 MB of input and output per sample; autocast casts its input (0.5
 * MB read and written). body: the same with an input gradient. */
static const char *stem_model =
    "schema_version: 1\nname: s\nsample: s\ndefault_batch: 1\noptimizer: sgd\nlayers:\n"
    "  - {name: stem, class: conv, fwd_flops: 1000000, bwd_flops: 1000000,"
    " fwd_bytes: 2000000, act_bytes: 0, amp_fwd_bytes: 1000000, amp_cast_bytes: 500000,"
    " amp_grad_cast_bytes: 0, params: [{name: w, numel: 1}]}\n"
    "  - {name: body, class: conv, fwd_flops: 1000000, bwd_flops: 2000000,"
    " fwd_bytes: 2000000, act_bytes: 0, amp_fwd_bytes: 1000000, amp_cast_bytes: 500000,"
    " amp_grad_cast_bytes: 0, params: [{name: v, numel: 1}]}\n";

Test(interference, a_layer_taking_the_models_input_computes_no_input_gradient) {
  /* ClockGPU, 1000 GB/s, 4 us per kernel; both layers bound by their
   * bytes. fp32: the stem's weight gradient reads its input and output
   * gradient, 2 MB = 2 us (+ 8 B of weights), + 4 us; body's backward reads
   * both and writes the input gradient, twice that: 4 us + 4. Under --amp
   * fp16 (1 MB of autocast traffic, doubled for body): the stem 1 us + 4
   * (and 4 B of half weight and gradient) and no cast backward (its input
   * needs no gradient); body 2 us + 4 and its input cast's backward, an
   * upcast (cast_reduce.h) of 0.5 MB / 6 B = 83333.3 elements x 0.738 SM
   * cycles / 4e9 cycles/s = 15375 ns + 4 us (the roofline's 0.5 us is
   * shorter). Each then casts its weight's gradient to fp32, a kernel of
   * its own: 1 element, 0.738 / 4e9 s = 0.1845 ns + 4 us. */
  struct ds_test_compute f;
  ds_test_compute_setup(&f, ds_test_clock_gpus, "ClockGPU", 0.5, 4, stem_model,
                        DS_DTYPE_FP32, DS_AMP_NONE);
  cr_assert_eq(ds_layer_input_grad(&f.m->layers[0]), 0);
  cr_assert_eq(ds_layer_input_grad(&f.m->layers[1]), 1);
  cr_assert_float_eq(ds_compute_bwd_ns(&f.c, &f.m->layers[0], 1), 6000.008, 1e-3);
  cr_assert_float_eq(ds_compute_bwd_ns(&f.c, &f.m->layers[1], 1), 8000.008, 1e-3);
  ds_test_compute_free(&f);
  ds_test_compute_setup(&f, ds_test_clock_gpus, "ClockGPU", 0.5, 4, stem_model,
                        DS_DTYPE_FP32, DS_AMP_FP16);
  cr_assert_float_eq(ds_compute_bwd_ns(&f.c, &f.m->layers[0], 1), 5000.004 + 4000.1845,
                     1e-3);
  cr_assert_float_eq(ds_compute_bwd_ns(&f.c, &f.m->layers[1], 1),
                     6000.004 + 19375 + 4000.1845, 1e-3);
  ds_test_compute_free(&f);
}

Test(interference, a_pass_slows_by_its_parts) {
  /* ClockGPU: 4 SMs, 10 TFLOPS FP32 at efficiency 0.5, 1000 GB/s in full,
   * 4 us per kernel. mm's backward at batch 1: its own kernel, 4e9 FLOP at
   * 5 TFLOPS = 800 us against 2 MB = 2 us of bytes, + 4 = 804 us, bound by
   * its FLOPs; then the bias reduction, 2 us + 4 = 6 us: 810 us, 804 of
   * them SM-bound. Its forward is all one kernel, 400 + 4 us, SM-bound.
   * thin's 100 us of bytes outlast its 0.2 us of FLOPs: nothing SM-bound.
   * Beside a collective holding 1 SM and 500 GB/s, mm's backward takes
   * 4/3 on its 804 us and 2 on its 6 (as one memory-bound op, the rule
   * before: 2 on all 810). */
  struct ds_test_compute f;
  ds_test_compute_setup(&f, ds_test_clock_gpus, "ClockGPU", 0.5, 4, parts_model,
                        DS_DTYPE_FP32, DS_AMP_NONE);
  const struct ds_layer *mm = &f.m->layers[0], *thin = &f.m->layers[1];
  cr_assert_float_eq(ds_compute_bwd_ns(&f.c, mm, 1), 810e3, 1);
  cr_assert_float_eq(ds_compute_sm_bound_ns(&f.c, mm, 1, 1), 804e3, 1);
  cr_assert_float_eq(ds_compute_sm_bound_ns(&f.c, mm, 0, 1), ds_compute_fwd_ns(&f.c, mm, 1),
                     1e-6);
  cr_assert_float_eq(ds_compute_fwd_ns(&f.c, mm, 1), 404e3, 1);
  cr_assert_eq(ds_compute_sm_bound_ns(&f.c, thin, 0, 1), 0);
  cr_assert_eq(ds_compute_sm_bound_ns(&f.c, thin, 1, 1), 0);
  /* the op of mm's backward pass at batch 1, as the builders emit it */
  struct ds_op op = {.kind = DS_OP_BWD, .layer = 0, .flops = 4e9,
                     .dur_us = ds_compute_bwd_ns(&f.c, mm, 1) / 1000};
  double share = ds_interference_sm_share(&f.c, f.m, 1, &op);
  cr_assert_float_eq(share, 804.0 / 810, 1e-6);
  struct ds_coll_load load = {1, 500e9};
  cr_assert_float_eq(ds_interference_factor(&f.c, share, load, 1),
                     (804 * 4.0 / 3 + 6 * 2.0) / 810, 1e-6);
  /* an op of the layer that is not its pass (a reducer copy: no FLOPs) is
   * memory-bound; without the batch, mm's backward is one kernel, and its
   * FLOPs fall short of its 810 us: memory-bound too (the rule before) */
  struct ds_op copy = {.kind = DS_OP_BWD, .layer = 0, .dur_us = 6};
  cr_assert_eq(ds_interference_sm_share(&f.c, f.m, 1, &copy), 0);
  cr_assert_eq(ds_interference_sm_share(&f.c, f.m, 0, &op), 0);
  /* mm's forward, all SM-bound; thin's, all bound by bytes */
  op = (struct ds_op){.kind = DS_OP_FWD, .layer = 0, .flops = 2e9,
                      .dur_us = ds_compute_fwd_ns(&f.c, mm, 1) / 1000};
  cr_assert_float_eq(ds_interference_sm_share(&f.c, f.m, 1, &op), 1, 1e-12);
  op = (struct ds_op){.kind = DS_OP_FWD, .layer = 1, .flops = 1e6,
                      .dur_us = ds_compute_fwd_ns(&f.c, thin, 1) / 1000};
  cr_assert_eq(ds_interference_sm_share(&f.c, f.m, 1, &op), 0);
  ds_test_compute_free(&f);
}

/* A comm hook's op with FLOPs (no layer, a bucket: PowerSGD's GEMMs) is
 * priced at the gradients' matmul rate plus an overhead per kernel
 * (comm_hook.c), so that rate decides: 1e7 FLOPs at 2.5 TFLOP/s are 4 us,
 * 1e6 bytes at 1000 GB/s 1 us: compute-bound (share 1), though at the
 * unclassed 10 TFLOP/s the FLOPs (1 us) fall short of the duration (4 us
 * plus 3 overheads of 4 us): the old rule said memory-bound (0), fails.
 * With 1e7 bytes (10 us) it is memory-bound. */
Test(interference, a_hook_op_is_judged_at_the_rate_that_priced_it) {
  struct ds_compute c = round_gpu();
  c.params.kernel_overhead_ns = 4000;
  c.grad_gemm_flops_per_s = 2.5e12;
  struct ds_op op = {.kind = DS_OP_BWD, .layer = -1, .bucket = 0, .flops = 1e7, .bytes = 1e6,
                     .dur_us = 4 + 4 * 4};
  cr_assert_eq(ds_interference_sm_share(&c, NULL, 1, &op), 1);
  op.bytes = 1e7;
  op.dur_us = 10 + 4 * 4;
  cr_assert_eq(ds_interference_sm_share(&c, NULL, 1, &op), 0);
}

Test(interference, the_roofline_says_what_bounds_a_kernel) {
  /* 1 GFLOP at 10 TFLOPS is 100 us: compute-bound when that is its whole
   * duration (4 us of overhead on top), memory-bound when it lasts longer;
   * no FLOPs: memory-bound. */
  struct ds_compute c = round_gpu();
  c.params.kernel_overhead_ns = 4000;
  struct ds_op op = {.kind = DS_OP_BWD, .flops = 1e9};
  cr_assert_eq(ds_interference_memory_bound(&c, DS_LAYER_UNKNOWN, &op, 104000), 0);
  cr_assert_eq(ds_interference_memory_bound(&c, DS_LAYER_UNKNOWN, &op, 154000), 1);
  /* a class's own peak decides: the same op as a matmul at 1/8 the rate
   * takes 800 us of FLOPs, so 804 us is compute-bound, 104 us cannot be */
  c.class_peak_flops_per_s[DS_LAYER_MATMUL] = 1.25e12;
  c.class_efficiency[DS_LAYER_MATMUL] = 1;
  cr_assert_eq(ds_interference_memory_bound(&c, DS_LAYER_MATMUL, &op, 804000), 0);
  cr_assert_eq(ds_interference_memory_bound(&c, DS_LAYER_MATMUL, &op, 904000), 1);
  op.flops = 0;
  cr_assert_eq(ds_interference_memory_bound(&c, DS_LAYER_UNKNOWN, &op, 104000), 1);
}

Test(interference, what_a_collective_holds) {
  /* NCCL's channels (one block each) and HBM bytes at the collective's
   * average rate: 8 ranks, a 16 MB payload is 2 x 7/8 x 16 MB = 28 MB of
   * bus bytes; over a 280 us op, 3 HBM bytes per bus byte for ring and
   * tree are 84 MB / 280 us = 300 GB/s; NVLS reads the 16 MB input once
   * and writes the output once, 32 MB / 280 us = 114.29 GB/s, whatever
   * NCCL's peak bus rate (set here to show it is not used); nothing for the
   * plain algorithms, another kind of op or an op of no duration. */
  struct ds_nccl_model m;
  memset(&m, 0, sizeof m);
  m.nranks = 8;
  m.channels = 12;
  m.busbw_bytes_per_s[DS_PROTO_SIMPLE] = 200e9;
  m.tree_busbw_bytes_per_s[DS_PROTO_LL] = 50e9;
  m.arch = DS_NCCL_ARCH_HOPPER;
  m.nvls_channels = 8; /* the heads: NVLS holds NCCL's 16 CTAs on Hopper */
  m.nvls_busbw_bytes_per_s = 400e9;
  struct ds_op op = {.kind = DS_OP_ALLREDUCE, .algo = "ring/Simple", .bytes = 16e6,
                     .dur_us = 280};
  struct ds_coll_load l = ds_interference_load(&m, &op);
  cr_assert_eq(l.sms, 12);
  cr_assert_float_eq(l.hbm_bytes_per_s, 300e9, 1);
  op.algo = "tree/LL";
  l = ds_interference_load(&m, &op);
  cr_assert_eq(l.sms, 12);
  cr_assert_float_eq(l.hbm_bytes_per_s, 300e9, 1);
  op.algo = "nvls/Simple";
  l = ds_interference_load(&m, &op);
  cr_assert_eq(l.sms, 16);
  cr_assert_float_eq(l.hbm_bytes_per_s, 32e6 / 280e-6, 1);
  /* twice as long: half the rate */
  op.dur_us = 560;
  cr_assert_float_eq(ds_interference_load(&m, &op).hbm_bytes_per_s, 32e6 / 560e-6, 1);
  op.dur_us = 0;
  cr_assert_float_eq(ds_interference_load(&m, &op).hbm_bytes_per_s, 0, 0);
  op.dur_us = 280;
  op.algo = "ring";
  cr_assert_eq(ds_interference_load(&m, &op).sms, 0);
  op.algo = "ring/Simple";
  cr_assert_eq(ds_interference_load(NULL, &op).sms, 0);
  op.kind = DS_OP_BROADCAST;
  cr_assert_eq(ds_interference_load(&m, &op).sms, 0);
}

/* NCCL launches an NVLS or NVLSTree all-reduce as one CTA per NVLS channel,
 * nvlsChannels = NVLS_NCHANNELS_SM90 = 16 on Hopper (src/transport/nvls.cc:
 * 209-214, src/enqueue.cc:2084-2090 and 1756-1758, v2.30.7), each channel
 * over every head: dgx-h100's NVLS and 2node-ib's NVLSTree have 8 heads
 * (one per GPU, one per NIC) but hold 16 of H100's 132 SMs, so an SM-bound
 * kernel beside them runs 132 / (132 - 16) = 1.1379 times slower (8 SMs
 * would give 132 / 124 = 1.0645). */
static void nvls_holds_16_ctas(const char *path) {
  struct ds_err err = {0};
  struct ds_topo *t = NULL;
  struct ds_ring ring;
  struct ds_nccl_model m;
  struct ds_compute c;
  int32_t gpus[16];
  cr_assert_eq(ds_topo_load(path, NULL, &t, &err), DS_OK, "%s", err.msg);
  for (int32_t i = 0; i < t->n_gpus; i++) gpus[i] = i;
  cr_assert_eq(ds_ring_build_rails(t, gpus, t->n_gpus, &ring, &err), DS_OK, "%s", err.msg);
  cr_assert_eq(ds_nccl_model_build(t, &ring, DS_NCCL_EXTRA_NONE, &m, &err), DS_OK, "%s",
               err.msg);
  cr_assert_eq(ds_compute_init(t, DS_DTYPE_FP32, DS_AMP_NONE, &c, &err), DS_OK);
  cr_assert(m.nvls_ok, "%s: %s", path, m.nvls_why);
  cr_assert_eq(m.nvls_channels, 8, "%s: heads", path);
  cr_assert_eq(c.sms, 132);
  struct ds_op op = {.kind = DS_OP_ALLREDUCE, .algo = "nvls/Simple", .bytes = 16e6,
                     .dur_us = 100};
  struct ds_coll_load l = ds_interference_load(&m, &op);
  cr_assert_eq(l.sms, 16, "%s: %d SMs held", path, (int)l.sms);
  cr_assert_float_eq(ds_interference_factor(&c, 1, (struct ds_coll_load){l.sms, 0}, 0),
                     132.0 / 116, 1e-12);
  ds_ring_release(&ring);
  ds_topo_free(t);
}

Test(interference, nvls_holds_ncclS_ctas_not_its_heads) {
  nvls_holds_16_ctas("topologies/dgx-h100.yaml");
  nvls_holds_16_ctas("topologies/2node-ib.yaml");
}

/* Two ranks of dgx-a100 with NCCL's model of their ring (no extras), the
 * compute model, and a schedule to fill: each rank a kernel on the compute
 * stream and, after a wait on the copy stream, a ring/Simple all-reduce. */
struct pair_rig {
  struct ds_topo *t;
  struct ds_compute c;
  struct ds_ring ring;
  struct ds_nccl_model m;
  struct ds_schedule *s;
  struct ds_schedule_builder bd;
};

static void rig_open(struct pair_rig *g) {
  struct ds_err err = {0};
  *g = (struct pair_rig){0};
  cr_assert_eq(ds_topo_load("topologies/dgx-a100.yaml", NULL, &g->t, &err), DS_OK, "%s",
               err.msg);
  cr_assert_eq(ds_compute_init(g->t, DS_DTYPE_FP32, DS_AMP_NONE, &g->c, &err), DS_OK);
  int32_t gpus[2] = {0, 1};
  cr_assert_eq(ds_ring_build(g->t, gpus, 2, &g->ring, &err), DS_OK, "%s", err.msg);
  cr_assert_eq(ds_nccl_model_build(g->t, &g->ring, DS_NCCL_EXTRA_NONE, &g->m, &err), DS_OK,
               "%s", err.msg);
  cr_assert_eq(ds_schedule_new(2, &g->s), DS_OK);
  g->bd = (struct ds_schedule_builder){g->s, 0};
}

/* Rank r's three ops (ids 3r, 3r + 1, 3r + 2): the kernel (flops, bytes,
 * dur_us), the wait, the all-reduce of `bytes_ar` (its dur_us ar_us). */
static void rig_rank(struct pair_rig *g, int32_t r, double flops, double bytes, double dur_us,
                     double wait_us, double bytes_ar, double ar_us) {
  struct ds_op k = {.rank = r, .stream = DS_STREAM_COMPUTE, .kind = DS_OP_BWD, .name = "k",
                    .layer = -1, .bucket = -1, .coll = -1, .root = -1, .flops = flops,
                    .bytes = bytes, .dur_us = dur_us};
  cr_assert_eq(ds_schedule_emit(&g->bd, &k, NULL, 0), DS_OK);
  struct ds_op wait = {.rank = r, .stream = DS_STREAM_COPY, .kind = DS_OP_BWD,
                       .name = "wait", .layer = -1, .bucket = -1, .coll = -1, .root = -1,
                       .dur_us = wait_us};
  cr_assert_eq(ds_schedule_emit(&g->bd, &wait, NULL, 0), DS_OK);
  struct ds_op ar = {.rank = r, .stream = DS_STREAM_COMM, .kind = DS_OP_ALLREDUCE,
                     .name = "ar", .layer = -1, .bucket = 0, .coll = 0, .root = -1,
                     .algo = "ring/Simple", .bytes = bytes_ar, .dur_us = ar_us};
  cr_assert_eq(ds_schedule_emit(&g->bd, &ar, &wait.id, 1), DS_OK);
}

/* Runs the schedule, with the compute model or without: start/end [6]. */
static void rig_run(struct pair_rig *g, int with_compute, int64_t *start, int64_t *end) {
  struct ds_err err = {0};
  cr_assert_eq(ds_schedule_validate(g->s, &err), DS_OK, "%s", err.msg);
  struct ds_exec_options opt = {.net_mode = DS_NET_MAXMIN, .coll_model = DS_COLL_FLOW,
                                .ring_chunks = 1, .nccl = &g->m,
                                .compute = with_compute ? &g->c : NULL};
  struct ds_exec *ex;
  cr_assert_eq(ds_exec_new(g->t, &opt, &ex, &err), DS_OK, "%s", err.msg);
  int64_t rank_time[2] = {0, 0};
  cr_assert_eq(ds_exec_run(ex, g->s, rank_time, start, end, &err), DS_OK, "%s", err.msg);
  ds_exec_free(ex);
}

static void rig_close(struct pair_rig *g) {
  ds_schedule_free(g->s);
  ds_ring_release(&g->ring);
  ds_topo_free(g->t);
}

Test(interference, a_kernel_is_rerated_when_a_collective_starts_and_ends_beside_it) {
  /* dgx-a100, 2 ranks. Rank r: a compute-bound kernel whose FLOPs take
   * 1000 us at the topology's TF32 rate and efficiency (plus its kernel
   * overhead), and on the comm stream, 100 us after the kernel starts
   * (after a 100 us op on the copy stream), a ring/Simple all-reduce of
   * 64 MiB.
   * Expected, because the kernel runs at full speed for 100 us, then at
   * 1/f (f = 108 SMs / (108 - NCCL's ring channels)) until the all-reduce
   * ends at E, then at full speed again: it ends at
   * E + (1000 - 100 - (E - 100) / f) us. */
  struct pair_rig g;
  rig_open(&g);
  double flops = 1000e-6 * g.c.peak_flops_per_s * g.c.params.flops_efficiency;
  double kernel_us = 1000 + g.c.params.kernel_overhead_ns / 1000;
  for (int32_t r = 0; r < 2; r++)
    rig_rank(&g, r, flops, 0, kernel_us, 100, 64.0 * 1024 * 1024, 0);
  int64_t start[6], end[6];
  rig_run(&g, 1, start, end);
  double f = (double)g.t->gpu.sms / (g.t->gpu.sms - g.m.channels);
  cr_assert_gt(g.m.channels, 0);
  cr_assert_eq(start[2], 100000);
  double e_us = end[2] / 1000.0;
  cr_assert_lt(e_us, kernel_us, "the all-reduce ends while the kernel runs");
  double want_us = e_us + (kernel_us - 100 - (e_us - 100) / f);
  cr_assert_float_eq(end[0] / 1000.0, want_us, 0.002, "%g vs %g (f %g)", end[0] / 1000.0,
                     want_us, f);
  /* without the compute model, the kernel keeps its duration */
  rig_run(&g, 0, start, end);
  cr_assert_float_eq(end[0] / 1000.0, kernel_us, 0.001);
  rig_close(&g);
}

Test(interference, without_the_compute_model_nothing_interferes) {
  /* dgx-a100, 2 ranks, no compute model (exec.h: NULL, no interference),
   * the topology's comm_interference set to 0.5. Rank r: a 64 MiB
   * ring/Simple all-reduce from 0 (hundreds of us), and a 200 us kernel
   * that starts at 10 us (after a 10 us op on the copy stream), while the
   * all-reduce runs. Expected, because comm_interference is read in one
   * place, the compute model's parameters: the kernel ends at 210 us (the
   * old executor multiplied it by 1 + the topology's 0.5 here: 310 us). */
  struct pair_rig g;
  rig_open(&g);
  g.t->compute.comm_interference = 0.5;
  for (int32_t r = 0; r < 2; r++) {
    struct ds_op ar = {.rank = r, .stream = DS_STREAM_COMM, .kind = DS_OP_ALLREDUCE,
                       .name = "ar", .layer = -1, .bucket = 0, .coll = 0, .root = -1,
                       .algo = "ring/Simple", .bytes = 64.0 * 1024 * 1024};
    cr_assert_eq(ds_schedule_emit(&g.bd, &ar, NULL, 0), DS_OK);
    struct ds_op wait = {.rank = r, .stream = DS_STREAM_COPY, .kind = DS_OP_BWD,
                         .name = "wait", .layer = -1, .bucket = -1, .coll = -1, .root = -1,
                         .dur_us = 10};
    cr_assert_eq(ds_schedule_emit(&g.bd, &wait, NULL, 0), DS_OK);
    struct ds_op k = {.rank = r, .stream = DS_STREAM_COMPUTE, .kind = DS_OP_BWD, .name = "k",
                      .layer = -1, .bucket = -1, .coll = -1, .root = -1, .dur_us = 200};
    cr_assert_eq(ds_schedule_emit(&g.bd, &k, &wait.id, 1), DS_OK);
  }
  int64_t start[6], end[6];
  rig_run(&g, 0, start, end);
  cr_assert_eq(start[2], 10000);
  cr_assert_gt(end[0], end[2], "the all-reduce outlasts the kernel");
  cr_assert_eq(end[2], 210000);
  rig_close(&g);
}

Test(interference, a_collective_waiting_for_its_peer_holds_sms_but_moves_no_bytes) {
  /* dgx-a100, 2 ranks. Rank r: a memory-bound kernel of 1000 us (no
   * FLOPs) and, on the comm stream after a wait of 100 us (rank 0) or
   * 300 us (rank 1), a ring/Simple all-reduce of 64 MiB scheduled at
   * 400 us: 3 x 64 MiB of HBM bytes over 400 us. Rank 0's NCCL kernel
   * reaches it at 100 us and spins for rank 1 until 300 us: it holds its
   * SMs, which a memory-bound kernel does not need, and moves no bytes, so
   * rank 0's kernel runs at full speed until 300 us, then at 1/f (f =
   * B / (B - 3 S / 400 us), B the GPU's memory rate) until the all-reduce
   * ends at E, then at full speed: it ends at
   * E + (1000 - 300 - (E - 300) / f) us. */
  struct pair_rig g;
  rig_open(&g);
  double S = 64.0 * 1024 * 1024;
  for (int32_t r = 0; r < 2; r++) rig_rank(&g, r, 0, 1, 1000, r == 0 ? 100 : 300, S, 400);
  int64_t start[6], end[6];
  rig_run(&g, 1, start, end);
  cr_assert_eq(start[2], 100000, "rank 0 reaches the all-reduce at 100 us");
  cr_assert_eq(start[5], 300000, "rank 1 at 300 us");
  double B = g.c.mem_bw_bytes_per_s * g.c.params.mem_efficiency;
  double f = B / (B - 3 * S / 400e-6);
  double e_us = end[2] / 1000.0;
  cr_assert_lt(e_us, 1000, "the all-reduce ends while the kernel runs");
  double want_us = e_us + (1000 - 300 - (e_us - 300) / f);
  cr_assert_float_eq(end[0] / 1000.0, want_us, 0.002, "%g vs %g (f %g)", end[0] / 1000.0,
                     want_us, f);
  rig_close(&g);
}
