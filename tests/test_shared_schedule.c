/*
 * The shared schedule (traces/shared_schedule.h): DDP's rank-0 template with
 * one block of every rank per iteration stands for exactly the full build,
 * and the executor, the jitter draws and the summary give its ops exactly
 * the full schedule's times and values; full schedules split into one-rank
 * blocks and expand back unchanged; what the checks refuse.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "sim/cli/report.h"
#include "sim/coll/nccl_model.h"
#include "sim/net/topo.h"
#include "sim/train/compute.h"
#include "sim/train/ddp.h"
#include "sim/train/exec.h"
#include "sim/train/jitter.h"
#include "sim/train/model.h"
#include "tests/support.h"
#include "traces/shared_schedule.h"

#define MIB (1024.0 * 1024.0)
#define ITERS 2

/* ResNet-50 DDP on dgx-a100 (8 ranks) with NCCL's choice of algorithm and
 * protocol per bucket: iteration 0 one bucket, iteration 1 the rebuilt
 * layout; built in full and as rank 0's template. */
struct ddp_case {
  struct ds_model *m;
  struct ds_topo *t;
  struct ds_compute c;
  struct ds_ring ring;
  struct ds_nccl_model nm;
  struct ds_ddp_plan plan;
  struct ds_schedule *full;
  struct ds_shared_schedule *sh;
  size_t iter_block[ITERS + 1];
};

static void ddp_case(struct ddp_case *x, int32_t world) {
  struct ds_err err = {0};
  memset(x, 0, sizeof *x);
  x->m = ds_test_model("models/resnet50.yaml");
  cr_assert_eq(ds_topo_load("topologies/dgx-a100.yaml", NULL, &x->t, &err), DS_OK, "%s",
               err.msg);
  cr_assert_eq(ds_compute_init(x->t, DS_DTYPE_FP32, DS_AMP_NONE, &x->c, &err), DS_OK);
  int32_t gpus[8] = {0, 1, 2, 3, 4, 5, 6, 7};
  cr_assert_eq(ds_ring_build(x->t, gpus, world, &x->ring, &err), DS_OK, "%s", err.msg);
  cr_assert_eq(ds_nccl_model_build(x->t, &x->ring, DS_NCCL_EXTRA_NONE, &x->nm, &err), DS_OK,
               "%s", err.msg);
  cr_assert_eq(ds_ddp_plan(x->m, 4, 1 * MIB, 25 * MIB, 0, 0, &x->plan), DS_OK);
  struct ds_schedule *tmpl;
  cr_assert_eq(ds_schedule_new(world, &x->full), DS_OK);
  cr_assert_eq(ds_schedule_new(world, &tmpl), DS_OK);
  struct ds_ddp_options opt = {.world_size = world, .batch = 32, .ring = &x->ring,
                               .nccl = &x->nm, .proto_fixed = DS_PROTO_COUNT,
                               .algo_auto = 1};
  size_t tmpl_at[ITERS + 1];
  int64_t coll_base = 0;
  for (int32_t it = 0; it < ITERS; it++) {
    const struct ds_buckets *bk = ds_ddp_plan_layout(&x->plan, it);
    opt.iter = it;
    opt.template_only = 0;
    int64_t id_base = (int64_t)x->full->n_ops;
    cr_assert_eq(ds_ddp_build(x->m, &x->c, &opt, bk, id_base, coll_base, x->full), DS_OK);
    opt.template_only = 1;
    tmpl_at[it] = tmpl->n_ops;
    cr_assert_eq(ds_ddp_build(x->m, &x->c, &opt, bk, id_base, coll_base, tmpl), DS_OK);
    coll_base += bk->n;
  }
  tmpl_at[ITERS] = tmpl->n_ops;
  cr_assert_eq(tmpl->n_ops * (size_t)world, x->full->n_ops);
  cr_assert_eq(ds_shared_new(tmpl, 1, &x->sh), DS_OK);
  for (int32_t it = 0; it < ITERS; it++) {
    uint32_t per = (uint32_t)(tmpl_at[it + 1] - tmpl_at[it]);
    x->iter_block[it] = (size_t)it;
    cr_assert_eq(ds_shared_add_block(x->sh, 0, world, (uint32_t)tmpl_at[it], per, per), DS_OK);
  }
  x->iter_block[ITERS] = ITERS;
  cr_assert_eq(x->sh->n_ops, x->full->n_ops);
  cr_assert_eq(ds_schedule_validate(x->full, &err), DS_OK, "%s", err.msg);
  cr_assert_eq(ds_shared_validate(x->sh, &err), DS_OK, "%s", err.msg);
}

