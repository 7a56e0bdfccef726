/*
 * --optimizer bertadam (compute.h ds_compute_step_ns; compute_step.c
 * BERTADAM_OPS): DeepLearningExamples' BERT run_squad.py fp32 step, worked
 * by hand.
 *
 * Toy: four fp32 tensors, in registration order enc.dense.weight
 * (1,000,000 elements; no 'bias' or 'LayerNorm.weight' in its name:
 * weight_decay 0.01), enc.dense.bias (100,000) and enc.LayerNorm.weight
 * (100,000) (weight_decay 0), pooler.dense.weight (1,000,000:
 * run_squad.py:959 leaves it out of the optimizer). On TestGPU (1000 GB/s,
 * mem_efficiency 1: 1000 bytes a ns) with a kernel_overhead of 5 us:
 *   per tensor, BertAdam.step's loop: clip_grad_norm_ 8 kernels (norm of the
 *   gradient 1 pass, six 0-d kernels of 8 bytes, the gradient's mul_ 2
 *   passes), the moments and the update 10 kernels (2+3+2+3+2+2+3+2+2+3 =
 *   24 passes), the decay 2 more (2+3 = 5 passes): the weight 20 kernels,
 *   32 x 4,000,000 B + 6 x 8 B = 128,000,048 B; each undecayed tensor 18
 *   kernels, 27 x 400,000 B + 48 B = 10,800,048 B; 56 kernels, 149,600,144
 *   B, 149,600.144 ns + 56 x 5000 ns = 429,600.144 ns; a host dispatch each;
 *   GradientClipper's l2norm over the three stepped gradients (16 + 2 + 2
 *   chunks of 65,536: one multi_tensor_apply launch) with its zeros({320})
 *   fill and cleanup: 3 kernels, 1280 + 4,800,000 + 1284 = 4,802,564 B,
 *   4802.564 + 3 x 5000 = 19,802.564 ns; the scale over [grads, grads]: 1
 *   launch, 9,600,000 B, 14,600 ns.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "sim/net/topo.h"
#include "sim/train/compute.h"
#include "sim/train/host.h"
#include "sim/train/memory.h"
#include "sim/train/model.h"
#include "tests/support.h"

#define OVERHEAD_NS 5000.0
#define P_US 200.0 /* tests/data/tiny-host-topo.yaml's host_grad_copy */

static char W[] = "enc.dense.weight"; /* a decayed weight's name, as the toy's first */

/* The toy (support.h) under --dtype fp32 and this file's optimizer. */
static void toy_setup(struct ds_test_bert_toy *f, const char *topo) {
  ds_test_bert_toy_setup(f, topo, DS_DTYPE_FP32, DS_OPT_BERTADAM, OVERHEAD_NS);
}

Test(bertadam, per_tensor_op_list) {
  /* optimization.py:146-171 with clip_grad_norm_ (8 kernels) in front;
   * PyTorch 2.x's clip_grad_norm_ (current rules) runs _foreach_norm's
   * zeros, launch and cleanup for 1.x's one norm: 2 more 0-d kernels */
  struct ds_test_bert_toy f;
  toy_setup(&f, "tests/data/tiny-topo.yaml");
  cr_assert_eq(ds_compute_bertadam_tensor_kernels(&f.c, 1), 20);
  cr_assert_eq(ds_compute_bertadam_tensor_kernels(&f.c, 0), 18);
  cr_assert_eq(ds_compute_bertadam_tensor_passes(&f.c, 1), 32);
  cr_assert_eq(ds_compute_bertadam_tensor_passes(&f.c, 0), 27);
  f.c.clip_foreach = 1;
  cr_assert_eq(ds_compute_bertadam_tensor_kernels(&f.c, 1), 22);
  cr_assert_eq(ds_compute_bertadam_tensor_kernels(&f.c, 0), 20);
  cr_assert_eq(ds_compute_bertadam_tensor_passes(&f.c, 1), 32);
  cr_assert_eq(ds_compute_bertadam_tensor_passes(&f.c, 0), 27);
  /* the toy: 3 x 2 more kernels of 8 bytes and 5 us each */
  cr_assert_eq(ds_compute_step_kernels(&f.c, &f.m), 62);
  cr_assert_float_eq(ds_compute_step_bytes(&f.c, &f.m), 149600144 + 48, 1e-3);
  cr_assert_float_eq(ds_compute_step_ns(&f.c, &f.m), 429600.144 + 0.048 + 6 * OVERHEAD_NS,
                     1e-6);
  ds_test_bert_toy_free(&f);
}

