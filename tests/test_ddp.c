/*
 * DDP: bucket assignment as PyTorch does it, the schedule's shape, and the
 * roofline durations of the tiny model worked by hand (tests/ddp_fixture.h).
 * Memory and the math under autocast: test_ddp_memory.c; the bucket
 * rebuild's forward: test_ddp_rebuild.c.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sim/train/compute.h"
#include "sim/train/ddp.h"
#include "sim/train/model.h"
#include "sim/coll/nccl_model.h"
#include "tests/support.h"
#include "tests/ddp_fixture.h"

#define MIB (1024.0 * 1024.0)

/* m with its measured gradient-ready order set aside: the rebuild then
 * bins in reverse registration order. */
static struct ds_model *without_grad_ready(struct ds_model *m) {
  free(m->grad_ready);
  m->grad_ready = NULL;
  m->n_grad_ready = 0;
  return m;
}

Test(ddp, resnet50_rebuilt_buckets_match_pytorch) {
  /* Expected, because PyTorch's compute_bucket_assignment_by_size over the
   * gradients in ready order (reverse registration), limits [1 MiB, 25 MiB],
   * closes a bucket as soon as it reaches its limit. Worked out from
   * ../shared/data/resnet50_params.csv by a separate script (see the note
   * on issue #2): fc.bias + fc.weight (8,196,000 B) overshoot the 1 MiB
   * first bucket; then 15, 12 and 51 tensors fill 25 MiB buckets; the
   * remaining 81 tensors (down to conv1.weight) make the last. This is the
   * rule for a model file without grad_ready (reverse registration order);
   * the shipped file's measured order is pinned against real PyTorch by
   * tests/test_conformance.c. */
  struct ds_model *m = without_grad_ready(ds_test_model("models/resnet50.yaml"));
  struct ds_buckets b;
  cr_assert_eq(ds_ddp_buckets(m, 4, 1 * MIB, 25 * MIB, DS_BUCKETS_READY, &b), DS_OK);
  const int32_t counts[] = {2, 15, 12, 51, 81};
  const double bytes[] = {8196000, 31502336, 26255360, 26550272, 9724160};
  const int32_t first_param[] = {160, 158, 143, 131, 80};
  cr_assert_eq(b.n, 5);
  for (int i = 0; i < 5; i++) {
    cr_assert_eq(b.b[i].count, counts[i], "bucket %d", i);
    cr_assert_float_eq(b.b[i].bytes, bytes[i], 0.5, "bucket %d", i);
    cr_assert_eq(b.order[b.b[i].first], first_param[i], "bucket %d", i);
  }
  cr_assert_str_eq(m->params[b.order[0]].name, "fc.bias");
  cr_assert_str_eq(m->params[b.order[b.n_order - 1]].name, "conv1.weight");
  ds_ddp_buckets_release(&b);
  /* Iteration 0: one bucket of every gradient, 25,557,032 * 4 bytes. */
  cr_assert_eq(ds_ddp_buckets(m, 4, 1 * MIB, 25 * MIB, DS_BUCKETS_ONE, &b), DS_OK);
  cr_assert_eq(b.n, 1);
  cr_assert_float_eq(b.b[0].bytes, 25557032.0 * 4, 0.5);
  ds_ddp_buckets_release(&b);
  ds_model_free(m);
}

/* Bucket sizes of a layout in bytes, and the registration index of each
 * bucket's first tensor, checked against the expected lists. */
static void assert_layout(const struct ds_model *m, const struct ds_buckets *b, int32_t n,
                          const double *bytes, const int32_t *counts, const int32_t *first) {
  cr_assert_eq(b->n, n);
  int32_t total = 0;
  for (int32_t i = 0; i < n; i++) {
    cr_assert_float_eq(b->b[i].bytes, bytes[i], 0.5, "bucket %d", i);
    cr_assert_eq(b->b[i].count, counts[i], "bucket %d", i);
    cr_assert_eq(b->order[b->b[i].first], first[i], "bucket %d", i);
    total += b->b[i].count;
  }
  cr_assert_eq(total, m->n_params);
}

Test(ddp, a_set_bucket_cap_caps_the_first_bucket_too) {
  /* Expected, because distributed.py passes bucket_bytes_cap as the first
   * bucket's cap whenever bucket_cap_mb is given (_DEFAULT_FIRST_BUCKET_BYTES
   * only when it is unset). Binning ResNet-50's 161 tensors in reverse
   * registration order (../shared/data/resnet50_params.csv, by a separate
   * script) with [25 MiB, 25 MiB] gives 14, 12, 39 and 96 tensors:
   * 28.86, 25.04, 27.05, 16.55 MiB, what real PyTorch 2.15 rebuilds with
   * bucket_cap_mb=25 (issue #13); at 100 MiB one bucket of every tensor.
   * (Reverse registration order: the file's grad_ready set aside.) */
  struct ds_model *m = without_grad_ready(ds_test_model("models/resnet50.yaml"));
  struct ds_buckets b;
  cr_assert_eq(ds_ddp_buckets(m, 4, 25 * MIB, 25 * MIB, DS_BUCKETS_READY, &b), DS_OK);
  assert_layout(m, &b, 4, (const double[]){30257056, 26255360, 28366848, 17348864},
                (const int32_t[]){14, 12, 39, 96}, (const int32_t[]){160, 146, 134, 95});
  ds_ddp_buckets_release(&b);
  cr_assert_eq(ds_ddp_buckets(m, 4, 100 * MIB, 100 * MIB, DS_BUCKETS_READY, &b), DS_OK);
  assert_layout(m, &b, 1, (const double[]){102228128}, (const int32_t[]){161},
                (const int32_t[]){160});
  ds_ddp_buckets_release(&b);
  ds_model_free(m);
}