static void ddp_case_free(struct ddp_case *x) {
  ds_shared_free(x->sh);
  ds_schedule_free(x->full);
  ds_ddp_plan_release(&x->plan);
  ds_ring_release(&x->ring);
  ds_topo_free(x->t);
  ds_model_free(x->m);
}

/* Every field of every op equal, dependencies included. */
static void assert_same_schedule(struct ds_schedule *a, struct ds_schedule *b) {
  cr_assert_eq(a->world_size, b->world_size);
  cr_assert_eq(a->n_ops, b->n_ops);
  for (size_t i = 0; i < a->n_ops; i++) {
    const struct ds_op *x = &a->ops[i], *y = &b->ops[i];
    cr_assert_eq(x->id, y->id, "op %zu", i);
    cr_assert_eq(x->rank, y->rank, "op %zu", i);
    cr_assert_eq(x->stream, y->stream, "op %zu", i);
    cr_assert_eq(x->kind, y->kind, "op %zu", i);
    cr_assert_str_eq(x->name, y->name, "op %zu", i);
    cr_assert_str_eq(x->algo, y->algo, "op %zu", i);
    cr_assert_eq(x->layer, y->layer, "op %zu", i);
    cr_assert_eq(x->bucket, y->bucket, "op %zu", i);
    cr_assert_eq(x->coll, y->coll, "op %zu", i);
    cr_assert_eq(x->root, y->root, "op %zu", i);
    cr_assert(x->bytes == y->bytes && x->flops == y->flops && x->dur_us == y->dur_us,
              "op %zu", i);
    cr_assert_eq(x->dep_count, y->dep_count, "op %zu", i);
    for (uint32_t k = 0; k < x->dep_count; k++)
      cr_assert_eq(ds_schedule_deps(a, x)[k], ds_schedule_deps(b, y)[k], "op %zu dep %u", i, k);
  }
}

Test(shared_schedule, ddp_template_stands_for_the_full_build) {
  /* Expected, because DDP's ranks differ only in rank, ids (rank-major in
   * build order) and their own previous step: the expansion of rank 0's
   * template over 8 ranks is the full build op for op. */
  struct ddp_case x;
  ddp_case(&x, 8);
  cr_assert_eq(x.sh->tmpl->n_ops * 8, x.full->n_ops, "one eighth of the ops stored");
  struct ds_schedule *e;
  cr_assert_eq(ds_shared_expand(x.sh, &e), DS_OK);
  assert_same_schedule(e, x.full);
  /* every rank's copy has the id the full build gave it */
  for (size_t b = 0; b < x.sh->n_blocks; b++) {
    const struct ds_sched_block *bl = &x.sh->blocks[b];
    for (int32_t r = 0; r < 8; r++) {
      size_t i = ds_shared_index(x.sh, b, r, bl->first_op + 3);
      cr_assert_eq(x.full->ops[i].rank, r);
      cr_assert_eq(ds_shared_id(x.sh, b, r, bl->first_op + 3), x.full->ops[i].id);
    }
  }
  ds_schedule_free(e);
  ddp_case_free(&x);
}

/* Runs the full schedule (ds_exec_run) and the shared one, recording every
 * op's times, with the given options; asserts equal times for every op. */