Test(bertadam, toy_step_kernels_bytes_and_host_dispatches) {
  struct ds_test_bert_toy f;
  toy_setup(&f, "tests/data/tiny-topo.yaml");
  cr_assert_eq(ds_compute_step_kernels(&f.c, &f.m), 56);
  cr_assert_eq(ds_compute_step_launches(&f.c, &f.m), 56);
  cr_assert_float_eq(ds_compute_step_bytes(&f.c, &f.m), 149600144, 1e-3);
  cr_assert_float_eq(ds_compute_step_ns(&f.c, &f.m), 429600.144, 1e-6);
  /* a host dispatch per kernel; under 1.9's zero_grad a fill per stepped
   * tensor (3: not the pooler's), each writing its gradient once */
  cr_assert_eq(ds_compute_step_host_ops(&f.c, &f.m), 56);
  f.c.zero_grad_fill = 1;
  cr_assert_eq(ds_compute_step_host_ops(&f.c, &f.m), 59);
  double bytes;
  cr_assert_float_eq(ds_compute_zero_grad_ns(&f.c, &f.m, &bytes), 4800 + 3 * OVERHEAD_NS, 1e-6);
  cr_assert_float_eq(bytes, 4800000, 1e-3);
  /* the loop whatever the version: the same with optimizer_loop off */
  f.c.optimizer_loop = 0;
  f.c.zero_grad_fill = 0;
  cr_assert_eq(ds_compute_step_host_ops(&f.c, &f.m), 56);
  cr_assert_float_eq(ds_compute_step_ns(&f.c, &f.m), 429600.144, 1e-6);
  cr_assert_float_eq(ds_host_foreach_step_ns(&f.c, &f.m), 0, 0);
  /* names decide the groups: renaming the bias to a weight adds its 2
   * decay kernels and 5 passes (2,000,000 B) */
  f.ps[1].name = W;
  cr_assert_eq(ds_compute_step_kernels(&f.c, &f.m), 58);
  cr_assert_float_eq(ds_compute_step_bytes(&f.c, &f.m), 149600144 + 2000000, 1e-3);
  ds_test_bert_toy_free(&f);
}

Test(bertadam, toy_clipper) {
  struct ds_test_bert_toy f;
  toy_setup(&f, "tests/data/tiny-topo.yaml");
  double bytes;
  cr_assert_eq(ds_compute_clip_norm_launches(&f.c, &f.m), 3);
  cr_assert_float_eq(ds_compute_clip_norm_ns(&f.c, &f.m, &bytes), 19802.564, 1e-6);
  cr_assert_float_eq(bytes, 4802564, 1e-3);
  cr_assert_eq(ds_compute_clip_scale_launches(&f.c, &f.m), 1);
  cr_assert_float_eq(ds_compute_clip_scale_ns(&f.c, &f.m, &bytes), 14600, 1e-6);
  cr_assert_float_eq(bytes, 9600000, 1e-3);
  /* Adam has no clipper */
  f.m.optimizer = DS_OPT_ADAM;
  cr_assert_eq(ds_compute_clip_norm_launches(&f.c, &f.m), 0);
  cr_assert_float_eq(ds_compute_clip_scale_ns(&f.c, &f.m, &bytes), 0, 0);
  cr_assert_float_eq(bytes, 0, 0);
  ds_test_bert_toy_free(&f);
}

