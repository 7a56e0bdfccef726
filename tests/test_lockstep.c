/*
 * Ranks in lockstep (sim/train/exec.c, "Lockstep"): the ranks of a class
 * that start together with the same factors run as one cohort, one event
 * per op, and split where a collective ends its members apart. Every test
 * runs a DDP schedule twice, in cohorts and rank by rank
 * (ds_exec_options.no_lockstep, the execution before cohorts), and asserts
 * every op copy's start and end equal to the nanosecond, then the cohorts
 * the run began and ended with, worked out from what each collective does.
 * Also: which collectives finish their members together
 * (ds_coll_finishes_together), the promise the cohorts rest on.
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
#include "tests/coll_harness.h"
#include "tests/support.h"
#include "traces/shared_schedule.h"

#define MIB (1024.0 * 1024.0)
#define ITERS 2

/* A DDP run as sim/cli/run_schedule.c builds it: rank 0's template, one block of
 * every rank per iteration. */
struct lk_case {
  struct ds_model *m;
  struct ds_topo *t;
  struct ds_compute c;
  struct ds_ring ring;
  struct ds_nccl_model nm;
  int has_nccl;
  struct ds_ddp_plan plan;
  struct ds_shared_schedule *sh;
};

/* algo_auto: NCCL's choice per bucket; else `algo`, plain (no protocol). */
static void lk_case(struct lk_case *x, const char *topo, const char *model, int32_t world,
                    int algo_auto, enum ds_ar_algo algo) {
  struct ds_err err = {0};
  memset(x, 0, sizeof *x);
  x->m = ds_test_model(model);
  cr_assert_eq(ds_topo_load(topo, NULL, &x->t, &err), DS_OK, "%s", err.msg);
  cr_assert_eq(ds_compute_init(x->t, DS_DTYPE_FP32, DS_AMP_NONE, &x->c, &err), DS_OK);
  int32_t gpus[64];
  for (int32_t i = 0; i < world; i++) gpus[i] = i;
  cr_assert_eq(ds_ring_build_rails(x->t, gpus, world, &x->ring, &err), DS_OK, "%s", err.msg);
  if (algo_auto) {
    cr_assert_eq(ds_nccl_model_build(x->t, &x->ring, DS_NCCL_EXTRA_NONE, &x->nm, &err), DS_OK,
                 "%s", err.msg);
    x->has_nccl = 1;
  }
  cr_assert_eq(ds_ddp_plan(x->m, 4, 1 * MIB, 25 * MIB, 0, 0, &x->plan), DS_OK);
  struct ds_schedule *tmpl;
  cr_assert_eq(ds_schedule_new(world, &tmpl), DS_OK);
  struct ds_ddp_options opt = {.world_size = world, .batch = 8, .ring = &x->ring,
                               .nccl = algo_auto ? &x->nm : NULL,
                               .proto_fixed = DS_PROTO_COUNT, .algo = algo,
                               .algo_auto = algo_auto, .template_only = 1};
  size_t tmpl_at[ITERS + 1];
  int64_t coll_base = 0, id_base = 0;
  for (int32_t it = 0; it < ITERS; it++) {
    const struct ds_buckets *bk = ds_ddp_plan_layout(&x->plan, it);
    opt.iter = it;
    tmpl_at[it] = tmpl->n_ops;
    cr_assert_eq(ds_ddp_build(x->m, &x->c, &opt, bk, id_base, coll_base, tmpl), DS_OK);
    id_base += (int64_t)(tmpl->n_ops - tmpl_at[it]) * world;
    coll_base += bk->n;
  }
  tmpl_at[ITERS] = tmpl->n_ops;
  cr_assert_eq(ds_shared_new(tmpl, 1, &x->sh), DS_OK);
  for (int32_t it = 0; it < ITERS; it++) {
    uint32_t per = (uint32_t)(tmpl_at[it + 1] - tmpl_at[it]);
    cr_assert_eq(ds_shared_add_block(x->sh, 0, world, (uint32_t)tmpl_at[it], per, per), DS_OK);
  }
  cr_assert_eq(ds_shared_validate(x->sh, &err), DS_OK, "%s", err.msg);
}

static void lk_case_free(struct lk_case *x) {
  ds_shared_free(x->sh);
  ds_ddp_plan_release(&x->plan);
  ds_ring_release(&x->ring);
  ds_topo_free(x->t);
  ds_model_free(x->m);
}