static void assert_same_run(struct ddp_case *x, struct ds_exec_options *opt,
                            const double *full_scale, const double *shared_scale,
                            const double *rank_scale, struct ds_report_times *tm) {
  struct ds_err err = {0};
  size_t n = x->full->n_ops;
  int64_t *start = malloc(n * sizeof *start), *end = malloc(n * sizeof *end);
  int64_t rank_time[8] = {0}, rank_time2[8] = {0};
  struct ds_exec *ex;
  opt->dur_scale = full_scale;
  opt->rank_scale = NULL;
  cr_assert_eq(ds_exec_new(x->t, opt, &ex, &err), DS_OK, "%s", err.msg);
  cr_assert_eq(ds_exec_run(ex, x->full, rank_time, start, end, &err), DS_OK, "%s", err.msg);
  ds_exec_free(ex);
  opt->dur_scale = shared_scale;
  opt->rank_scale = rank_scale;
  cr_assert_eq(ds_exec_new(x->t, opt, &ex, &err), DS_OK, "%s", err.msg);
  ds_report_times_reset(tm);
  cr_assert_eq(ds_exec_run_shared(ex, x->sh, rank_time2, ds_report_times_record, tm, &err),
               DS_OK, "%s", err.msg);
  ds_exec_free(ex);
  for (size_t i = 0; i < n; i++) {
    cr_assert_eq(tm->start[i], start[i], "op %zu starts at %ld, not %ld", i,
                 (long)tm->start[i], (long)start[i]);
    cr_assert_eq(tm->end[i], end[i], "op %zu ends at %ld, not %ld", i, (long)tm->end[i],
                 (long)end[i]);
  }
  for (int r = 0; r < x->full->world_size; r++) cr_assert_eq(rank_time2[r], rank_time[r]);
  /* the summary from rank 0's ops and the spans is the full one's */
  size_t at[ITERS + 1] = {0};
  for (int it = 0; it <= ITERS; it++)
    at[it] = it < ITERS ? x->sh->blocks[x->iter_block[it]].first_index : x->sh->n_ops;
  for (int it = 0; it < ITERS; it++) {
    struct ds_summary a = {0}, b = {0};
    cr_assert_eq(ds_report_measure(x->full, at[it], at[it + 1] - at[it], start, end, &a),
                 DS_OK);
    cr_assert_eq(ds_report_measure_shared(tm, x->iter_block[it], x->iter_block[it + 1], &b),
                 DS_OK);
    cr_assert_gt(a.iter_ms, 0);
    cr_assert(a.iter_ms == b.iter_ms && a.fwd_ms == b.fwd_ms && a.bwd_ms == b.bwd_ms &&
                  a.step_ms == b.step_ms && a.comm_ms == b.comm_ms &&
                  a.exposed_comm_ms == b.exposed_comm_ms && a.overlap_pct == b.overlap_pct,
              "iteration %d: %.6f vs %.6f ms", it, a.iter_ms, b.iter_ms);
  }
  free(start);
  free(end);
}

Test(shared_schedule, the_executor_gives_every_copy_the_full_runs_times) {
  /* Expected, because the shared executor is the full one with each op's
   * state derived from its rank's stream heads: per flow and aggregated,
   * with interference, with jitter drawn per copy and with a straggler. */
  struct ddp_case x;
  ddp_case(&x, 8);
  struct ds_report_times tm;
  cr_assert_eq(ds_report_times_new(x.sh, 1, &tm), DS_OK);
  struct ds_exec_options opt = {.net_mode = DS_NET_MAXMIN, .coll_model = DS_COLL_FLOW,
                                .ring_chunks = 1, .nccl = &x.nm, .prebuilt_ring = &x.ring,
                                .compute = &x.c, .model = x.m};
  assert_same_run(&x, &opt, NULL, NULL, NULL, &tm);
  opt.coll_model = DS_COLL_AGGREGATE;
  assert_same_run(&x, &opt, NULL, NULL, NULL, &tm);
  /* jitter: the same draws, in full-schedule order */
  size_t n = x.full->n_ops;
  double *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b), *f = malloc(n * sizeof *f);
  cr_assert_eq(ds_jitter_fill(x.full, 0.2, 7, a), DS_OK);
  cr_assert_eq(ds_jitter_fill_shared(x.sh, 0.2, 7, b), DS_OK);
  cr_assert_eq(memcmp(a, b, n * sizeof *a), 0);
  assert_same_run(&x, &opt, a, b, NULL, &tm);
  /* a straggler: rank 3's compute 1.5x, as the full run's per-op factor */
  double factor[8] = {1, 1, 1, 1.5, 1, 1, 1, 1};
  for (size_t i = 0; i < n; i++)
    f[i] = a[i] * (x.full->ops[i].stream == DS_STREAM_COMPUTE ? factor[x.full->ops[i].rank] : 1);
  assert_same_run(&x, &opt, f, b, factor, &tm);
  cr_assert_gt(tm.last_end[3], tm.last_end[2], "the straggler ends its first iteration last");
  free(a);
  free(b);
  free(f);
  ds_report_times_release(&tm);
  ddp_case_free(&x);
}