Test(ddp, find_unused_parameters_bins_in_registration_order_and_reverses) {
  /* Expected, because with find_unused_parameters=True the reducer is built
   * from _compute_bucket_assignment_by_size over the parameters in
   * registration order with limits [1 MiB, 25 MiB], and distributed.py
   * reverses the bucket list; the buckets are never rebuilt. ResNet-50
   * (same script): 37, 78, 24, 15 and 7 tensors binned from conv1.weight,
   * so all-reduced in the order 11.84, 30.04, 28.29, 25.77, 1.55 MiB, the
   * small bucket holding conv1 last; each bucket's tensors stay in
   * registration order. PyTorch 2.15 prints the same sizes (issue #13). */
  struct ds_model *m = ds_test_model("models/resnet50.yaml");
  struct ds_ddp_plan plan;
  cr_assert_eq(ds_ddp_plan(m, 4, 1 * MIB, 25 * MIB, 1, 0, &plan), DS_OK);
  cr_assert_eq(plan.rebuild_iter, 0);
  for (int32_t it = 0; it < 3; it++)
    cr_assert_eq(ds_ddp_plan_layout(&plan, it)->n, 5, "iteration %d", it);
  const struct ds_buckets *b = ds_ddp_plan_layout(&plan, 0);
  assert_layout(m, b, 5,
                (const double[]){12410784, 31502336, 29669376, 27022336, 1623296},
                (const int32_t[]){7, 15, 24, 78, 37}, (const int32_t[]){154, 139, 115, 37, 0});
  cr_assert_str_eq(m->params[b->order[b->n_order - 1]].name, "layer2.0.conv2.weight");
  /* the last bucket is the one binned first: it is ready only when conv1's
   * gradient is, at the end of backward */
  cr_assert_eq(b->b[4].ready_layer, 0);
  ds_ddp_plan_release(&plan);
  ds_model_free(m);
}

Test(ddp, static_graph_rebuilds_one_iteration_later) {
  /* Expected, because the reducer with static_graph=True runs iterations 0
   * and 1 with its initial single bucket and rebuilds before iteration 2;
   * the default rebuilds before iteration 1. */
  struct ds_model *m = ds_test_model("models/resnet50.yaml");
  struct ds_ddp_plan plan;
  cr_assert_eq(ds_ddp_plan(m, 4, 1 * MIB, 25 * MIB, 0, 1, &plan), DS_OK);
  cr_assert_eq(plan.rebuild_iter, 2);
  cr_assert_eq(ds_ddp_plan_layout(&plan, 0)->n, 1);
  cr_assert_eq(ds_ddp_plan_layout(&plan, 1)->n, 1);
  cr_assert_eq(ds_ddp_plan_layout(&plan, 2)->n, 5);
  ds_ddp_plan_release(&plan);
  cr_assert_eq(ds_ddp_plan(m, 4, 1 * MIB, 25 * MIB, 0, 0, &plan), DS_OK);
  cr_assert_eq(plan.rebuild_iter, 1);
  cr_assert_eq(ds_ddp_plan_layout(&plan, 0)->n, 1);
  cr_assert_eq(ds_ddp_plan_layout(&plan, 1)->n, 5);
  ds_ddp_plan_release(&plan);
  ds_model_free(m);
}

static const char grad_ready_model[] =
    "schema_version: 1\nname: ready\nsample: s\ndefault_batch: 1\noptimizer: sgd\n"
    "layers:\n"
    "  - {name: a, fwd_flops: 1, bwd_flops: 1, fwd_bytes: 0, act_bytes: 0,\n"
    "     params: [{name: a.w, numel: 262144}, {name: a.b, numel: 1}]}\n"
    "  - {name: b, fwd_flops: 1, bwd_flops: 1, fwd_bytes: 0, act_bytes: 0,\n"
    "     params: [{name: b.w, numel: 262144}, {name: b.b, numel: 1}]}\n"
    "grad_ready: [%s]\n";

Test(ddp, rebuilt_buckets_follow_the_measured_gradient_ready_order) {
  /* Expected, because the rebuild bins the gradients in the order they
   * became ready (rebuilt_params_), which the model file's grad_ready
   * gives: b.b, b.w, a.b, a.w (a bias before its weight, as PyTorch records
   * for normalisation layers). With [1 MiB, 25 MiB] the first bucket
   * closes at b.w (4 + 1,048,576 = 1,048,580 B >= 1 MiB): bucket 0 holds
   * b.b and b.w, ready after layer b's backward; bucket 1 a.b and a.w. */
  char text[1024], path[] = "/tmp/ddpsim_test_ready_XXXXXX";
  snprintf(text, sizeof text, grad_ready_model, "b.b, b.w, a.b, a.w");
  ds_test_write_temp(path, text);
  struct ds_model *m = ds_test_model(path);
  struct ds_buckets b;
  cr_assert_eq(ds_ddp_buckets(m, 4, 1 * MIB, 25 * MIB, DS_BUCKETS_READY, &b), DS_OK);
  cr_assert_eq(b.n, 2);
  const int32_t want[] = {3, 2, 1, 0};
  for (int i = 0; i < 4; i++) cr_assert_eq(b.order[i], want[i], "position %d", i);
  cr_assert_float_eq(b.b[0].bytes, 1048580, 0.5);
  cr_assert_eq(b.b[0].ready_layer, 1);
  cr_assert_eq(b.b[1].ready_layer, 0);
  ds_ddp_buckets_release(&b);
  ds_model_free(m);
  unlink(path);
}

Test(ddp, shipped_models_have_the_exact_parameter_counts) {
  /* Totals and tensor counts of ../shared/data/README.md. */
  struct { const char *path; int64_t numel; int32_t tensors; } want[] = {
      {"models/resnet50.yaml", 25557032, 161},
      {"models/bert-base.yaml", 108312579, 201},
      {"models/gpt2.yaml", 124439808, 148},
      {"models/mobilenet_v2.yaml", 3504872, 158},
      {"models/vgg16.yaml", 138357544, 32},
      /* Not in the shared data: torchvision's own sum of numel() and count of
       * parameters() (the models of PyTorch's DDP benchmark). */
      {"models/resnet101.yaml", 44549160, 314},
      {"models/resnext50_32x4d.yaml", 25028904, 161},
      {"models/resnext101_32x8d.yaml", 88791336, 314},
      /* torchvision's ResNet(Bottleneck, [3, 4, 23, 3], groups=32,
       * width_per_group=4), the ResNeXt-101 32x4d of DeepLearningExamples:
       * the same numel() sum and parameters() count. */
      {"models/resnext101_32x4d.yaml", 44177704, 314},
      /* DeepLearningExamples' SE-ResNeXt-101 32x4d (image_classification/
       * models at commit 7bdfc81d, built and counted): the 314 tensors above
       * and a gate per block of 33 (two 1x1 convolutions with bias, 16 wide):
       * 4 tensors and 33*C + 16 numel each, C = 256 x3, 512 x4, 1024 x23,
       * 2048 x3: 44177704 + 33*32512 + 33*16 = 45251128. */
      {"models/se_resnext101_32x4d.yaml", 45251128, 446},
  };
  for (size_t i = 0; i < sizeof want / sizeof *want; i++) {
    struct ds_model *m = ds_test_model(want[i].path);
    cr_assert_eq(m->total_numel, want[i].numel, "%s", want[i].path);
    cr_assert_eq(m->n_params, want[i].tensors, "%s", want[i].path);
    ds_model_free(m);
  }
}

