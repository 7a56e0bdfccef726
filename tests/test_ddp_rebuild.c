/*
 * DDP's bucket rebuild's forward (sim/train/ddp_rebuild.c): the broadcasts
 * of the new layout that reducer.cpp sync_bucket_indices runs once, before
 * the first forward on the rebuilt buckets, and the copies of kept grads
 * into their new bucket views. Moved from test_ddp.c (which holds the
 * buckets and the schedule's shape).
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/train/compute.h"
#include "sim/train/ddp.h"
#include "sim/train/model.h"
#include "tests/support.h"
#include "tests/ddp_fixture.h"

#define MIB (1024.0 * 1024.0)

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

/* Rank 0's first op named `name` at or after index from, or -1. */
static int64_t find_op(const struct ds_schedule *s, size_t from, const char *name) {
  for (size_t i = from; i < s->n_ops; i++)
    if (s->ops[i].rank == 0 && strcmp(s->ops[i].name, name) == 0) return (int64_t)i;
  return -1;
}

Test(ddp_rebuild, the_rebuilds_forward_broadcasts_the_layout_then_copies_kept_grads) {
  /* reducer.cpp sync_bucket_indices, run by _pre_forward before the
   * forward (tools/ddp_order_probe.py: aten::copy_ 11 (int),
   * gloo:broadcast 11 (int), aten::copy_ 11, then the same with 2, for 10
   * parameters in 2 buckets). Tiny model: 4 parameters in 2 rebuilt
   * buckets, so rebuild.indices is 4 + 1 ints = 20 B and rebuild.sizes 2
   * ints = 8 B; TestGPU moves 1000 GB/s without kernel overhead: each copy
   * is 20 B / 1e12 B/s = 2e-5 us (sizes 8e-6 us). Host costs set here:
   * host_grad_copy 3 us, host_collective 5 us, so each tensor's host op
   * (two copies' launches and the broadcast's call) is 11 us. Each
   * broadcast is collective id (2 buckets + 0 buffer buckets) = 2, then 3
   * (4 ids in the iteration); under --grad-accum 2 after both micro-steps'
   * 2: 4, 5 (6 ids). With gradient_as_bucket_view and .grad kept (1.9),
   * initialize_bucket_views copies each .grad into its new bucket: bucket
   * 0 (l2.weight, 2 x 4 MiB) 8.388608 us, bucket 1 (l1.weight, l0's two)
   * 6.293504 us, host 3 us before each bucket's kernels and 2 x 3 us for
   * bucket 1's other two launches after. (Before the change: no op named
   * rebuild.*: fails.) */
  struct fixture f;
  setup(&f, TINY_TOPO, TINY_MODEL, DS_AMP_NONE);
  f.c.params.host_grad_copy_ns = 3000;
  f.c.params.host_collective_ns = 5000;
  struct ds_buckets b;
  cr_assert_eq(ds_ddp_buckets(f.m, 4, 1 * MIB, 25 * MIB, DS_BUCKETS_READY, &b), DS_OK);
  cr_assert_eq(b.n, 2);
  const struct { int view, kept, accum; int64_t coll0, n_coll; int copies; } cases[] = {
      {0, 0, 1, 2, 4, 0}, {1, 0, 1, 2, 4, 0}, {0, 1, 1, 2, 4, 0},
      {1, 1, 1, 2, 4, 1}, {0, 0, 2, 4, 6, 0},
  };
  for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
    struct ds_schedule *s;
    cr_assert_eq(ds_schedule_new(2, &s), DS_OK);
    struct ds_ddp_options opt = {.world_size = 2, .batch = 1, .proto_fixed = DS_PROTO_COUNT,
                                 .iter = 1, .grad_as_bucket_view = cases[k].view,
                                 .grad_accum = cases[k].accum, .rebuild_forward = 1};
    f.c.grad_kept = cases[k].kept;
    cr_assert_eq(ds_ddp_build(f.m, &f.c, &opt, &b, 0, 0, s), DS_OK);
    struct ds_err err = {0};
    cr_assert_eq(ds_schedule_validate(s, &err), DS_OK, "%s", err.msg);
    cr_assert_eq(ds_ddp_colls_per_iteration(&opt, b.n, 0), cases[k].n_coll, "case %zu", k);
    /* rank 0's first ops, in order */
    const char *names[] = {"rebuild.indices", "rebuild.indices.h2d", "rebuild.indices",
                           "rebuild.indices.d2h", "rebuild.indices.wait", "rebuild.sizes",
                           "rebuild.sizes.h2d", "rebuild.sizes", "rebuild.sizes.d2h",
                           "rebuild.sizes.wait"};
    const enum ds_stream streams[] = {DS_STREAM_HOST, DS_STREAM_COMPUTE, DS_STREAM_COMM,
                                      DS_STREAM_COMPUTE, DS_STREAM_HOST};
    const double dur_us[] = {11, 2e-5, 0, 2e-5, 0, 11, 8e-6, 0, 8e-6, 0};
    for (int i = 0; i < 10; i++) {
      const struct ds_op *op = &s->ops[i];
      cr_assert_str_eq(op->name, names[i], "case %zu op %d", k, i);
      cr_assert_eq(op->stream, streams[i % 5], "case %zu op %d", k, i);
      cr_assert_eq(op->kind, i % 5 == 2 ? DS_OP_BROADCAST : DS_OP_FWD, "case %zu op %d", k, i);
      cr_assert_float_eq(op->dur_us, dur_us[i], 1e-12, "case %zu op %d", k, i);
    }
    cr_assert_eq(s->ops[2].coll, cases[k].coll0, "case %zu", k);
    cr_assert_eq(s->ops[7].coll, cases[k].coll0 + 1, "case %zu", k);
    cr_assert_eq(s->ops[2].root, 0);
    cr_assert_float_eq(s->ops[2].bytes, 20, 1e-12);
    cr_assert_float_eq(s->ops[7].bytes, 8, 1e-12);
    /* the broadcast after its copy to the device; the copy back after the
     * broadcast; the host's wait after the copy back; the second tensor's
     * host op after the first one's wait (host stream order) */
    const int64_t *deps = ds_schedule_deps(s, &s->ops[2]);
    cr_assert_eq(s->ops[2].dep_count, 1);
    cr_assert_eq(deps[0], 1);
    deps = ds_schedule_deps(s, &s->ops[3]);
    cr_assert_eq(s->ops[3].dep_count, 2);
    cr_assert_eq(deps[0], 1);
    cr_assert_eq(deps[1], 2);
    deps = ds_schedule_deps(s, &s->ops[4]);
    cr_assert_eq(s->ops[4].dep_count, 1);
    cr_assert_eq(deps[0], 3);
    /* then the view copies, where .grad is kept and is to be the view */
    int64_t v0 = find_op(s, 0, "bucket0.view_copy"), v1 = find_op(s, 0, "bucket1.view_copy");
    int64_t launch = find_op(s, 0, "launch");
    if (!cases[k].copies) {
      cr_assert_eq(v0, -1, "case %zu", k);
      cr_assert_eq(launch, 10, "case %zu", k);
    } else {
      const char *vnames[] = {"bucket0.view_copy", "bucket0.view_copy", "bucket1.view_copy",
                              "bucket1.view_copy", "bucket1.view_copy"};
      const enum ds_stream vstreams[] = {DS_STREAM_HOST, DS_STREAM_COMPUTE, DS_STREAM_HOST,
                                         DS_STREAM_COMPUTE, DS_STREAM_HOST};
      const double vdur_us[] = {3, 8.388608, 3, 6.293504, 6};
      for (int i = 0; i < 5; i++) {
        const struct ds_op *op = &s->ops[10 + i];
        cr_assert_str_eq(op->name, vnames[i], "case %zu op %d", k, 10 + i);
        cr_assert_eq(op->stream, vstreams[i], "case %zu op %d", k, 10 + i);
        cr_assert_float_eq(op->dur_us, vdur_us[i], 1e-9, "case %zu op %d", k, 10 + i);
      }
      cr_assert_eq(v0, 10);
      cr_assert_eq(v1, 12);
      cr_assert_eq(launch, 15);
      /* bucket 1's copies after bucket 0's and its own first launch */
      deps = ds_schedule_deps(s, &s->ops[13]);
      cr_assert_eq(s->ops[13].dep_count, 2);
      cr_assert_eq(deps[0], 11);
      cr_assert_eq(deps[1], 12);
    }
    /* once per iteration: the second micro-step has none */
    cr_assert_eq(count_named(s, ".wait"), 2, "case %zu", k);
    ds_schedule_free(s);
  }
  /* without rebuild_forward (every other iteration): none of it */
  struct ds_schedule *s;
  cr_assert_eq(ds_schedule_new(2, &s), DS_OK);
  struct ds_ddp_options opt = {.world_size = 2, .batch = 1, .proto_fixed = DS_PROTO_COUNT,
                               .iter = 1, .grad_as_bucket_view = 1};
  f.c.grad_kept = 1;
  cr_assert_eq(ds_ddp_build(f.m, &f.c, &opt, &b, 0, 0, s), DS_OK);
  cr_assert_eq(find_op(s, 0, "rebuild.indices"), -1);
  cr_assert_eq(find_op(s, 0, "bucket0.view_copy"), -1);
  cr_assert_eq(ds_ddp_colls_per_iteration(&opt, b.n, 0), 2);
  ds_schedule_free(s);
  f.c.grad_kept = 0;
  ds_ddp_buckets_release(&b);
  teardown(&f);
}