Test(shared_schedule, without_full_times_the_record_is_per_template_op_and_rank) {
  struct ddp_case x;
  ddp_case(&x, 8);
  struct ds_report_times tm;
  cr_assert_eq(ds_report_times_new(x.sh, 0, &tm), DS_OK);
  cr_assert_null(tm.start);
  cr_assert_eq(tm.slot_at[x.sh->n_blocks], (size_t)8 * ITERS, "one span per rank and iteration");
  ds_report_times_release(&tm);
  ddp_case_free(&x);
}

/* ops on ranks 0 0 1 1 0 (ids 10..14), each after the previous of its rank */
static struct ds_schedule *small_full(void) {
  struct ds_schedule *s;
  cr_assert_eq(ds_schedule_new(2, &s), DS_OK);
  const int32_t ranks[5] = {0, 0, 1, 1, 0};
  int64_t last[2] = {-1, -1};
  for (int i = 0; i < 5; i++) {
    struct ds_op o = {.id = 10 + i, .rank = ranks[i], .stream = DS_STREAM_COMPUTE,
                      .kind = DS_OP_FWD, .name = "f", .layer = -1, .bucket = -1, .coll = -1,
                      .root = -1, .dur_us = 1 + i};
    int64_t d = last[ranks[i]];
    cr_assert_eq(ds_schedule_add(s, &o, &d, d >= 0, NULL), DS_OK);
    last[ranks[i]] = o.id;
  }
  return s;
}

Test(shared_schedule, a_full_schedule_is_one_block_per_run_of_a_rank) {
  /* Expected, because a block ends where the rank changes (after op 1 and
   * op 3) and at every cut (3): blocks [0,2) rank 0, [2,3) and [3,4) rank 1,
   * [4,5) rank 0; expanding them gives the schedule back. */
  struct ds_schedule *s = small_full(), *e;
  struct ds_shared_schedule *sh;
  struct ds_err err = {0};
  size_t cuts[1] = {3};
  cr_assert_eq(ds_shared_from_schedule(s, cuts, 1, &sh), DS_OK);
  cr_assert_eq(sh->n_blocks, 4);
  const uint32_t first[4] = {0, 2, 3, 4}, len[4] = {2, 1, 1, 1};
  const int32_t rank[4] = {0, 1, 1, 0};
  for (int b = 0; b < 4; b++) {
    cr_assert_eq(sh->blocks[b].first_op, first[b]);
    cr_assert_eq(sh->blocks[b].n_ops, len[b]);
    cr_assert_eq(sh->blocks[b].first_rank, rank[b]);
    cr_assert_eq(sh->blocks[b].n_ranks, 1);
    cr_assert_eq(sh->blocks[b].first_index, first[b]);
  }
  cr_assert_eq(ds_shared_block_of(sh, 3), 2);
  cr_assert_eq(ds_shared_block_of(sh, 5), SIZE_MAX);
  cr_assert_eq(ds_shared_validate(sh, &err), DS_OK, "%s", err.msg);
  cr_assert_eq(ds_shared_expand(sh, &e), DS_OK);
  assert_same_schedule(e, s);
  ds_schedule_free(e);
  ds_shared_free(sh);
  ds_schedule_free(s);
}