Test(ddp, bucket_sizes_scale_with_dtype) {
  /* fp16 halves every gradient: the 1 MiB first bucket of the tiny model
   * (l2.weight, 4 MiB fp32) becomes 2 MiB, still one tensor. */
  struct ds_model *m = ds_test_model(TINY_MODEL);
  struct ds_buckets b;
  cr_assert_eq(ds_ddp_buckets(m, 2, 1 * MIB, 25 * MIB, DS_BUCKETS_READY, &b), DS_OK);
  cr_assert_eq(b.n, 2);
  cr_assert_float_eq(b.b[0].bytes, 2 * MIB, 0.5);
  cr_assert_eq(b.b[0].ready_layer, 2);
  cr_assert_float_eq(b.b[1].bytes, (524288 + 262144 + 256) * 2.0, 0.5);
  cr_assert_eq(b.b[1].ready_layer, 0);
  ds_ddp_buckets_release(&b);
  ds_model_free(m);
}

Test(ddp, tiny_schedule_shape_and_durations) {
  /* tiny model on TestGPU (10 TFLOPS fp32, 1000 GB/s, efficiency 1, no
   * overhead), batch 1: fwd l0 = max(1e9/1e13 s, weights 1 MiB / 1e12 s) =
   * 100 us; l1 200 us; l2 100 us; bwd twice that (weights read and grads
   * written: 2 MiB, 4 MiB, 8 MiB at 1000 GB/s stay under the FLOP time). */
  struct fixture f;
  setup(&f, TINY_TOPO, TINY_MODEL, DS_AMP_NONE);
  struct ds_err err = {0};
  struct ds_buckets b;
  cr_assert_eq(ds_ddp_buckets(f.m, 4, 1 * MIB, 25 * MIB, DS_BUCKETS_READY, &b), DS_OK);
  struct ds_schedule *s;
  cr_assert_eq(ds_schedule_new(2, &s), DS_OK);
  struct ds_ddp_options opt = {.world_size = 2, .batch = 1, .ring = NULL,
                               .nccl = NULL, .proto_fixed = DS_PROTO_COUNT};
  cr_assert_eq(ds_ddp_build(f.m, &f.c, &opt, &b, 0, 0, s), DS_OK);
  cr_assert_eq(ds_schedule_validate(s, &err), DS_OK, "%s", err.msg);
  /* per rank: 3 (host launch, fwd), loss, 3 (bwd, its reducer copy into
   * the bucket), 2 allreduce, 2 copies back to .grad, step */
  cr_assert_eq(s->n_ops, 2 * 18);
  const enum ds_op_kind kinds[] = {
      DS_OP_FWD, DS_OP_FWD, DS_OP_FWD, DS_OP_FWD, DS_OP_FWD, DS_OP_FWD,
      DS_OP_LOSS, DS_OP_BWD, DS_OP_BWD, DS_OP_ALLREDUCE, DS_OP_BWD, DS_OP_BWD,
      DS_OP_BWD, DS_OP_BWD, DS_OP_ALLREDUCE, DS_OP_BWD, DS_OP_BWD, DS_OP_STEP};
  const char *names[] = {"launch", "l0", "launch", "l1", "launch", "l2", "loss", "l2",
                         "l2.to_bucket", "bucket0", "l1", "l1.to_bucket", "l0",
                         "l0.to_bucket", "bucket1", "bucket0.to_grad", "bucket1.to_grad",
                         "optimizer"};
  /* host_launch 20 us (the default); the loss reads the 1,000,000-byte
   * output of the batch of 1 and writes its gradient: 2 MB at 1000 GB/s.
   * The reducer's copies read and write every gradient once: l2.weight
   * 2 x 4 MiB = 8.388608 us, l1.weight 4.194304 us, l0's two tensors
   * 2 x 1,049,600 B = 2.0992 us; back: bucket 0 (l2.weight) 8.388608 us,
   * bucket 1 (l1.weight, l0.bias, l0.weight) 6.293504 us. */
  const double dur_us[] = {20, 100, 20, 200, 20, 100, 2, 200, 8.388608, 0, 400, 4.194304,
                           200, 2.0992, 0, 8.388608, 6.293504, -1};
  for (int i = 0; i < 18; i++) {
    cr_assert_eq(s->ops[i].kind, kinds[i], "op %d", i);
    cr_assert_str_eq(s->ops[i].name, names[i], "op %d", i);
    cr_assert_eq(s->ops[i].stream, i < 6 && i % 2 == 0 ? DS_STREAM_HOST
                 : s->ops[i].kind == DS_OP_ALLREDUCE ? DS_STREAM_COMM : DS_STREAM_COMPUTE,
                 "op %d", i);
    if (dur_us[i] > 0) cr_assert_float_eq(s->ops[i].dur_us, dur_us[i], 1e-9, "op %d", i);
  }
  /* A forward kernel waits for its launch and the kernel before it. */
  const int64_t *deps = ds_schedule_deps(s, &s->ops[3]);
  cr_assert_eq(s->ops[3].dep_count, 2);
  cr_assert_eq(deps[0], 1);
  cr_assert_eq(deps[1], 2);
  /* The step: PyTorch's foreach SGD with momentum passes 8 times over the
   * 1,835,264 fp32 parameters (compute.h) at 1000 GB/s; no overhead. */
  cr_assert_float_eq(s->ops[17].dur_us, 1835264.0 * 4 * 8 / 1e12 * 1e6, 1e-9);
  /* The first all-reduce waits for l2's copy into its bucket; the second
   * for l0's copy and for the first all-reduce. */
  deps = ds_schedule_deps(s, &s->ops[9]);
  cr_assert_eq(s->ops[9].dep_count, 1);
  cr_assert_eq(deps[0], 8);
  deps = ds_schedule_deps(s, &s->ops[14]);
  cr_assert_eq(s->ops[14].dep_count, 2);
  cr_assert_eq(deps[0], 13);
  cr_assert_eq(deps[1], 9);
  cr_assert_eq(s->ops[14].coll, s->ops[18 + 14].coll);
  /* Each copy back waits for the compute stream and its bucket's
   * all-reduce (finalize_backward's wait). */
  deps = ds_schedule_deps(s, &s->ops[15]);
  cr_assert_eq(s->ops[15].dep_count, 2);
  cr_assert_eq(deps[0], 13);
  cr_assert_eq(deps[1], 9);
  deps = ds_schedule_deps(s, &s->ops[16]);
  cr_assert_eq(deps[0], 15);
  cr_assert_eq(deps[1], 14);
  ds_schedule_free(s);
  ds_ddp_buckets_release(&b);
  teardown(&f);
}