/* What the lockstep run did. */
struct lk_result {
  struct ds_exec_lockstep cohorts;
  uint64_t events, events_per_rank;
};

/* Runs x under model (and the given per-op and per-rank factors) in
 * cohorts and rank by rank; asserts every op copy's times and every rank's
 * end equal. */
static struct lk_result lk_run(struct lk_case *x, enum ds_coll_model model,
                               const double *dur_scale, const double *rank_scale) {
  struct ds_err err = {0};
  int32_t w = x->sh->world_size;
  struct ds_report_times a, b;
  cr_assert_eq(ds_report_times_new(x->sh, 1, &a), DS_OK);
  cr_assert_eq(ds_report_times_new(x->sh, 1, &b), DS_OK);
  int64_t *ta = calloc((size_t)w, sizeof *ta), *tb = calloc((size_t)w, sizeof *tb);
  struct ds_exec_options opt = {.net_mode = DS_NET_MAXMIN, .coll_model = model,
                                .ring_chunks = 1, .nccl = x->has_nccl ? &x->nm : NULL,
                                .dur_scale = dur_scale, .rank_scale = rank_scale,
                                .prebuilt_ring = &x->ring, .compute = &x->c, .model = x->m};
  struct lk_result res;
  struct ds_exec *ex;
  cr_assert_eq(ds_exec_new(x->t, &opt, &ex, &err), DS_OK, "%s", err.msg);
  ds_report_times_reset(&a);
  cr_assert_eq(ds_exec_run_shared(ex, x->sh, ta, ds_report_times_record, &a, &err), DS_OK,
               "%s", err.msg);
  res.cohorts = ds_exec_lockstep(ex);
  res.events = ds_exec_events(ex);
  ds_exec_free(ex);
  opt.no_lockstep = 1;
  cr_assert_eq(ds_exec_new(x->t, &opt, &ex, &err), DS_OK, "%s", err.msg);
  ds_report_times_reset(&b);
  cr_assert_eq(ds_exec_run_shared(ex, x->sh, tb, ds_report_times_record, &b, &err), DS_OK,
               "%s", err.msg);
  cr_assert_eq(ds_exec_lockstep(ex).initial, w, "rank by rank: a cohort per rank");
  cr_assert_eq(ds_exec_lockstep(ex).final, w);
  res.events_per_rank = ds_exec_events(ex);
  ds_exec_free(ex);
  for (size_t i = 0; i < x->sh->n_ops; i++) {
    cr_assert_geq(b.end[i], b.start[i], "op %zu ran", i);
    cr_assert_eq(a.start[i], b.start[i], "op %zu starts at %ld in cohorts, %ld rank by rank", i,
                 (long)a.start[i], (long)b.start[i]);
    cr_assert_eq(a.end[i], b.end[i], "op %zu ends at %ld in cohorts, %ld rank by rank", i,
                 (long)a.end[i], (long)b.end[i]);
  }
  for (int32_t r = 0; r < w; r++) cr_assert_eq(ta[r], tb[r], "rank %d's end", r);
  free(ta);
  free(tb);
  ds_report_times_release(&a);
  ds_report_times_release(&b);
  return res;
}

Test(lockstep, an_aggregated_ring_keeps_every_rank_in_one_cohort) {
  /* Expected, because the aggregated ring ends all 8 members in one loop
   * at one instant (ds_coll_finishes_together): the cohort of all 8 ranks
   * never splits, and it fires one event per op where the ranks fired 8,
   * so fewer than a quarter of the per-rank run's events (the network's
   * own, one flow per all-reduce, are the same in both). */
  struct lk_case x;
  lk_case(&x, "topologies/dgx-a100.yaml", "models/resnet50.yaml", 8, 0, DS_AR_RING);
  struct lk_result r = lk_run(&x, DS_COLL_AGGREGATE, NULL, NULL);
  cr_assert_eq(r.cohorts.initial, 1);
  cr_assert_eq(r.cohorts.final, 1);
  cr_assert_lt(r.events * 4, r.events_per_rank, "%lu events in lockstep, %lu rank by rank",
               (unsigned long)r.events, (unsigned long)r.events_per_rank);
  lk_case_free(&x);
}

