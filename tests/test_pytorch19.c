/*
 * PyTorch 1.9's rules (--pytorch-version 1.9), GradScaler's sync before the
 * step (--amp fp16) and gradient accumulation (--grad-accum,
 * --optimizer-batch), worked by hand on the tiny model (tests/data/tiny-
 * model.yaml: tensors l0.weight 262,144, l0.bias 256, l1.weight 524,288,
 * l2.weight 1,048,576; 1,835,264 parameters, 7,341,056 fp32 bytes) on
 * TestGPU (10 TFLOPS fp32, 20 fp16, 1000 GB/s, no kernel overhead):
 * forward 100, 200, 100 us, loss 2 us, backward 200, 400, 200 us (under
 * --amp fp16 the FLOPs at 20 TFLOPS: l0's backward 100 us); the foreach SGD
 * step's 8 passes 58.728 us.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/train/compute.h"
#include "sim/train/ddp.h"
#include "sim/train/dp.h"
#include "sim/train/host.h"
#include "sim/train/model.h"
#include "sim/net/topo.h"
#include "tests/support.h"

#define MIB (1024.0 * 1024.0)
#define TINY "--topo tests/data/tiny-topo.yaml --model tests/data/tiny-model.yaml "
#define HOST "--topo tests/data/tiny-host-topo.yaml --model tests/data/tiny-model.yaml "
/* tiny-host-topo.yaml's host costs, us */
#define L_US 1000.0 /* host_launch, per forward layer */
#define H_US 2000.0 /* host_backward, per backward layer */
#define P_US 200.0  /* host_grad_copy, per optimizer or zero_grad op */
#define STEP_US 58.728  /* 7,341,056 B x 8 passes at 1000 GB/s */
#define PARAM_B 7341056.0

struct fixture {
  struct ds_model *m;
  struct ds_topo *t;
  struct ds_compute c;
};

static void setup(struct fixture *f, const char *topo, enum ds_amp amp) {
  struct ds_err err = {0};
  *f = (struct fixture){0};
  cr_assert_eq(ds_topo_load(topo, NULL, &f->t, &err), DS_OK, "%s", err.msg);
  f->m = ds_test_model("tests/data/tiny-model.yaml");
  cr_assert_eq(ds_compute_init(f->t, DS_DTYPE_FP32, amp, &f->c, &err), DS_OK, "%s", err.msg);
}

static void teardown(struct fixture *f) {
  ds_model_free(f->m);
  ds_topo_free(f->t);
}

Test(pytorch19, step_kernels_zero_grad_and_accumulate_grad) {
  /* 1.9's SGD loop with weight decay: add, mul_, add_, add_ per tensor, 4
   * x 4 = 16 kernels, 11 passes (3 + 2 + 3 + 3) over each tensor's bytes,
   * under --amp fp16 too: GradScaler's unscale_ is its own op (2 passes
   * over every gradient, 14.682112 us; its 7 host ops). Host: a launch per
   * kernel plus zero_grad's 4 fills: 20. zero_grad writes every gradient once: 7,341,056 B,
   * 7.341056 us; with 2 us of kernel overhead 4 x 2 us more.
   * AccumulateGrad's add for l0 (two tensors, 262,400 elements) reads
   * both and writes: 3 x 1,049,600 B = 3,148,800 B, 3.1488 us. */
  struct fixture f;
  setup(&f, "tests/data/tiny-topo.yaml", DS_AMP_NONE);
  f.c.optimizer_loop = f.c.zero_grad_fill = f.c.weight_decay = 1;
  cr_assert_eq(ds_compute_step_kernels(&f.c, f.m), 16);
  cr_assert_eq(ds_compute_step_host_ops(&f.c, f.m), 20);
  cr_assert_float_eq(ds_compute_step_ns(&f.c, f.m), 11 * PARAM_B / 1e3, 1e-6);
  double bytes;
  cr_assert_float_eq(ds_compute_zero_grad_ns(&f.c, f.m, &bytes), PARAM_B / 1e3, 1e-6);
  cr_assert_float_eq(bytes, PARAM_B, 0.5);
  cr_assert_float_eq(ds_compute_accum_grad_ns(&f.c, f.m, 0, &bytes), 3148.8, 1e-6);
  cr_assert_float_eq(bytes, 3148800, 0.5);
  f.c.params.kernel_overhead_ns = 2000;
  cr_assert_float_eq(ds_compute_zero_grad_ns(&f.c, f.m, &bytes), PARAM_B / 1e3 + 4 * 2000,
                     1e-6);
  /* current PyTorch zeroes nothing (set_to_none=True) */
  f.c.zero_grad_fill = 0;
  cr_assert_float_eq(ds_compute_zero_grad_ns(&f.c, f.m, &bytes), 0, 1e-12);
  cr_assert_eq(ds_compute_step_host_ops(&f.c, f.m), 16);
  teardown(&f);
  setup(&f, "tests/data/tiny-topo.yaml", DS_AMP_FP16);
  f.c.optimizer_loop = f.c.zero_grad_fill = f.c.weight_decay = 1;
  cr_assert_eq(ds_compute_step_kernels(&f.c, f.m), 16);
  cr_assert_eq(ds_compute_step_host_ops(&f.c, f.m), 20);
  cr_assert_float_eq(ds_compute_step_ns(&f.c, f.m), 11 * PARAM_B / 1e3, 1e-6);
  cr_assert_float_eq(ds_compute_step_bytes(&f.c, f.m), 11 * PARAM_B, 0.5);
  cr_assert_float_eq(ds_compute_unscale_ns(&f.c, f.m, &bytes), 2 * PARAM_B / 1e3, 1e-6);
  cr_assert_float_eq(bytes, 2 * PARAM_B, 0.5);
  cr_assert_eq(ds_compute_unscale_host_ops(&f.c), 7);
  teardown(&f);
}