/* The number of ops of rank 0 whose name ends with suffix. */
static int count_named(const struct ds_schedule *s, const char *suffix) {
  int n = 0;
  size_t k = strlen(suffix);
  for (size_t i = 0; i < s->n_ops; i++) {
    size_t len = strlen(s->ops[i].name);
    n += s->ops[i].rank == 0 && len >= k && strcmp(s->ops[i].name + len - k, suffix) == 0;
  }
  return n;
}

Test(ddp, gradient_as_bucket_view_divides_in_place_only_where_grad_is_the_view) {
  /* With gradient_as_bucket_view, mark_variable_ready_dense divides in
   * place (div_, the same bytes as mul_out's copy) only where .grad already
   * is the bucket's view (grad.is_alias_of(bucket_view)); otherwise it
   * copies (at::mul_out, a plain copy_ under a comm hook) and then points
   * .grad at the view. Where .grad is kept between iterations (1.9's
   * zero_grad(set_to_none=False): c->grad_kept) it is the view from
   * iteration 1 on; under current rules zero_grad(set_to_none=True) makes
   * it None after every step, AccumulateGrad's new tensor is no view, and
   * every iteration copies (LAYER.to_bucket), under a hook too; only the
   * micro-steps after the first of --grad-accum find the view (their
   * AccumulateGrad adds into it). finalize_bucket_dense copies nothing back
   * either way (the hooks modelled return the bucket's own buffer). (The
   * old code divided in place and, under a hook, copied nothing whatever
   * the rules: fails for kept 0.) */
  struct fixture f;
  setup(&f, TINY_TOPO, TINY_MODEL, DS_AMP_NONE);
  struct ds_buckets b;
  cr_assert_eq(ds_ddp_buckets(f.m, 4, 1 * MIB, 25 * MIB, DS_BUCKETS_READY, &b), DS_OK);
  const struct { int kept, accum, view; enum ds_hook_kind hook; int in, div, back; } cases[] = {
      {1, 1, 0, DS_HOOK_NONE, 3, 0, 2},
      {1, 1, 1, DS_HOOK_NONE, 0, 3, 0},
      {1, 1, 0, DS_HOOK_FP16, 3, 0, 2},
      {1, 1, 1, DS_HOOK_FP16, 0, 0, 0},
      {1, 1, 1, DS_HOOK_BF16, 0, 0, 0},
      {1, 1, 1, DS_HOOK_POWERSGD, 0, 0, 0},
      {0, 1, 0, DS_HOOK_NONE, 3, 0, 2},
      {0, 1, 1, DS_HOOK_NONE, 3, 0, 0},
      {0, 1, 1, DS_HOOK_FP16, 3, 0, 0},
      {0, 1, 1, DS_HOOK_POWERSGD, 3, 0, 0},
      {0, 2, 1, DS_HOOK_NONE, 3, 3, 0},
      {0, 2, 1, DS_HOOK_FP16, 3, 0, 0},
  };
  const size_t n = sizeof cases / sizeof *cases;
  for (size_t k = 0; k < 2 * n; k++) {
    /* each case in iteration 1, then in iteration 0 (PowerSGD's warm-up;
     * the first backward finds no view: a kept .grad becomes one in it) */
    size_t c = k % n;
    int iter = k < n;
    struct ds_schedule *s;
    cr_assert_eq(ds_schedule_new(1, &s), DS_OK);
    struct ds_ddp_options opt = {.world_size = 1, .batch = 1, .proto_fixed = DS_PROTO_COUNT,
                                 .hook = {cases[c].hook, 1}, .iter = iter,
                                 .grad_as_bucket_view = cases[c].view,
                                 .grad_accum = cases[c].accum};
    f.c.grad_kept = cases[c].kept;
    cr_assert_eq(ds_ddp_build(f.m, &f.c, &opt, &b, 0, 0, s), DS_OK);
    int first_copies = !iter && cases[c].kept && cases[c].view ? 3 : 0;
    cr_assert_eq(count_named(s, ".to_bucket"), cases[c].in + first_copies, "case %zu", k);
    cr_assert_eq(count_named(s, ".grad_div"), cases[c].div - (first_copies && cases[c].div ? 3 : 0),
                 "case %zu", k);
    cr_assert_eq(count_named(s, ".to_grad"), cases[c].back * cases[c].accum, "case %zu", k);
    ds_schedule_free(s);
  }
  f.c.grad_kept = 0;
  ds_ddp_buckets_release(&b);
  teardown(&f);
}

/* Op names carry the layer's name whole: the loader refuses a layer name
 * past DS_LAYER_NAME_MAX (96) bytes, naming file, key and limit, and the
 * op-name buffers (DS_OP_NAME_CAP) hold a 96-byte name with any suffix:
 * "<name>.to_bucket" is 96 + 10 bytes, "<name>.accum_grad" (1.9's kept
 * .grad) 96 + 11. (The old code loaded a 97-byte name and cut these ops'
 * names at 95 bytes, so "<name>.to_bucket" read as a prefix of the layer's
 * own op: fails.) */