Test(bertadam, clipper_launches_follow_apex_limits) {
  /* apex's multi_tensor_apply: 110 tensors a launch at depth 1 (l2norm),
   * 64 at depth 2 (scale), 320 chunks of 65,536 elements. 130 one-chunk
   * tensors: l2norm 110 + 20, 2 launches (+ fill and cleanup: 4); scale
   * 64 + 64 + 2, 3. One tensor of 320 x 65,536 + 1 elements: 321 chunks,
   * 2 launches of each. */
  struct ds_test_bert_toy f;
  toy_setup(&f, "tests/data/tiny-topo.yaml");
  struct ds_param many[130];
  for (int i = 0; i < 130; i++) many[i] = (struct ds_param){.name = W, .numel = 1000};
  struct ds_model m = {.params = many, .n_params = 130, .total_numel = 130000,
                       .optimizer = DS_OPT_BERTADAM};
  cr_assert_eq(ds_compute_clip_norm_launches(&f.c, &m), 4);
  cr_assert_eq(ds_compute_clip_scale_launches(&f.c, &m), 3);
  struct ds_param big = {.name = W, .numel = 320 * 65536 + 1};
  m = (struct ds_model){.params = &big, .n_params = 1, .total_numel = big.numel,
                        .optimizer = DS_OPT_BERTADAM};
  cr_assert_eq(ds_compute_clip_norm_launches(&f.c, &m), 4);
  cr_assert_eq(ds_compute_clip_scale_launches(&f.c, &m), 2);
  ds_test_bert_toy_free(&f);
}

Test(bertadam, clipper_list_in_param_group_order) {
  /* amp.master_params walks param_groups: the decayed group, then the
   * undecayed one, not registration order. 30 weights and 60 biases of 2
   * chunks (100,000 elements), then a weight of 300 chunks, registered in
   * that order. scale (64 tensors a launch) in registration order would
   * launch at the 64th tensor (30 weights, 34 biases), at 320 blocks inside
   * the big weight (26 biases' 52 + 268) and at the end: 3; in group
   * order the 30 weights' 60 blocks and 260 of the big weight's fill one
   * launch, its last 40 and the 60 biases' 120 (61 tensors) end the
   * other: 2. l2norm (110 tensors): 480 blocks, 91 tensors, 2 launches
   * either way, + fill and cleanup. */
  struct ds_test_bert_toy f;
  toy_setup(&f, "tests/data/tiny-topo.yaml");
  static char bias[] = "l.bias";
  struct ds_param ps[91];
  for (int i = 0; i < 90; i++)
    ps[i] = (struct ds_param){.name = i < 30 ? W : bias, .numel = 100000};
  ps[90] = (struct ds_param){.name = W, .numel = 300 * 65536};
  struct ds_model m = {.params = ps, .n_params = 91,
                       .total_numel = 9000000 + 300 * 65536, .optimizer = DS_OPT_BERTADAM};
  cr_assert_eq(ds_compute_clip_scale_launches(&f.c, &m), 2);
  cr_assert_eq(ds_compute_clip_norm_launches(&f.c, &m), 4);
  ds_test_bert_toy_free(&f);
}

Test(bertadam, host_ops_sync_between_norm_and_loop) {
  /* ds_host_emit_step: the l2norm's 3 launches on the host (3 P), its
   * kernels after the GPU's tail and them, total_norm.item() (P) waiting
   * for those kernels, the scale's launch (P) and its kernels, then the
   * loop's first launch (which the step's kernels wait for) and its other
   * 55 launches. */
  struct ds_test_bert_toy f;
  toy_setup(&f, "tests/data/tiny-host-topo.yaml");
  struct ds_schedule_builder bd;
  int64_t first, tail;
  ds_test_one_bwd_schedule(&bd, &tail);
  struct ds_schedule *s = bd.s;
  cr_assert_eq(ds_host_emit_step(&bd, &f.c, &f.m, 0, &tail, 1, &first), DS_OK);
  cr_assert_eq(s->n_ops, 8);
  const struct ds_op *o = s->ops;
  cr_assert_str_eq(o[1].name, "clip.l2norm");
  cr_assert_eq(o[1].stream, DS_STREAM_HOST);
  cr_assert_float_eq(o[1].dur_us, 3 * P_US, 1e-9);
  cr_assert_str_eq(o[2].name, "clip.l2norm");
  cr_assert_eq(o[2].stream, DS_STREAM_COMPUTE);
  cr_assert_eq(o[2].dep_count, 2);
  cr_assert_eq(ds_schedule_deps(s, &o[2])[0], tail);
  cr_assert_eq(ds_schedule_deps(s, &o[2])[1], o[1].id);
  cr_assert_str_eq(o[3].name, "total_norm.item");
  cr_assert_eq(o[3].stream, DS_STREAM_HOST);
  cr_assert_eq(o[3].dep_count, 1);
  cr_assert_eq(ds_schedule_deps(s, &o[3])[0], o[2].id);
  cr_assert_float_eq(o[3].dur_us, P_US, 1e-9);
  cr_assert_str_eq(o[4].name, "clip.scale");
  cr_assert_float_eq(o[4].dur_us, P_US, 1e-9);
  cr_assert_str_eq(o[5].name, "clip.scale");
  cr_assert_eq(o[5].stream, DS_STREAM_COMPUTE);
  cr_assert_eq(ds_schedule_deps(s, &o[5])[0], o[4].id);
  cr_assert_str_eq(o[6].name, "optimizer");
  cr_assert_eq(first, o[6].id);
  cr_assert_float_eq(o[6].dur_us, P_US, 1e-9);
  cr_assert_float_eq(o[7].dur_us, 55 * P_US, 1e-9);
  ds_schedule_free(s);
  ds_test_bert_toy_free(&f);
}