Test(pytorch19, host_bound_step_is_the_loop_and_zero_grad) {
  /* Host-bound single (tiny-host-topo): the forward and backward launches
   * end at 3 L + 3 H; then 1.9's 12 loop ops and zero_grad's 4 fills, 16 P,
   * while the GPU runs l0's backward, its AccumulateGrad add (3.1488 us:
   * .grad stays allocated after zero_grad), the step (58.728 us) and the
   * fills (7.341056 us) after the first launch. step_ms: the step and the
   * fills. --weight-decay: 4 more ops. */
  struct ds_test_result r =
      ds_test_cli(HOST "--strategy single --pytorch-version 1.9 --format csv");
  cr_assert_eq(r.status, 0, "%s", r.err);
  cr_assert_float_eq(ds_test_csv_num(r.out, "iter_ms", 0),
                     (3 * L_US + 3 * H_US + 16 * P_US) / 1e3, 1e-6, "%s", r.out);
  cr_assert_float_eq(ds_test_csv_num(r.out, "step_ms", 0), (STEP_US + 7.341056) / 1e3, 1e-6,
                     "%s", r.out);
  ds_test_release(&r);
  r = ds_test_cli(HOST "--strategy single --pytorch-version 1.9 --weight-decay --format csv");
  cr_assert_eq(r.status, 0, "%s", r.err);
  cr_assert_float_eq(ds_test_csv_num(r.out, "iter_ms", 0),
                     (3 * L_US + 3 * H_US + 20 * P_US) / 1e3, 1e-6, "%s", r.out);
  ds_test_release(&r);
}

Test(pytorch19, amp_fp16_step_waits_for_the_gpu_to_drain) {
  /* --amp fp16: GradScaler.step runs unscale_ after the host's 3 L + 3 H:
   * its 7 host ops (7 P, under which l0's backward, 100 us at the fp16
   * rate, and its AccumulateGrad add end), then its kernel (2 passes over
   * 7,341,056 B at 1000 GB/s, 14.682112 us); found_inf.item() (P) waits
   * for that kernel, then the loop's 12 step ops and 4 fills, 16 P,
   * host-bound: 3 L + 3 H + 7 P + 14.682112 + P + 16 P. Without the sync
   * the kernel would hide under the item's host op (3 L + 3 H + 24 P). */
  struct ds_test_result r =
      ds_test_cli(HOST
                  "--strategy single,ddp --world-size 1 --pytorch-version 1.9 --amp fp16 "
                  "--no-broadcast-buffers --format csv");
  cr_assert_eq(r.status, 0, "%s", r.err);
  double want = 3 * L_US + 3 * H_US + 24 * P_US + 14.682112;
  cr_assert_float_eq(ds_test_csv_num(r.out, "iter_ms", 0), want / 1e3, 1e-6, "%s", r.out);
  /* DDP on one GPU: its reducer's host ops too; later than single's,
   * never earlier */
  cr_assert_gt(ds_test_csv_num(r.out, "iter_ms", 1), want / 1e3 + 1e-6, "%s", r.out);
  ds_test_release(&r);
}