Test(ddp, long_layer_names_are_refused_or_kept_whole) {
  char name[DS_LAYER_NAME_MAX + 2], text[1024];
#define LONG_NAME_MODEL                                                              \
  "schema_version: 1\nname: t\nsample: s\ndefault_batch: 1\n"                      \
  "optimizer: sgd\nlayers:\n  - name: %s\n    fwd_flops: 1\n"                      \
  "    bwd_flops: 1\n    fwd_bytes: 0\n    act_bytes: 0\n"                          \
  "    params:\n      - {name: w, numel: 1024}\n"
  memset(name, 'x', DS_LAYER_NAME_MAX + 1);
  name[DS_LAYER_NAME_MAX + 1] = '\0';
  snprintf(text, sizeof text, LONG_NAME_MODEL, name);
  ds_test_assert_model_refused(text, "key 'layers[0].name': expected a layer name of at most 96 "
                               "bytes, got 97", "97 bytes");
  name[DS_LAYER_NAME_MAX] = '\0';
  snprintf(text, sizeof text, LONG_NAME_MODEL, name);
  struct ds_model *m = NULL;
  struct ds_err err = {0};
  cr_assert_eq(ds_test_load_model_text(text, &m, &err), DS_OK, "%s", err.msg);
  struct fixture f;
  setup(&f, TINY_TOPO, TINY_MODEL, DS_AMP_NONE);
  f.c.grad_kept = 1; /* the accum_grad op too */
  struct ds_buckets b;
  cr_assert_eq(ds_ddp_buckets(m, 4, 1 * MIB, 25 * MIB, DS_BUCKETS_READY, &b), DS_OK);
  struct ds_schedule *s;
  cr_assert_eq(ds_schedule_new(1, &s), DS_OK);
  struct ds_ddp_options opt = {.world_size = 1, .batch = 1, .proto_fixed = DS_PROTO_COUNT,
                               .iter = 1};
  cr_assert_eq(ds_ddp_build(m, &f.c, &opt, &b, 0, 0, s), DS_OK);
  char want[2][DS_OP_NAME_CAP];
  snprintf(want[0], sizeof want[0], "%s.to_bucket", name);
  snprintf(want[1], sizeof want[1], "%s.accum_grad", name);
  for (int k = 0; k < 2; k++) {
    int found = 0;
    for (size_t i = 0; i < s->n_ops; i++) found |= strcmp(s->ops[i].name, want[k]) == 0;
    cr_assert(found, "no op named %s", want[k]);
  }
  ds_schedule_free(s);
  ds_ddp_buckets_release(&b);
  ds_model_free(m);
  teardown(&f);
#undef LONG_NAME_MODEL
}

Test(ddp, pytorch_1_4_bins_in_registration_order_with_a_1_mib_first_bucket) {
  /* Expected, because PyTorch 1.4's distributed.py bins the parameters in
   * registration order with [_DEFAULT_FIRST_BUCKET_BYTES, bucket_bytes_cap]
   * whatever bucket_cap_mb says, reverses the bucket list, and its reducer
   * has no rebuild: the layout find_unused_parameters gives today, from
   * iteration 0 on. A given --first-bucket-mb (the constant's tuning) still
   * wins; static_graph did not exist. */
  cr_assert_float_eq(ds_ddp_first_bucket_mb(DS_DDP_RULES_TORCH_1_4, 25, 0), 1, 0);
  cr_assert_float_eq(ds_ddp_first_bucket_mb(DS_DDP_RULES_TORCH_1_4, 0, 0), 1, 0);
  cr_assert_float_eq(ds_ddp_first_bucket_mb(DS_DDP_RULES_TORCH_1_4, 25, 2), 2, 0);
  cr_assert_float_eq(ds_ddp_first_bucket_mb(DS_DDP_RULES_CURRENT, 25, 0), 25, 0);
  struct ds_model *m = ds_test_model("models/resnet50.yaml");
  struct ds_ddp_plan plan;
  cr_assert_eq(ds_ddp_plan_rules(m, 4, 1 * MIB, 25 * MIB, 0, 0, DS_DDP_RULES_TORCH_1_4, &plan),
               DS_OK);
  cr_assert_eq(plan.rebuild_iter, 0);
  cr_assert_eq(ds_ddp_plan_layout(&plan, 0), ds_ddp_plan_layout(&plan, 5));
  assert_layout(m, ds_ddp_plan_layout(&plan, 0), 5,
                (const double[]){12410784, 31502336, 29669376, 27022336, 1623296},
                (const int32_t[]){7, 15, 24, 78, 37}, (const int32_t[]){154, 139, 115, 37, 0});
  ds_ddp_plan_release(&plan);
  cr_assert_eq(ds_ddp_plan_rules(m, 4, 1 * MIB, 25 * MIB, 0, 1, DS_DDP_RULES_TORCH_1_4, &plan),
               DS_EUSAGE);
  ds_model_free(m);
}

Test(ddp, pytorch_1_4_divides_each_bucket_once_before_its_all_reduce) {
  /* Expected, because PyTorch 1.4's mark_variable_ready copies each
   * gradient into its bucket with a plain copy_ and, once the bucket's last
   * gradient is in, runs replica.contents.div_(world size) over the whole
   * bucket before mark_bucket_ready calls the all-reduce. The tiny model
   * under 1.4's layout (cap 25 MiB, first 1 MiB; registration order
   * l0.weight, l0.bias, l1.weight, l2.weight): bucket 0 = l0.bias,
   * l1.weight, l2.weight = (256 + 524288 + 1048576) x 4 = 6,292,480 B,
   * bucket 1 = l0.weight = 1,048,576 B; both hold a tensor of l0, so both
   * are ready after l0's backward. Each div reads and writes its bucket on
   * TestGPU (1000 GB/s, no overhead): 12.58496 and 2.097152 us. tiny-topo
   * has no host costs, so no host ops. Under current rules, no div. */
  struct fixture f;
  setup(&f, TINY_TOPO, TINY_MODEL, DS_AMP_NONE);
  struct ds_err err = {0};
  struct ds_ddp_plan plan;
  cr_assert_eq(ds_ddp_plan_rules(f.m, 4, 1 * MIB, 25 * MIB, 0, 0, DS_DDP_RULES_TORCH_1_4, &plan),
               DS_OK);
  const struct ds_buckets *b = ds_ddp_plan_layout(&plan, 1);
  cr_assert_eq(b->n, 2);
  cr_assert_float_eq(b->b[0].bytes, 6292480, 0);
  cr_assert_float_eq(b->b[1].bytes, 1048576, 0);
  for (int rules = DS_DDP_RULES_CURRENT; rules <= DS_DDP_RULES_TORCH_1_4; rules++) {
    struct ds_schedule *s;
    cr_assert_eq(ds_schedule_new(2, &s), DS_OK);
    struct ds_ddp_options opt = {.world_size = 2, .batch = 1, .proto_fixed = DS_PROTO_COUNT,
                                 .iter = 1, .rules = (enum ds_ddp_rules)rules};
    cr_assert_eq(ds_ddp_build(f.m, &f.c, &opt, b, 0, 0, s), DS_OK);
    cr_assert_eq(ds_schedule_validate(s, &err), DS_OK, "%s", err.msg);
    cr_assert_eq(count_named(s, ".div"), rules == DS_DDP_RULES_TORCH_1_4 ? 2 : 0);
    cr_assert_eq(count_named(s, ".to_bucket"), 3);
    if (rules == DS_DDP_RULES_CURRENT) {
      ds_schedule_free(s);
      continue;
    }
    /* per rank: 3 (launch, fwd), loss, 3 (bwd, its copy), per bucket its
     * div and all-reduce, 2 copies back, the step */
    cr_assert_eq(s->n_ops, 2 * 20);
    const char *names[] = {"l0.to_bucket", "bucket0.div", "bucket0", "bucket1.div", "bucket1",
                           "bucket0.to_grad"};
    for (int i = 0; i < 6; i++) cr_assert_str_eq(s->ops[12 + i].name, names[i], "op %d", 12 + i);
    cr_assert_eq(s->ops[13].stream, DS_STREAM_COMPUTE);
    cr_assert_eq(s->ops[13].bucket, 0);
    cr_assert_float_eq(s->ops[13].bytes, 2 * 6292480.0, 0);
    cr_assert_float_eq(s->ops[13].dur_us, 12.58496, 1e-9);
    cr_assert_float_eq(s->ops[15].dur_us, 2.097152, 1e-9);
    /* the div follows the bucket's last copy; the all-reduce waits for the
     * div (ProcessGroupNCCL's stream wait on the compute stream) */
    const int64_t *deps = ds_schedule_deps(s, &s->ops[13]);
    cr_assert_eq(s->ops[13].dep_count, 1);
    cr_assert_eq(deps[0], 12);
    deps = ds_schedule_deps(s, &s->ops[14]);
    cr_assert_eq(s->ops[14].dep_count, 1);
    cr_assert_eq(deps[0], 13);
    deps = ds_schedule_deps(s, &s->ops[16]);
    cr_assert_eq(s->ops[16].dep_count, 2);
    cr_assert_eq(deps[0], 15);
    cr_assert_eq(deps[1], 14);
    ds_schedule_free(s);
  }
  ds_ddp_plan_release(&plan);
  teardown(&f);
}

