/*
 * What the parameter server's tests (test_ps_shard.c, test_ps_step.c,
 * test_ps_window.c) share: tiny-topo with a model and its compute model,
 * the options of a run, a run that must succeed, and a run's every step's
 * op times (ps.h on_iter) with the result's copies checked against them
 * and the summary's metrics of one step. The functions are static inline
 * so that an includer need not use them all.
 *
 * tiny-topo: 4 TestGPUs (10 TFLOPS fp32, 1000 GB/s, efficiencies 1, no
 * kernel overhead) on one switch, 10 GB/s and 1 us per link: a route
 * between two GPUs is 2 links, latency a = 2 us (trailing), B = 10 GB/s.
 * Servers are colocated on GPUs: one server on GPU 0, two on GPUs 0 and 2.
 * The closed forms the tests use: tests/ps_hand.h.
 */
#ifndef DS_TESTS_PS_FIXTURE_H
#define DS_TESTS_PS_FIXTURE_H

#include <criterion/criterion.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/metrics.h"
#include "sim/net/topo.h"
#include "sim/train/compute.h"
#include "sim/train/model.h"
#include "sim/train/ps.h"
#include "tests/support.h"

struct fixture {
  struct ds_topo *topo;
  struct ds_model *model;
  struct ds_compute c;
};

static inline void load(struct fixture *f, const char *model) {
  struct ds_err err = {0};
  cr_assert_eq(ds_topo_load("tests/data/tiny-topo.yaml", NULL, &f->topo, &err), DS_OK,
               "%s", err.msg);
  f->model = ds_test_model(model);
  cr_assert_eq(ds_compute_init(f->topo, DS_DTYPE_FP32, DS_AMP_NONE, &f->c, &err), DS_OK, "%s", err.msg);
}

static inline void unload(struct fixture *f) {
  ds_model_free(f->model);
  ds_topo_free(f->topo);
}

static inline struct ds_ps_options opts(int32_t world, int32_t servers, enum ds_ps_mode mode,
                                        int32_t iters, int64_t batch) {
  return (struct ds_ps_options){.world_size = world, .batch = batch, .n_servers = servers,
                                .mode = mode, .iters = iters, .net_mode = DS_NET_MAXMIN};
}

static inline void run(struct fixture *f, const struct ds_ps_options *o, struct ds_ps_result *r) {
  struct ds_err err = {0};
  cr_assert_eq(ds_ps_run(f->topo, f->model, &f->c, o, r, &err), DS_OK, "%s", err.msg);
}

/* Every step's op times as ds_ps_run hands them over (ps.h on_iter), the
 * whole run's: op i of the run is step i / ns's op i % ns (r->step's). */
struct timeline {
  size_t ns, n_ops;    /* ops per step, of the run */
  int32_t steps;       /* handed over */
  int64_t *start, *end;
};

static inline ds_status collect(void *ctx, const struct ds_schedule *step, int32_t iter,
                                const int64_t *start_ns, const int64_t *end_ns,
                                struct ds_err *err) {
  struct timeline *t = ctx;
  (void)err;
  cr_assert_eq(iter, t->steps, "step %d handed over after %d steps", iter, t->steps);
  t->ns = step->n_ops;
  t->n_ops = (size_t)(iter + 1) * t->ns;
  t->start = realloc(t->start, t->n_ops * sizeof *t->start);
  t->end = realloc(t->end, t->n_ops * sizeof *t->end);
  cr_assert(t->start && t->end);
  memcpy(t->start + (size_t)iter * t->ns, start_ns, t->ns * sizeof *start_ns);
  memcpy(t->end + (size_t)iter * t->ns, end_ns, t->ns * sizeof *end_ns);
  t->steps++;
  return DS_OK;
}

static inline void timeline_release(struct timeline *t) {
  free(t->start);
  free(t->end);
  memset(t, 0, sizeof *t);
}

/* run, with every step's times in *t: each step handed over once, in
 * order, and the result's copies of the first and the last step and the
 * latest end before the last are the timeline's. */
static inline void run_timed(struct fixture *f, const struct ds_ps_options *o,
                             struct ds_ps_result *r, struct timeline *t) {
  struct ds_ps_options ot = *o;
  *t = (struct timeline){0};
  ot.on_iter = collect;
  ot.on_iter_ctx = t;
  run(f, &ot, r);
  size_t ns = r->step->n_ops, last = (size_t)(o->iters - 1) * ns;
  cr_assert_eq(t->steps, o->iters);
  cr_assert_eq(t->ns, ns);
  cr_assert_eq(memcmp(r->first_start_ns, t->start, ns * sizeof *t->start), 0);
  cr_assert_eq(memcmp(r->first_end_ns, t->end, ns * sizeof *t->end), 0);
  cr_assert_eq(memcmp(r->last_start_ns, t->start + last, ns * sizeof *t->start), 0);
  cr_assert_eq(memcmp(r->last_end_ns, t->end + last, ns * sizeof *t->end), 0);
  int64_t before = INT64_MIN, before_r0 = INT64_MIN;
  for (size_t i = 0; i < last; i++) {
    if (t->end[i] > before) before = t->end[i];
    if (r->step->ops[i % ns].rank == 0 && t->end[i] > before_r0) before_r0 = t->end[i];
  }
  cr_assert_eq(r->before_last_end_ns, before);
  cr_assert_eq(r->before_last_rank0_end_ns, before_r0);
}

/* analysis/metrics.c's metrics (the summary's, on rank 0) of step `it` of
 * t: its ops are the timeline's step it, the earlier steps before it. */
static inline struct ds_metrics metrics_of(const struct ds_ps_result *r,
                                           const struct timeline *t, int32_t it) {
  size_t ns = r->step->n_ops, first = (size_t)it * ns;
  struct ds_timed_op *ops = malloc((first + ns) * sizeof *ops);
  cr_assert(ops);
  for (size_t i = 0; i < first + ns; i++)
    ops[i] = (struct ds_timed_op){&r->step->ops[i % ns], t->start[i], t->end[i]};
  struct ds_metrics m;
  cr_assert_eq(ds_metrics_measure(ops + first, ns, ds_metrics_last_end(ops, first),
                                  ds_metrics_rank0_last_end(ops, first), &m), DS_OK);
  free(ops);
  return m;
}

#endif /* DS_TESTS_PS_FIXTURE_H */