Test(pytorch19, grad_scaler_sync_is_fp16_only) {
  /* ds_host_emit_step under --amp fp16: unscale_'s host op, its kernels
   * after the given GPU ops and that host op, found_inf.item() waiting
   * for the kernels, then the loop's first launch (nothing but the host
   * stream before it) and the rest; bf16 autocast runs no GradScaler: no
   * unscale_, no sync, the first launch depends on nothing. */
  struct fixture f;
  setup(&f, "tests/data/tiny-host-topo.yaml", DS_AMP_FP16);
  f.c.optimizer_loop = 1;
  struct ds_schedule_builder bd;
  int64_t first, tail;
  ds_test_one_bwd_schedule(&bd, &tail);
  struct ds_schedule *s = bd.s;
  cr_assert_eq(ds_host_emit_step(&bd, &f.c, f.m, 0, &tail, 1, &first), DS_OK);
  cr_assert_eq(s->n_ops, 6);
  const struct ds_op *host = &s->ops[1], *kern = &s->ops[2], *item = &s->ops[3];
  cr_assert_str_eq(host->name, "unscale_");
  cr_assert_eq(host->stream, DS_STREAM_HOST);
  cr_assert_float_eq(host->dur_us, 7 * P_US, 1e-9);
  cr_assert_str_eq(kern->name, "unscale_");
  cr_assert_eq(kern->stream, DS_STREAM_COMPUTE);
  cr_assert_eq(kern->kind, DS_OP_STEP);
  cr_assert_float_eq(kern->dur_us, 14.682112, 1e-9);
  cr_assert_eq(kern->dep_count, 2);
  cr_assert_eq(ds_schedule_deps(s, kern)[0], tail);
  cr_assert_eq(ds_schedule_deps(s, kern)[1], host->id);
  cr_assert_str_eq(item->name, "found_inf.item");
  cr_assert_eq(item->dep_count, 1);
  cr_assert_eq(ds_schedule_deps(s, item)[0], kern->id);
  cr_assert_eq(first, s->ops[4].id);
  cr_assert_eq(s->ops[4].dep_count, 0);
  cr_assert_float_eq(s->ops[5].dur_us, 11 * P_US, 1e-9); /* 12 SGD launches */
  f.c.amp = DS_AMP_BF16;
  cr_assert_eq(ds_host_emit_step(&bd, &f.c, f.m, 0, &tail, 1, &first), DS_OK);
  cr_assert_eq(s->n_ops, 8);
  cr_assert_eq(first, s->ops[6].id);
  cr_assert_eq(s->ops[first].dep_count, 0);
  ds_schedule_free(s);
  teardown(&f);
}