Test(ddp, nccl_protocols_are_chosen_per_bucket) {
  /* ResNet-50 on dgx-a100 (8 ranks) with NCCL's model: every bucket's
   * all-reduce names the protocol NCCL's cost model picks for its size,
   * and its dur_us is that protocol's ring closed form, worked here from
   * the model's inputs rather than from the functions under test.
   *
   * Buckets (1 MiB first cap, 25 MiB after; fp32, reverse registration):
   * fc.weight + fc.bias = (2048 x 1000 + 1000) x 4 = 8,196,000 B (7.8 MiB),
   * then 31,502,336, 26,255,360, 26,550,272 and 9,724,160 B. NCCL v2.30.7
   * on 8 A100s over NVSwitch (sim/coll/nccl_constants.c) runs 12 channels
   * of 20 GB/s each: 240 GB/s, under the ring's 300 GB/s NVLink busbw.
   * LL128 (NCCL's least time for the 7.8 and 9.3 MiB buckets, Simple for the
   * three of 25 MiB) sends 128 B lines carrying 120 B
   * of payload, wire factor 16/15, with a 14 us start and 1.9 us per hop;
   * Simple, 8.4 us and 3.4 us, wire factor 1. A uniform ring's critical
   * path crosses 2(N-1) = 14 hops, and each rank moves 2(N-1)/N = 1.75 S:
   *   LL128:  14 + 14 x 1.9 = 40.6 us + 1.75 S x 16/15 / 240 GB/s
   *   Simple: 8.4 + 14 x 3.4 = 56.0 us + 1.75 S / 240 GB/s
   * so bucket 0 takes 40.6 + 1.75 x 8,196,000 x 16/15 / 240e9 s = 40.6 +
   * 63.746667 = 104.346667 us and bucket 1 56 + 229.704533 = 285.704533 us.
   * Expected, because ddp.c asks NCCL's model per bucket, not once per run. */
  struct fixture f;
  setup(&f, "topologies/dgx-a100.yaml", "models/resnet50.yaml", DS_AMP_NONE);
  struct ds_err err = {0};
  int32_t gpus[8] = {0, 1, 2, 3, 4, 5, 6, 7};
  struct ds_ring ring;
  cr_assert_eq(ds_ring_build(f.t, gpus, 8, &ring, &err), DS_OK, "%s", err.msg);
  struct ds_nccl_model nm;
  cr_assert_eq(ds_nccl_model_build(f.t, &ring, DS_NCCL_EXTRA_NONE, &nm, &err), DS_OK, "%s",
               err.msg);
  struct ds_buckets b;
  cr_assert_eq(ds_ddp_buckets(f.m, 4, 1 * MIB, 25 * MIB, DS_BUCKETS_READY, &b), DS_OK);
  struct ds_schedule *s;
  cr_assert_eq(ds_schedule_new(8, &s), DS_OK);
  struct ds_ddp_options opt = {.world_size = 8, .batch = 32, .ring = &ring, .nccl = &nm,
                               .proto_fixed = DS_PROTO_COUNT};
  cr_assert_eq(ds_ddp_build(f.m, &f.c, &opt, &b, 0, 0, s), DS_OK);
  static const double bytes[5] = {8196000, 31502336, 26255360, 26550272, 9724160};
  static const char *const algo[5] = {"ring/LL128", "ring/Simple", "ring/Simple",
                                      "ring/Simple", "ring/LL128"};
  int n_ar = 0;
  for (size_t i = 0; i < s->n_ops; i++) {
    const struct ds_op *o = &s->ops[i];
    if (o->kind != DS_OP_ALLREDUCE) continue;
    cr_assert(o->bucket >= 0 && o->bucket < 5, "bucket %d", o->bucket);
    int ll128 = o->bucket == 0 || o->bucket == 4;
    cr_assert_float_eq(o->bytes, bytes[o->bucket], 0.5, "bucket %d", o->bucket);
    cr_assert_str_eq(o->algo, algo[o->bucket], "bucket %d (%g B)", o->bucket, o->bytes);
    double want_us = ll128 ? 40.6 + 1.75 * o->bytes * 16 / 15 / 240e9 * 1e6
                           : 56.0 + 1.75 * o->bytes / 240e9 * 1e6;
    cr_assert_float_eq(o->dur_us, want_us, 1e-6, "bucket %d: %.6f us, want %.6f", o->bucket,
                       o->dur_us, want_us);
    if (o->bucket == 0) cr_assert_float_eq(o->dur_us, 104.346667, 1e-6);
    if (o->bucket == 1) cr_assert_float_eq(o->dur_us, 285.704533, 1e-6);
    n_ar++;
  }
  cr_assert_eq(n_ar, 8 * 5);
  /* A fixed protocol is used for every bucket. */
  ds_schedule_free(s);
  cr_assert_eq(ds_schedule_new(8, &s), DS_OK);
  opt.proto_fixed = DS_PROTO_LL;
  cr_assert_eq(ds_ddp_build(f.m, &f.c, &opt, &b, 0, 0, s), DS_OK);
  for (size_t i = 0; i < s->n_ops; i++)
    if (s->ops[i].kind == DS_OP_ALLREDUCE) cr_assert_str_eq(s->ops[i].algo, "ring/LL");
  ds_schedule_free(s);
  ds_ddp_buckets_release(&b);
  ds_ring_release(&ring);
  teardown(&f);
}