/* A template of world 2 whose ops the test adds, and blocks over it. */
static void add_op(struct ds_schedule *t, int64_t id, int32_t rank, enum ds_op_kind kind,
                   int64_t coll, int32_t root, int64_t dep) {
  struct ds_op o = {.id = id, .rank = rank,
                    .stream = ds_op_kind_is_collective(kind) || kind == DS_OP_SEND
                                  ? DS_STREAM_COMM : DS_STREAM_COMPUTE,
                    .kind = kind, .name = "x", .layer = -1, .bucket = -1, .coll = coll,
                    .root = root, .bytes = 1024, .dur_us = 1};
  cr_assert_eq(ds_schedule_add(t, &o, &dep, dep >= 0, NULL), DS_OK);
}

static void assert_refused(struct ds_shared_schedule *sh, const char *msg) {
  struct ds_err err = {0};
  cr_assert_neq(ds_shared_validate(sh, &err), DS_OK, "accepted, expected: %s", msg);
  cr_assert(strstr(err.msg, msg), "message '%s' lacks '%s'", err.msg, msg);
  ds_shared_free(sh);
}

Test(shared_schedule, the_checks_refuse_what_copies_cannot_run) {
  struct ds_schedule *t;
  struct ds_shared_schedule *sh;
  /* a block of ranks 0..1 depending on a block of rank 0 alone: rank 1's
   * copy would wait for an op it does not run */
  cr_assert_eq(ds_schedule_new(2, &t), DS_OK);
  add_op(t, 0, 0, DS_OP_FWD, -1, -1, -1);
  add_op(t, 1, 0, DS_OP_FWD, -1, -1, 0);
  cr_assert_eq(ds_shared_new(t, 1, &sh), DS_OK);
  cr_assert_eq(ds_shared_add_block(sh, 0, 1, 0, 1, 1), DS_OK);
  cr_assert_eq(ds_shared_add_block(sh, 0, 2, 1, 1, 1), DS_OK);
  assert_refused(sh, "does not run on all of ranks 0..1");
  /* a send copied to every rank of a block */
  cr_assert_eq(ds_schedule_new(2, &t), DS_OK);
  add_op(t, 0, 0, DS_OP_SEND, -1, 1, -1);
  cr_assert_eq(ds_shared_new(t, 1, &sh), DS_OK);
  cr_assert_eq(ds_shared_add_block(sh, 0, 2, 0, 1, 1), DS_OK);
  assert_refused(sh, "only one-rank blocks hold point-to-point ops");
  /* collective 5 run by ranks 0..1's block and again by rank 1's own op */
  cr_assert_eq(ds_schedule_new(2, &t), DS_OK);
  add_op(t, 0, 0, DS_OP_ALLREDUCE, 5, -1, -1);
  add_op(t, 2, 1, DS_OP_ALLREDUCE, 5, -1, -1);
  cr_assert_eq(ds_shared_new(t, 1, &sh), DS_OK);
  cr_assert_eq(ds_shared_add_block(sh, 0, 2, 0, 1, 1), DS_OK);
  cr_assert_eq(ds_shared_add_block(sh, 1, 1, 1, 1, 1), DS_OK);
  assert_refused(sh, "collective 5 is also op 0 of a block of several ranks");
  /* copies whose ids would collide: the template's ids are not the full
   * schedule's indices */
  cr_assert_eq(ds_schedule_new(2, &t), DS_OK);
  add_op(t, 0, 0, DS_OP_FWD, -1, -1, -1);
  add_op(t, 1, 0, DS_OP_FWD, -1, -1, 0);
  cr_assert_eq(ds_shared_new(t, 1, &sh), DS_OK);
  cr_assert_eq(ds_shared_add_block(sh, 0, 2, 0, 2, 1), DS_OK);
  assert_refused(sh, "needs ids equal to full-schedule indices");
  /* a template op outside every block */
  cr_assert_eq(ds_schedule_new(2, &t), DS_OK);
  add_op(t, 0, 0, DS_OP_FWD, -1, -1, -1);
  add_op(t, 1, 0, DS_OP_FWD, -1, -1, 0);
  cr_assert_eq(ds_shared_new(t, 1, &sh), DS_OK);
  cr_assert_eq(ds_shared_add_block(sh, 0, 1, 0, 1, 1), DS_OK);
  assert_refused(sh, "are in no block");
}