Test(pytorch19, buckets_start_registration_binned_and_are_rebuilt) {
  /* 1.9: iteration 0 bins in registration order with [1 MiB, 25 MiB]
   * (l0.weight's 1 MiB closes the first bucket, the other three share the
   * second) and reverses the list; rebuilt before iteration 1 in
   * gradient-ready order (l2.weight's 4 MiB closes the first); the first
   * bucket stays 1 MiB under a given cap; static_graph is refused. */
  struct ds_model *m = ds_test_model("tests/data/tiny-model.yaml");
  struct ds_ddp_plan p;
  cr_assert_eq(ds_ddp_plan_rules(m, 4, 1 * MIB, 25 * MIB, 0, 0, DS_DDP_RULES_TORCH_1_9, &p),
               DS_OK);
  cr_assert_eq(p.rebuild_iter, 1);
  cr_assert_eq(p.initial.n, 2);
  /* reversed: the 1 MiB bucket of l0.weight goes last */
  cr_assert_float_eq(p.initial.b[1].bytes, 262144 * 4.0, 0.5);
  cr_assert_eq(p.initial.order[p.initial.b[1].first], 0);
  /* ready order (reverse registration): l2.weight (4 MiB) closes bucket 0 */
  cr_assert_eq(p.rebuilt.order[0], 3);
  cr_assert_float_eq(p.rebuilt.b[0].bytes, 1048576 * 4.0, 0.5);
  ds_ddp_plan_release(&p);
  cr_assert_float_eq(ds_ddp_first_bucket_mb(DS_DDP_RULES_TORCH_1_9, 5, 0), 1, 1e-12);
  cr_assert_float_eq(ds_ddp_first_bucket_mb(DS_DDP_RULES_CURRENT, 5, 0), 5, 1e-12);
  cr_assert_eq(ds_ddp_plan_rules(m, 4, 1 * MIB, 25 * MIB, 0, 1, DS_DDP_RULES_TORCH_1_9, &p),
               DS_EUSAGE);
  /* --first-bucket-mb 10 (distributed.py's _DEFAULT_FIRST_BUCKET_BYTES):
   * iteration 0's first bucket takes all 7 MiB; the rebuild keeps the C++
   * kDefaultFirstBucketBytes, 1 MiB, so l2.weight's 4 MiB still closes it */
  cr_assert_eq(ds_ddp_plan_rules(m, 4, 10 * MIB, 25 * MIB, 0, 0, DS_DDP_RULES_TORCH_1_9, &p),
               DS_OK);
  cr_assert_eq(p.initial.n, 1);
  cr_assert_eq(p.rebuilt.n, 2);
  cr_assert_float_eq(p.rebuilt.b[0].bytes, 1048576 * 4.0, 0.5);
  ds_ddp_plan_release(&p);
  ds_model_free(m);
}

Test(pytorch19, grad_accum_single_steps_once_per_two_micro_steps) {
  /* tiny-topo, single, --grad-accum 2: micro-step 1 is the host's first
   * launch (20 us) and 1202 us of kernels; micro-step 2's first launch
   * waits for that GPU work, then 20 + 1202 us plus AccumulateGrad's adds
   * into the allocated .grad (l2 12.582912, l1 6.291456, l0 3.1488 us);
   * then one step: 2 x 1222 + 22.023168 + 58.728 us. per_batch_ms is half
   * of it; samples_per_s counts 2 batches. */
  struct ds_test_result r = ds_test_cli(TINY "--strategy single --grad-accum 2 --format csv");
  cr_assert_eq(r.status, 0, "%s", r.err);
  double iter = 2 * 1222 + 22.023168 + STEP_US;
  cr_assert_float_eq(ds_test_csv_num(r.out, "iter_ms", 0), iter / 1e3, 1e-6, "%s", r.out);
  cr_assert_float_eq(ds_test_csv_num(r.out, "step_ms", 0), STEP_US / 1e3, 1e-6);
  cr_assert_float_eq(ds_test_csv_num(r.out, "per_batch_ms", 0), iter / 2e3, 1e-6);
  cr_assert_float_eq(ds_test_csv_num(r.out, "samples_per_s", 0), 2 / (iter / 1e6), 1e-3);
  char opts[64];
  ds_test_csv_str(r.out, "ddp_options", 0, opts, sizeof opts);
  cr_assert_str_eq(opts, "grad_accum=2");
  ds_test_release(&r);
  /* the schedule: 2 forward and backward passes, 3 adds, one step */
  struct fixture f;
  setup(&f, "tests/data/tiny-topo.yaml", DS_AMP_NONE);
  struct ds_schedule *s;
  cr_assert_eq(ds_schedule_new(1, &s), DS_OK);
  struct ds_dp_options o = {.world_size = 1, .batch = 1, .single = 1, .grad_accum = 2};
  int64_t n_coll;
  cr_assert_eq(ds_dp_build(f.m, &f.c, &o, NULL, 0, 0, s, &n_coll), DS_OK);
  int losses = 0, steps = 0, adds = 0;
  for (size_t i = 0; i < s->n_ops; i++) {
    losses += s->ops[i].kind == DS_OP_LOSS;
    steps += s->ops[i].kind == DS_OP_STEP;
    adds += strstr(s->ops[i].name, ".accum_grad") != NULL;
  }
  cr_assert_eq(losses, 2);
  cr_assert_eq(steps, 1);
  cr_assert_eq(adds, 3);
  cr_assert_eq(n_coll, 0);
  ds_schedule_free(s);
  teardown(&f);
}