/* The rank-r all-reduce of bucket k, or NULL. */
static const struct ds_op *bucket_allreduce(const struct ds_schedule *s, int32_t r, int32_t k) {
  for (size_t i = 0; i < s->n_ops; i++)
    if (s->ops[i].rank == r && s->ops[i].kind == DS_OP_ALLREDUCE && s->ops[i].bucket == k)
      return &s->ops[i];
  return NULL;
}

Test(ddp, find_unused_launches_every_bucket_when_its_last_gradient_is_ready) {
  /* PyTorch's reducer marks a locally unused parameter ready at the first
   * autograd hook of backward (reducer.cpp autograd_hook: `if
   * (!has_marked_unused_parameters_) ... mark_variable_ready(unused_index)`),
   * so it never holds its bucket back, and the map's all-reduce is launched
   * only once the last bucket is (mark_variable_ready ->
   * all_reduce_local_used_map). A model file has no unused parameter, so
   * with find_unused_parameters every bucket's all-reduce waits for
   * exactly what it waits for without it (the same ops, by id: the map's
   * ops come after), and for none of the map's ops. */
  struct fixture f;
  setup(&f, TINY_TOPO, TINY_MODEL, DS_AMP_NONE);
  struct ds_err err = {0};
  struct ds_buckets b;
  cr_assert_eq(ds_ddp_buckets(f.m, 4, 1 * MIB, 25 * MIB, DS_BUCKETS_READY, &b), DS_OK);
  cr_assert_gt(b.n, 1, "the toy needs several buckets");
  struct ds_ddp_options opt = {.world_size = 2, .batch = 1, .proto_fixed = DS_PROTO_COUNT};
  struct ds_schedule *s[2];
  for (int used = 0; used <= 1; used++) {
    opt.local_used_map = used;
    cr_assert_eq(ds_schedule_new(2, &s[used]), DS_OK);
    cr_assert_eq(ds_ddp_build(f.m, &f.c, &opt, &b, 0, 0, s[used]), DS_OK);
    cr_assert_eq(ds_schedule_validate(s[used], &err), DS_OK, "%s", err.msg);
  }
  for (int32_t r = 0; r < 2; r++)
    for (int32_t k = 0; k < b.n; k++) {
      const struct ds_op *a = bucket_allreduce(s[0], r, k), *u = bucket_allreduce(s[1], r, k);
      cr_assert(a && u, "rank %d bucket %d", r, k);
      cr_assert_eq(a->dep_count, u->dep_count, "rank %d bucket %d", r, k);
      const int64_t *da = ds_schedule_deps(s[0], a), *du = ds_schedule_deps(s[1], u);
      for (uint32_t d = 0; d < a->dep_count; d++) {
        /* the same op (ids shift by the map's ops of the ranks built before) */
        size_t ia, iu;
        cr_assert_eq(ds_schedule_find(s[0], da[d], &ia), 0);
        cr_assert_eq(ds_schedule_find(s[1], du[d], &iu), 0);
        const struct ds_op *pa = &s[0]->ops[ia], *pu = &s[1]->ops[iu];
        cr_assert(pa->rank == pu->rank && pa->kind == pu->kind && pa->stream == pu->stream &&
                      pa->layer == pu->layer && pa->bucket == pu->bucket &&
                      strcmp(pa->name, pu->name) == 0,
                  "rank %d bucket %d dep %u: %s against %s", r, k, d, pa->name, pu->name);
        cr_assert(strncmp(pu->name, "local_used", 10) != 0, "bucket %d waits for the map", k);
      }
    }
  for (int used = 0; used <= 1; used++) ds_schedule_free(s[used]);
  ds_ddp_buckets_release(&b);
  teardown(&f);
}