Test(lockstep, a_per_flow_ring_ends_members_apart_so_every_rank_splits_off) {
  /* Expected, because the per-flow ring ends each member at its own last
   * flow, one callback each, so each member leaves the cohort as it ends
   * (the last one is what is left of it): 8 cohorts of one, the per-rank
   * run's times. */
  struct lk_case x;
  lk_case(&x, "topologies/dgx-a100.yaml", "models/resnet50.yaml", 8, 0, DS_AR_RING);
  struct lk_result r = lk_run(&x, DS_COLL_FLOW, NULL, NULL);
  cr_assert_eq(r.cohorts.initial, 1);
  cr_assert_eq(r.cohorts.final, 8);
  lk_case_free(&x);
}

Test(lockstep, stragglers_start_in_a_cohort_per_factor) {
  /* Expected: ranks 1 and 5 at 1.25x, rank 6 at 1.5x, the rest at 1x:
   * three factors, three cohorts ({0,2,3,4,7}, {1,5}, {6}); the aggregated
   * ring ends every member together, so they stay three. */
  struct lk_case x;
  lk_case(&x, "topologies/dgx-a100.yaml", "models/resnet50.yaml", 8, 0, DS_AR_RING);
  double factor[8] = {1, 1.25, 1, 1, 1, 1.25, 1.5, 1};
  struct lk_result r = lk_run(&x, DS_COLL_AGGREGATE, NULL, factor);
  cr_assert_eq(r.cohorts.initial, 3);
  cr_assert_eq(r.cohorts.final, 3);
  /* per flow the stragglers' ring splits the big cohort too */
  r = lk_run(&x, DS_COLL_FLOW, NULL, factor);
  cr_assert_eq(r.cohorts.initial, 3);
  cr_assert_eq(r.cohorts.final, 8);
  lk_case_free(&x);
}

Test(lockstep, jitter_draws_per_copy_so_every_rank_runs_alone) {
  /* Expected, because --jitter gives every op copy its own factor: no two
   * ranks' durations agree, 8 cohorts from the start. */
  struct lk_case x;
  lk_case(&x, "topologies/dgx-a100.yaml", "models/resnet50.yaml", 8, 0, DS_AR_RING);
  double *scale = malloc(x.sh->n_ops * sizeof *scale);
  cr_assert_eq(ds_jitter_fill_shared(x.sh, 0.2, 7, scale), DS_OK);
  struct lk_result r = lk_run(&x, DS_COLL_AGGREGATE, scale, NULL);
  cr_assert_eq(r.cohorts.initial, 8);
  cr_assert_eq(r.cohorts.final, 8);
  free(scale);
  lk_case_free(&x);
}

Test(lockstep, nccl_choices_across_two_nodes_stay_one_cohort_when_aggregated) {
  /* Expected: on 2node-ib (16 ranks) NCCL's choice per bucket runs rings
   * over both NICs' rails and trees; aggregated, each ends every member in
   * one loop (the rails' last), so one cohort throughout; per flow every
   * member ends on its own: 16. Interference re-rates the compute ops of
   * the split-off ranks as their all-reduce ends. */
  struct lk_case x;
  lk_case(&x, "topologies/2node-ib.yaml", "models/resnet50.yaml", 16, 1, DS_AR_RING);
  cr_assert_gt(x.ring.n_rails, 1, "a rail per NIC");
  struct lk_result r = lk_run(&x, DS_COLL_AGGREGATE, NULL, NULL);
  cr_assert_eq(r.cohorts.initial, 1);
  cr_assert_eq(r.cohorts.final, 1);
  r = lk_run(&x, DS_COLL_FLOW, NULL, NULL);
  cr_assert_eq(r.cohorts.final, 16);
  lk_case_free(&x);
}

Test(lockstep, plain_trees_and_split_offs_sharing_events) {
  /* The plain tree holds no SMs, so a compute op is never re-rated when a
   * member's all-reduce ends: per flow, the ranks that split off keep the
   * cohort's pending compute events (tokens shared, fired in rank order);
   * the times still equal the per-rank run's. Aggregated, the tree's flows
   * end every member in one loop: one cohort. */
  struct lk_case x;
  lk_case(&x, "topologies/2node-ib.yaml", "models/resnet50.yaml", 16, 0, DS_AR_TREE);
  struct lk_result r = lk_run(&x, DS_COLL_FLOW, NULL, NULL);
  cr_assert_eq(r.cohorts.final, 16);
  r = lk_run(&x, DS_COLL_AGGREGATE, NULL, NULL);
  cr_assert_eq(r.cohorts.final, 1);
  lk_case_free(&x);
}