Test(pytorch19, grad_accum_ddp_all_reduces_every_bucket_every_micro_step) {
  /* DDP outside no_sync, --grad-accum 2, 2 ranks, buckets [l2.weight],
   * [l1.weight, l0.bias, l0.weight]: per micro-step every layer's copy
   * into its bucket, both all-reduces and both copies back; collective
   * ids 0, 1 then 2, 3 (each micro-step its own); the second micro-step's
   * 3 AccumulateGrad adds; one step. */
  struct fixture f;
  setup(&f, "tests/data/tiny-topo.yaml", DS_AMP_NONE);
  struct ds_buckets b;
  cr_assert_eq(ds_ddp_buckets(f.m, 4, 1 * MIB, 25 * MIB, DS_BUCKETS_READY, &b), DS_OK);
  cr_assert_eq(b.n, 2);
  struct ds_schedule *s;
  cr_assert_eq(ds_schedule_new(2, &s), DS_OK);
  struct ds_ddp_options opt = {.world_size = 2, .batch = 1, .proto_fixed = DS_PROTO_COUNT,
                               .grad_accum = 2};
  cr_assert_eq(ds_ddp_build(f.m, &f.c, &opt, &b, 0, 0, s), DS_OK);
  struct ds_err err = {0};
  cr_assert_eq(ds_schedule_validate(s, &err), DS_OK, "%s", err.msg);
  int ar = 0, to_bucket = 0, to_grad = 0, adds = 0, steps = 0;
  int64_t colls[8];
  for (size_t i = 0; i < s->n_ops; i++) {
    const struct ds_op *op = &s->ops[i];
    if (op->rank != 0) continue;
    if (op->kind == DS_OP_ALLREDUCE && ar < 8) colls[ar] = op->coll;
    ar += op->kind == DS_OP_ALLREDUCE;
    to_bucket += strstr(op->name, ".to_bucket") != NULL;
    to_grad += strstr(op->name, ".to_grad") != NULL;
    adds += strstr(op->name, ".accum_grad") != NULL;
    steps += op->kind == DS_OP_STEP;
  }
  cr_assert_eq(ar, 4);
  for (int k = 0; k < 4; k++) cr_assert_eq(colls[k], k);
  cr_assert_eq(to_bucket, 6);
  cr_assert_eq(to_grad, 4);
  cr_assert_eq(adds, 3);
  cr_assert_eq(steps, 1);
  cr_assert_eq(ds_ddp_colls_per_iteration(&opt, b.n, 5), 4, "no broadcast: buckets x 2");
  opt.broadcast_buffers = 1;
  cr_assert_eq(ds_ddp_colls_per_iteration(&opt, b.n, 5), 14);
  ds_schedule_free(s);
  ds_ddp_buckets_release(&b);
  teardown(&f);
  /* The whole run: samples/s counts both micro-steps' batches */
  struct ds_test_result r =
      ds_test_cli(TINY "--strategy ddp --world-size 2 --grad-accum 2 --format csv");
  cr_assert_eq(r.status, 0, "%s", r.err);
  double iter = ds_test_csv_num(r.out, "iter_ms", 0);
  cr_assert_float_eq(ds_test_csv_num(r.out, "samples_per_s", 0), 2 * 2 / (iter / 1e3), 1e-3);
  ds_test_release(&r);
}

/* Where PowerSGD's warm-up iteration (0) divides bucket 0, by the rules
 * the run follows: 1.9's _allreduce_fut all-reduces first and divides in
 * the future's callback (the copy stream, after the all-reduce); later
 * ones divide first, on the compute stream, before it. */