Test(ddp, find_unused_all_reduces_the_local_used_map_after_the_buckets) {
  /* find_unused_parameters (local_used_map): after the last bucket's
   * all-reduce, the reducer's host launches two copies and the call
   * (host_grad_copy x 2 + host_collective; tiny-topo's defaults), the map
   * (4 B per parameter: 4 tensors, 16 B) goes to the GPU (a copy on the
   * compute stream, after the last backward kernel) and is all-reduced
   * after the buckets (collective id 2: after buckets 0 and 1), and the
   * step waits for it. Without the option none of it; ids per iteration:
   * 2 buckets + 1. */
  struct fixture f;
  setup(&f, TINY_TOPO, TINY_MODEL, DS_AMP_NONE);
  struct ds_err err = {0};
  struct ds_buckets b;
  cr_assert_eq(ds_ddp_buckets(f.m, 4, 1 * MIB, 25 * MIB, DS_BUCKETS_READY, &b), DS_OK);
  struct ds_ddp_options opt = {.world_size = 2, .batch = 1, .proto_fixed = DS_PROTO_COUNT};
  for (int used = 0; used <= 1; used++) {
    opt.local_used_map = used;
    cr_assert_eq(ds_ddp_colls_per_iteration(&opt, b.n, 0), b.n + used);
    struct ds_schedule *s;
    cr_assert_eq(ds_schedule_new(2, &s), DS_OK);
    cr_assert_eq(ds_ddp_build(f.m, &f.c, &opt, &b, 0, 0, s), DS_OK);
    cr_assert_eq(ds_schedule_validate(s, &err), DS_OK, "%s", err.msg);
    const struct ds_op *host = NULL, *copy = NULL, *ar = NULL, *step = NULL, *last_bucket = NULL;
    for (size_t i = 0; i < s->n_ops; i++) {
      const struct ds_op *o = &s->ops[i];
      if (o->rank != 0) continue;
      if (strcmp(o->name, "local_used") == 0 && o->stream == DS_STREAM_HOST) host = o;
      if (strcmp(o->name, "local_used.copy") == 0) copy = o;
      if (strcmp(o->name, "local_used") == 0 && o->kind == DS_OP_ALLREDUCE) ar = o;
      if (o->kind == DS_OP_ALLREDUCE && o->bucket == b.n - 1) last_bucket = o;
      if (o->kind == DS_OP_STEP) step = o;
    }
    cr_assert_not_null(step);
    if (!used) {
      cr_assert(!host && !copy && !ar);
    } else {
      cr_assert(copy && ar && last_bucket, "%p %p %p", (void *)copy, (void *)ar,
                (void *)last_bucket);
      double host_us =
          (2 * f.c.params.host_grad_copy_ns + f.c.params.host_collective_ns) / 1000;
      /* a host op only where the host costs something (emit_host) */
      if (host_us > 0) cr_assert_float_eq(host->dur_us, host_us, 1e-9);
      else cr_assert_null(host);
      cr_assert_float_eq(copy->bytes, 4.0 * 4, 0);
      cr_assert_float_eq(ar->bytes, 4.0 * 4, 0);
      cr_assert_eq(ar->coll, b.n);
      cr_assert_eq(ar->bucket, -1, "not a gradient bucket's");
      const int64_t *d = ds_schedule_deps(s, ar);
      int after_copy = 0, after_bucket = 0;
      for (uint32_t k = 0; k < ar->dep_count; k++) {
        after_copy |= d[k] == copy->id;
        after_bucket |= d[k] == last_bucket->id;
      }
      cr_assert(after_copy && after_bucket);
      d = ds_schedule_deps(s, step);
      int waits = 0;
      for (uint32_t k = 0; k < step->dep_count; k++) waits |= d[k] == ar->id;
      cr_assert(waits, "the step waits for the map's all-reduce");
    }
    ds_schedule_free(s);
  }
  /* --grad-accum 2: find_unused's map goes after each synchronising
   * micro-step's buckets (1), static_graph's after its first backward only
   * (2), though both keep an id per micro-step */
  opt.grad_accum = 2;
  for (int mode = 1; mode <= 2; mode++) {
    opt.local_used_map = mode;
    cr_assert_eq(ds_ddp_colls_per_iteration(&opt, b.n, 0), 2 * (b.n + 1));
    struct ds_schedule *s;
    cr_assert_eq(ds_schedule_new(2, &s), DS_OK);
    cr_assert_eq(ds_ddp_build(f.m, &f.c, &opt, &b, 0, 0, s), DS_OK);
    cr_assert_eq(ds_schedule_validate(s, &err), DS_OK, "%s", err.msg);
    int maps = 0;
    for (size_t i = 0; i < s->n_ops; i++)
      maps += s->ops[i].rank == 0 && s->ops[i].kind == DS_OP_ALLREDUCE &&
              strcmp(s->ops[i].name, "local_used") == 0;
    cr_assert_eq(maps, mode == 1 ? 2 : 1, "mode %d", mode);
    ds_schedule_free(s);
  }
  ds_ddp_buckets_release(&b);
  teardown(&f);
}

Test(ddp, static_graph_first_backward_sends_the_map_before_copying_and_all_reducing) {
  /* static_graph's first backward (local_used_map 2): the autograd hooks
   * only count (reducer.cpp autograd_hook returns at
   * static_graph_first_iteration); _DDPSink queues delay_all_reduce, which
   * after the whole backward all-reduces the local-used map first, then
   * copies every gradient into its bucket (mark_variable_ready_dense per
   * parameter), then all-reduces every bucket. On the tiny model in one
   * bucket (its initial layout): the map's copy and all-reduce come after
   * the last backward kernel (layer 0's, the last of backward), every
   * LAYER.to_bucket copy after the map's copy, and the bucket's all-reduce
   * waits for the map's on the comm stream. Under find_unused_parameters
   * (1) the map still goes after the buckets, and the copies during
   * backward (the other test above). */
  struct fixture f;
  setup(&f, TINY_TOPO, TINY_MODEL, DS_AMP_NONE);
  struct ds_err err = {0};
  struct ds_buckets b;
  cr_assert_eq(ds_ddp_buckets(f.m, 4, 1 * MIB, 25 * MIB, DS_BUCKETS_ONE, &b), DS_OK);
  cr_assert_eq(b.n, 1);
  struct ds_ddp_options opt = {.world_size = 2, .batch = 1, .proto_fixed = DS_PROTO_COUNT,
                               .local_used_map = 2};
  struct ds_schedule *s;
  cr_assert_eq(ds_schedule_new(2, &s), DS_OK);
  cr_assert_eq(ds_ddp_build(f.m, &f.c, &opt, &b, 0, 0, s), DS_OK);
  cr_assert_eq(ds_schedule_validate(s, &err), DS_OK, "%s", err.msg);
  const struct ds_op *last_bwd = NULL, *map_copy = NULL, *map_ar = NULL, *bucket = NULL;
  const struct ds_op *first_copy = NULL;
  int copies = 0;
  for (size_t i = 0; i < s->n_ops; i++) {
    const struct ds_op *o = &s->ops[i];
    if (o->rank != 0) continue;
    if (o->kind == DS_OP_BWD && o->stream == DS_STREAM_COMPUTE && o->layer == 0 &&
        strcmp(o->name, f.m->layers[0].name) == 0)
      last_bwd = o;
    if (strcmp(o->name, "local_used.copy") == 0) map_copy = o;
    if (o->kind == DS_OP_ALLREDUCE && strcmp(o->name, "local_used") == 0) map_ar = o;
    if (o->kind == DS_OP_ALLREDUCE && o->bucket == 0) bucket = o;
    const char *dot = strrchr(o->name, '.');
    if (dot && strcmp(dot, ".to_bucket") == 0) {
      copies++;
      if (!first_copy) first_copy = o;
    }
  }
  cr_assert(last_bwd && map_copy && map_ar && bucket && first_copy);
  cr_assert_eq(copies, 3, "one copy op per layer with parameters");
  cr_assert_gt(map_copy->id, last_bwd->id, "the map after the whole backward");
  cr_assert_gt(first_copy->id, map_copy->id, "the copies into the bucket after the map's");
  cr_assert_gt(bucket->id, map_ar->id);
  const int64_t *d = ds_schedule_deps(s, bucket);
  int after_map = 0;
  for (uint32_t k = 0; k < bucket->dep_count; k++) after_map |= d[k] == map_ar->id;
  cr_assert(after_map, "the bucket's all-reduce follows the map's on the comm stream");
  ds_schedule_free(s);
  ds_ddp_buckets_release(&b);
  teardown(&f);
}