Test(lockstep, hierarchical_phases_end_members_apart_even_aggregated) {
  /* Expected, because the hierarchical all-reduce ends each member after
   * its own node's all-gather (ds_coll_finishes_together is 0), so the
   * cohort splits, aggregated or not; the times stay the per-rank run's. */
  struct lk_case x;
  lk_case(&x, "topologies/2node-ib.yaml", "models/resnet50.yaml", 16, 0, DS_AR_HIER);
  struct lk_result r = lk_run(&x, DS_COLL_AGGREGATE, NULL, NULL);
  cr_assert_eq(r.cohorts.initial, 1);
  cr_assert_gt(r.cohorts.final, 1);
  lk_case_free(&x);
}

/* Whether algo over n GPUs of path under model finishes its members
 * together, and (run alone) when each finished. */
static int together(const char *path, enum ds_ar_algo algo, int32_t n, enum ds_coll_model model,
                    int64_t *done) {
  struct harness h;
  struct ds_err err = {0};
  harness_load(&h, path);
  cr_assert_eq(harness_new(&h, algo, n, 64 * MIB, 0, 1, model, NULL, &err), DS_OK, "%s",
               err.msg);
  int t = ds_coll_finishes_together(h.coll);
  harness_finish(&h, n, "together");
  memcpy(done, h.done_ns, (size_t)n * sizeof *done);
  harness_release(&h);
  ds_topo_free(h.topo);
  return t;
}

Test(lockstep, which_collectives_finish_their_members_together) {
  /* The aggregated ring and the aggregated tree end every member with
   * their last flow (the rails: nccl_choices_across_two_nodes_...); per flow, and NVLS and
   * the hierarchical phases, end members one by one. Where the promise
   * holds, the members' ends are one instant. */
  int64_t done[16];
  cr_assert(together("topologies/dgx-a100.yaml", DS_AR_RING, 8, DS_COLL_AGGREGATE, done));
  for (int i = 1; i < 8; i++) cr_assert_eq(done[i], done[0]);
  cr_assert(together("topologies/2node-ib.yaml", DS_AR_RING, 16, DS_COLL_AGGREGATE, done));
  for (int i = 1; i < 16; i++) cr_assert_eq(done[i], done[0]);
  cr_assert(together("topologies/2node-ib.yaml", DS_AR_TREE, 16, DS_COLL_AGGREGATE, done));
  for (int i = 1; i < 16; i++) cr_assert_eq(done[i], done[0]);
  cr_assert_not(together("topologies/dgx-a100.yaml", DS_AR_RING, 8, DS_COLL_FLOW, done));
  cr_assert_not(together("topologies/2node-ib.yaml", DS_AR_RING, 16, DS_COLL_FLOW, done));
  cr_assert_not(together("topologies/2node-ib.yaml", DS_AR_TREE, 16, DS_COLL_FLOW, done));
  cr_assert_not(together("topologies/2node-ib.yaml", DS_AR_HIER, 16, DS_COLL_AGGREGATE, done));
  cr_assert_not(together("topologies/dgx-a100.yaml", DS_AR_DIRECT, 8, DS_COLL_AGGREGATE, done));
}

Test(lockstep, random_stragglers_under_every_execution_give_the_per_rank_times) {
  /* Cohorts of interleaved ranks (a factor of 1 or 1.25 per rank, drawn
   * from a fixed LCG), split by per-flow rings and trees or kept by their
   * aggregates: whatever the mix, every op copy's times are the per-rank
   * run's (lk_run asserts them). */
  static const enum ds_ar_algo algos[3] = {DS_AR_RING, DS_AR_TREE, DS_AR_HIER};
  uint32_t seed = 12345;
  for (int a = 0; a < 3; a++) {
    struct lk_case x;
    lk_case(&x, "topologies/2node-ib.yaml", "models/resnet50.yaml", 16, 0, algos[a]);
    for (int m = 0; m < 2; m++) {
      double factor[16];
      int32_t distinct = 0;
      for (int r = 0; r < 16; r++) {
        seed = seed * 1103515245u + 12345u;
        factor[r] = (seed >> 16) & 1 ? 1.25 : 1.0;
        distinct |= factor[r] == 1.25 ? 2 : 1;
      }
      struct lk_result res = lk_run(&x, m ? DS_COLL_FLOW : DS_COLL_AGGREGATE, NULL, factor);
      cr_assert_eq(res.cohorts.initial, distinct == 3 ? 2 : 1, "one cohort per factor");
      cr_assert_geq(res.cohorts.final, res.cohorts.initial);
    }
    lk_case_free(&x);
  }
}