static void warmup_div_order(enum ds_ddp_rules rules, int *div_after, int *on_copy) {
  struct fixture f;
  setup(&f, "tests/data/tiny-topo.yaml", DS_AMP_NONE);
  struct ds_buckets b;
  cr_assert_eq(ds_ddp_buckets(f.m, 4, 1 * MIB, 25 * MIB, DS_BUCKETS_READY, &b), DS_OK);
  struct ds_schedule *s;
  cr_assert_eq(ds_schedule_new(2, &s), DS_OK);
  struct ds_ddp_options opt = {.world_size = 2, .batch = 1, .proto_fixed = DS_PROTO_COUNT,
                               .hook = {DS_HOOK_POWERSGD, 2}, .rules = rules, .iter = 0};
  cr_assert_eq(ds_ddp_build(f.m, &f.c, &opt, &b, 0, 0, s), DS_OK);
  struct ds_err err = {0};
  cr_assert_eq(ds_schedule_validate(s, &err), DS_OK, "%s", err.msg);
  size_t div = s->n_ops, ar = s->n_ops;
  for (size_t i = 0; i < s->n_ops; i++) {
    if (s->ops[i].rank != 0 || s->ops[i].bucket != 0) continue;
    if (strcmp(s->ops[i].name, "bucket0.allreduce_div") == 0) div = i;
    if (s->ops[i].kind == DS_OP_ALLREDUCE && ar == s->n_ops) ar = i;
  }
  cr_assert(div < s->n_ops && ar < s->n_ops, "no bucket0.allreduce_div or all-reduce");
  *div_after = div > ar;
  *on_copy = s->ops[div].stream == DS_STREAM_COPY;
  ds_schedule_free(s);
  ds_ddp_buckets_release(&b);
  teardown(&f);
}

Test(pytorch19, powersgd_warmup_divides_after_the_all_reduce) {
  int after, on_copy;
  warmup_div_order(DS_DDP_RULES_TORCH_1_9, &after, &on_copy);
  cr_assert(after && on_copy, "1.9: the division in the all-reduce's callback");
  warmup_div_order(DS_DDP_RULES_CURRENT, &after, &on_copy);
  cr_assert(!after && !on_copy, "current: the division first, in the hook");
}

Test(pytorch19, optimizer_batch_gives_each_configuration_its_k) {
  /* DeepLearningExamples' rule: K = optimizer batch / (world x batch):
   * 4 / (1 x 1) = 4 for single, 4 / (2 x 1) = 2 for ddp on 2 GPUs; the
   * speedup over single is their samples/s ratio. */
  struct ds_test_result r =
      ds_test_cli(TINY "--strategy single,ddp --world-size 2 --optimizer-batch 4 --format csv");
  cr_assert_eq(r.status, 0, "%s", r.err);
  char opts[64];
  ds_test_csv_str(r.out, "ddp_options", 0, opts, sizeof opts);
  cr_assert_str_eq(opts, "grad_accum=4");
  ds_test_csv_str(r.out, "ddp_options", 1, opts, sizeof opts);
  cr_assert_str_eq(opts, "grad_accum=2");
  double single = 4 / (ds_test_csv_num(r.out, "iter_ms", 0) / 1e3);
  double ddp = 2 * 2 / (ds_test_csv_num(r.out, "iter_ms", 1) / 1e3);
  cr_assert_float_eq(ds_test_csv_num(r.out, "speedup_vs_single", 1), ddp / single, 1e-5);
  ds_test_release(&r);
}