Test(shared_schedule, a_shared_block_runs_one_collective_over_its_ranks) {
  /* tiny-topo: 4 GPUs on one switch, 10 GB/s and 1 us per link. Ranks 0..3
   * share fwd (10 us) then an all-reduce of 4 MB on the plain ring; one
   * block of 4 ranks runs what 4 full copies run. Expected, because every
   * copy enters the one collective: the end equals the full run's. */
  struct ds_err err = {0};
  struct ds_topo *topo;
  cr_assert_eq(ds_topo_load("tests/data/tiny-topo.yaml", NULL, &topo, &err), DS_OK, "%s",
               err.msg);
  struct ds_schedule *t;
  cr_assert_eq(ds_schedule_new(4, &t), DS_OK);
  struct ds_op f = {.id = 0, .rank = 0, .stream = DS_STREAM_COMPUTE, .kind = DS_OP_FWD,
                    .name = "f", .layer = -1, .bucket = -1, .coll = -1, .root = -1,
                    .dur_us = 10};
  struct ds_op ar = {.id = 1, .rank = 0, .stream = DS_STREAM_COMM, .kind = DS_OP_ALLREDUCE,
                     .name = "ar", .layer = -1, .bucket = 0, .coll = 0, .root = -1,
                     .algo = "ring", .bytes = 4e6};
  int64_t dep = 0;
  cr_assert_eq(ds_schedule_add(t, &f, NULL, 0, NULL), DS_OK);
  cr_assert_eq(ds_schedule_add(t, &ar, &dep, 1, NULL), DS_OK);
  struct ds_shared_schedule *sh;
  cr_assert_eq(ds_shared_new(t, 1, &sh), DS_OK);
  cr_assert_eq(ds_shared_add_block(sh, 0, 4, 0, 2, 2), DS_OK);
  cr_assert_eq(ds_shared_validate(sh, &err), DS_OK, "%s", err.msg);
  struct ds_schedule *full;
  cr_assert_eq(ds_shared_expand(sh, &full), DS_OK);
  struct ds_exec_options opt = {.net_mode = DS_NET_MAXMIN, .coll_model = DS_COLL_FLOW,
                                .ring_chunks = 1};
  struct ds_exec *ex;
  int64_t rt[4] = {0}, rt2[4] = {0}, start[8], end[8];
  cr_assert_eq(ds_exec_new(topo, &opt, &ex, &err), DS_OK);
  cr_assert_eq(ds_exec_run(ex, full, rt, start, end, &err), DS_OK, "%s", err.msg);
  ds_exec_free(ex);
  struct ds_report_times tm;
  cr_assert_eq(ds_report_times_new(sh, 1, &tm), DS_OK);
  cr_assert_eq(ds_exec_new(topo, &opt, &ex, &err), DS_OK);
  cr_assert_eq(ds_exec_run_shared(ex, sh, rt2, ds_report_times_record, &tm, &err), DS_OK, "%s",
               err.msg);
  ds_exec_free(ex);
  /* ring all-reduce: 2(N-1) = 6 steps of S/N = 1 MB: 6 x (2 us + 100 us) */
  for (int r = 0; r < 4; r++) {
    cr_assert_eq(tm.start[2 * r + 1], 10000, "rank %d enters after its fwd", r);
    cr_assert_eq(tm.end[2 * r + 1], end[2 * r + 1]);
    cr_assert_eq(rt2[r], rt[r]);
  }
  cr_assert_eq(end[1], 10000 + 6 * (2000 + 100000));
  ds_report_times_release(&tm);
  ds_schedule_free(full);
  ds_shared_free(sh);
  ds_topo_free(topo);
}