Test(bertadam, memory_state_and_temporaries) {
  /* next_m and next_v (2 states); the step's temporaries: `update`,
   * update_with_lr and its negation of the largest stepped-or-not tensor,
   * 3 x 1,000,000 x 4 B */
  struct ds_test_bert_toy f;
  toy_setup(&f, "tests/data/tiny-topo.yaml");
  cr_assert_eq(ds_optimizer_states(DS_OPT_BERTADAM), 2);
  cr_assert_str_eq(ds_optimizer_name(DS_OPT_BERTADAM), "bertadam");
  struct ds_memory_options mo = {.optimizer_loop = 1, .step_numel = 2200000};
  cr_assert_float_eq(ds_step_temporaries(&f.m, &f.c.precision, &mo), 12000000, 1e-3);
  ds_test_bert_toy_free(&f);
}

Test(bertadam, cli_runs_and_refuses) {
  /* the tiny model (l0.weight, l1.weight, l2.weight decayed, l0.bias
   * not; 1,835,264 elements, 1,835,008 of them in the weights) on TestGPU
   * (no overhead), current rules (PyTorch 2.x's clip: 8 0-d kernels a
   * tensor): step 4 x (32 x 1,835,008 + 27 x 256) B + 32 x 8 B =
   * 234,908,928 B, the l2norm 1280 + 7,341,056 + 1284 B, the scale
   * 14,682,112 B: 256.934660 us */
  ds_test_cli_step("--topo tests/data/tiny-topo.yaml --model "
                   "tests/data/tiny-model.yaml --strategy single "
                   "--batch 2 --optimizer bertadam --format csv",
                   0.256935, 1e-6, "bertadam");
  /* --grad-accum 1 (no accumulation, the script's default) runs the same step */
  ds_test_cli_step("--topo tests/data/tiny-topo.yaml --model tests/data/tiny-model.yaml "
                   "--strategy single --batch 2 --optimizer bertadam --grad-accum 1 --format csv",
                   0.256935, 1e-6, NULL);
  /* each refusal names --optimizer bertadam and the flag it refuses */
  static const char *const refused[][2] = {
      {"--weight-decay", "--weight-decay"},
      {"--amp fp16", "--amp"},
      {"--dtype fp16", "--dtype"},
      {"--pytorch-version 1.4", "--pytorch-version 1.4"},
      {"--grad-accum 2", "--grad-accum"},
      {"--optimizer-batch 4", "--optimizer-batch"},
      {"--strategy ps", "--strategy ps"}};
  for (size_t i = 0; i < sizeof refused / sizeof *refused; i++) {
    char args[512];
    snprintf(args, sizeof args,
             "--topo tests/data/tiny-topo.yaml --model tests/data/tiny-model.yaml --batch 2 "
             "--optimizer bertadam %s --format csv",
             refused[i][0]);
    ds_test_ddpsim_refuses_all(args, (const char *const[]){"bertadam", refused[i][1]}, 2);
  }
}