Test(pytorch19, refusals) {
  ds_test_ddpsim_refuses(TINY "--strategy dp --grad-accum 2",
                         "option --grad-accum: gradient accumulation is built for --strategy "
                         "single and ddp, not dp");
  ds_test_ddpsim_refuses(TINY "--strategy ps --optimizer-batch 8",
                         "option --optimizer-batch: gradient accumulation is built for "
                         "--strategy single and ddp, not ps");
  ds_test_ddpsim_refuses(TINY "--grad-accum 2 --no-sync 2", "option --grad-accum with --no-sync 2");
  ds_test_ddpsim_refuses(TINY "--grad-accum 2 --optimizer-batch 8",
                         "options --grad-accum and --optimizer-batch: give one");
  ds_test_ddpsim_refuses(TINY "--grad-accum 0", "--grad-accum");
  ds_test_ddpsim_refuses(TINY "--world-size 2 --batch 3 --optimizer-batch 8",
                         "option --optimizer-batch 8: not a whole number of micro-steps (1 to "
                         "1024) of world size 2 x batch 3 (give a multiple of 6 from 6 to "
                         "6144: 6 or 12 here)");
  /* below one micro-step and past 1024 of them: the one multiple nearest
   * (a new user's review: the refusal named no value that works) */
  ds_test_ddpsim_refuses(TINY "--world-size 4 --batch 32 --optimizer-batch 64",
                         "(give a multiple of 128 from 128 to 131072: 128 here)");
  ds_test_ddpsim_refuses(TINY "--world-size 1 --batch 1 --optimizer-batch 2000",
                         "(give a multiple of 1 from 1 to 1024: 1024 here)");
  /* a row within the bound (4 ranks x batch 1: 1024 micro-steps) whose
   * speedup_vs_single baseline is past it (one GPU: 4096): the refusal
   * said "world size 1 x batch 1", a world the run was never given */
  ds_test_ddpsim_refuses(TINY "--world-size 4 --batch 1 --optimizer-batch 4096",
                         "option --optimizer-batch 4096: speedup_vs_single's baseline, one "
                         "GPU at batch 1, would run 4096 micro-steps, more than 1024 (each "
                         "row's are N / (world x batch), the baseline's too): give 1024 or "
                         "less, or --grad-accum K (K micro-steps on every row)");
  ds_test_ddpsim_refuses(TINY "--pytorch-version 1.9 --static-graph",
                         "option --pytorch-version 1.9: PyTorch 1.9 has no static_graph");
  /* 1.9's rebuild takes C++'s 1 MiB whatever --first-bucket-mb: the option
   * left the reported iteration as it was while the summary named its cap */
  const char *first[] = {TINY "--pytorch-version 1.9 --first-bucket-mb 20",
                         TINY "--pytorch-version 1.9 --first-bucket-mb 1,20",
                         "buckets --pytorch-version 1.9 --first-bucket-mb 20"};
  for (size_t i = 0; i < sizeof first / sizeof *first; i++)
    ds_test_ddpsim_refuses(first[i], "option --pytorch-version 1.9: PyTorch 1.9 has no "
                                     "--first-bucket-mb (its rebuilt buckets, those of every "
                                     "iteration after the first, take C++'s "
                                     "kDefaultFirstBucketBytes, 1 MiB");
  ds_test_ddpsim_refuses(TINY "--pytorch-version 2.0", "--pytorch-version");
  /* 1.9's default_hooks.py has allreduce_hook, fp16_compress_hook and
   * fp16_compress_wrapper; bf16_compress_hook came in 1.10 (it ran as fp16's
   * twin before) */
  ds_test_ddpsim_refuses(TINY "--pytorch-version 1.9 --comm-hook bf16",
                         "option --pytorch-version 1.9: PyTorch 1.9 has no bf16_compress_hook");
  ds_test_ddpsim_refuses(TINY "--pytorch-version 1.9 --comm-hook fp16,bf16",
                         "option --pytorch-version 1.9: PyTorch 1.9 has no bf16_compress_hook");
}

Test(pytorch19, bn_parameters_can_sit_in_an_undecayed_group) {
  /* --no-bn-weight-decay with the tiny model's l0.bias renamed bn.bias
   * (256 elements, 1,024 B): under 1.9's loop that tensor runs 3 kernels,
   * not 4 (15 in all) and the decay's 3 passes skip its 1,024 B; under
   * foreach the two groups run their own calls, 3 + 4 = 7 kernels, the
   * decay over the other group's bytes only. */
  struct fixture f;
  setup(&f, "tests/data/tiny-topo.yaml", DS_AMP_NONE);
  free(f.m->params[1].name);
  f.m->params[1].name = strdup("bn.bias");
  f.c.weight_decay = f.c.no_bn_weight_decay = 1;
  double bytes = 11 * PARAM_B - 3 * 1024;
  cr_assert_eq(ds_compute_step_kernels(&f.c, f.m), 7);
  cr_assert_float_eq(ds_compute_step_bytes(&f.c, f.m), bytes, 0.5);
  f.c.optimizer_loop = 1;
  cr_assert_eq(ds_compute_step_kernels(&f.c, f.m), 15);
  cr_assert_float_eq(ds_compute_step_ns(&f.c, f.m), bytes / 1e3, 1e-6);
  /* without the option every tensor decays */
  f.c.no_bn_weight_decay = 0;
  cr_assert_eq(ds_compute_step_kernels(&f.c, f.m), 16);
  teardown(&f);
  ds_test_ddpsim_refuses(TINY "--no-bn-weight-decay", "option --no-bn-weight-decay: needs "
                                                      "--weight-decay");
  ds_test_ddpsim_refuses(TINY "--strategy ps --weight-decay --no-bn-weight-decay",
                         "option --no-bn-weight-decay: not built for --strategy ps");
}

Test(pytorch19, dp_adds_the_reduced_gradients_into_kept_grad_on_gpu0) {
  /* DataParallel on 2 GPUs: the replicas' gradients are fresh tensors, but
   * the reduced ones reach the module's parameters through Broadcast's
   * backward and AccumulateGrad, which under 1.4 and 1.9 (.grad kept) adds
   * into .grad on GPU 0 once every chunk is reduced: the three layers'
   * adds (l2 12.582912, l1 6.291456, l0 3.1488 us) after GPU 0's last
   * reduce, the step after them; none on GPU 1, none without grad_kept. */
  struct fixture f;
  setup(&f, "tests/data/tiny-topo.yaml", DS_AMP_NONE);
  struct ds_dp_chunks ch;
  cr_assert_eq(ds_dp_chunks(f.m, 4, DS_DP_COALESCE_BYTES, &ch), DS_OK);
  struct ds_dp_options o = {.world_size = 2, .batch = 1};
  for (int kept = 0; kept <= 1; kept++) {
    f.c.grad_kept = kept;
    struct ds_schedule *s;
    int64_t n_coll;
    cr_assert_eq(ds_schedule_new(2, &s), DS_OK);
    cr_assert_eq(ds_dp_build(f.m, &f.c, &o, &ch, 0, 0, s, &n_coll), DS_OK);
    int adds = 0;
    double add_us = 0;
    int64_t last_reduce = -1, prev = -1;
    for (size_t i = 0; i < s->n_ops; i++) {
      const struct ds_op *op = &s->ops[i];
      if (op->rank == 0 && op->kind == DS_OP_REDUCE) last_reduce = op->id;
      if (strstr(op->name, ".accum_grad") == NULL) continue;
      cr_assert_eq(op->rank, 0, "%s on GPU %d", op->name, op->rank);
      cr_assert_eq(op->stream, DS_STREAM_COMPUTE);
      /* each after the one before, the first after the last reduce */
      const int64_t *deps = ds_schedule_deps(s, op);
      cr_assert_eq(op->dep_count, 1);
      cr_assert_eq(deps[0], adds == 0 ? last_reduce : prev, "%s", op->name);
      prev = op->id;
      adds++;
      add_us += op->dur_us;
    }
    cr_assert_eq(adds, kept ? 3 : 0);
    cr_assert_float_eq(add_us, kept ? 22.023168 : 0, 1e-6);
    if (kept) {
      int64_t step[2];
      ds_schedule_last_of_kind(s, DS_OP_STEP, 2, step);
      cr_assert_eq(step[1], -1, "GPU 1 does not step");
      const struct ds_op *st = NULL;
      for (size_t i = 0; i < s->n_ops; i++)
        if (s->ops[i].id == step[0]) st = &s->ops[i];
      cr_assert_not_null(st);
      const int64_t *deps = ds_schedule_deps(s, st);
      int waits = 0;
      for (uint32_t d = 0; d < st->dep_count; d++) waits |= deps[d] == prev;
      cr_assert(waits, "the step waits for the last add");
    }
    ds_schedule_free(s);
  }
  ds_dp_chunks_release(&ch);
  /* memory: while the reduce writes the sum, GPU 0 holds replica 0's
   * gradients, the sum and the kept .grad it is added into: 3P, against
   * 2P where the sum becomes .grad; GPU 1 its replica's P either way */
  struct ds_dp_memory mem;
  struct ds_precision fp32 = {4, 4, 0};
  ds_dp_memory(f.m, &fp32, &o, &mem);
  cr_assert_float_eq(mem.gpu0.grads, 2 * PARAM_B, 0.5);
  o.grad_kept = 1;
  ds_dp_memory(f.m, &fp32, &o, &mem);
  cr_assert_float_eq(mem.gpu0.grads, 3 * PARAM_B, 0.5);
  cr_assert_float_eq(mem.other.grads, PARAM_B, 0.5);
  teardown(&f);
}
