/*
 * Executor of schedules on the discrete-event engine (see exec.h).
 *
 * It runs the shared form (traces/shared_schedule.h): ranks that run the
 * same blocks form a class, and per class it builds once, over the ops one
 * rank of it runs (its "local" ops, e = 0 .. n-1, the blocks' slices in
 * order): the template op of each, its dependencies and the reverse edges
 * (who waits for whom) as local indices, one in-order queue per stream and
 * each op's place in it, and its collective instance. An op has ended
 * exactly when its queue has moved past it (queues run in order and
 * advance when their head ends), so no per-op state is needed.
 *
 * Lockstep: the ranks of a class that start together with the same
 * duration factors do the same thing at the same times until the network
 * tells them apart, so they run as one cohort: one set of stream heads, one
 * event per op, the collective entered for every member in rank order. The
 * per-rank state is per cohort. Ranks interact only through collectives;
 * a cohort splits where its members' collective ends differ: a collective
 * that finishes every member together (ds_coll_finishes_together: the
 * aggregated ring, rails and tree) ends the cohort's op at its last member;
 * any other ends each member on its own, which leaves the cohort as a
 * cohort of one, carrying a copy of its state. A split-off cohort shares
 * the pending events of the ops it was running (a token lists the cohorts
 * an event ends, fired in order of their first rank) until one of them is
 * re-rated. --jitter (a draw per op copy) makes every rank its own cohort,
 * --straggler the ranks of each factor; so does ds_exec_options.no_lockstep,
 * the per-rank execution the tests compare against. Invariant: a (cohort,
 * stream) runs at most one op at a time, and its head op is started the
 * moment its last dependency ends. A full schedule runs through the same
 * code as one class per rank (ds_shared_from_schedule).
 *
 * This file runs a schedule (the per-run state, the event dispatch, the
 * results); exec_classes.c builds the classes' local ops, exec_cohort.c
 * the cohorts and their shared op-done events, exec_ops.c starts and
 * finishes ops (with the interference load), exec_colls.c builds the
 * collective instances; exec_impl.h holds the state they share.
 */
#include "sim/train/exec.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "sim/net/engine.h"
#include "sim/net/events.h"
#include "sim/train/exec_impl.h"

/* Whether rank's local op e has ended (0), runs (1) or has not started (2). */
static int op_state(const struct ds_exec *ex, int32_t rank, uint32_t e) {
  const struct rank_class *c = &ex->classes[ex->class_of[rank]];
  uint32_t q = queue_index(ex->cohort_of[rank], (enum ds_stream)c->stream[e]);
  if (ex->queue_head[q] > c->qpos[e]) return 0;
  return ex->queue_head[q] == c->qpos[e] && ex->queue_busy[q] ? 1 : 2;
}

static void handle(void *ctx, struct ds_engine *eng, const struct ds_event *ev) {
  struct ds_exec *ex = ctx;
  (void)eng;
  switch (ev->kind) {
  case DS_EV_OP_DONE:
    ds__exec_fire_token(ex, (int32_t)ev->a);
    break;
  case DS_EV_RANK_RELEASE:
    ex->released[ev->a] = 1;
    for (uint32_t s = 0; s < DS_STREAM_COUNT; s++)
      ds__exec_try_start_queue(ex, queue_index((int32_t)ev->a, (enum ds_stream)s));
    break;
  default:
    ds_net_handle_event(ex->net, ev);
    /* a collective that ends its members together has ended all of them */
    if (ex->n_partial) fail(ex, DS_EINTERNAL);
    break;
  }
}

ds_status ds_exec_new(struct ds_topo *topo, const struct ds_exec_options *opt,
                      struct ds_exec **out, struct ds_err *err) {
  struct ds_exec *ex = calloc(1, sizeof *ex);
  if (!ex) return ds_err_set(err, DS_ENOMEM, "executor: out of memory");
  ex->topo = topo;
  ex->opt = *opt;
  ex->free_token = -1;
  if (ex->opt.ring_chunks < 1) ex->opt.ring_chunks = 1;
  ds_status st = ds_engine_new(1024, handle, ex, &ex->eng);
  if (st == DS_OK)
    st = ds_net_new(topo, ex->eng, opt->net_mode, ds__exec_on_flow_done,
                    ds__exec_on_flow_sent, ex, &ex->net);
  if (st != DS_OK) {
    ds_exec_free(ex);
    return ds_err_set(err, st, "executor: out of memory");
  }
  *out = ex;
  return DS_OK;
}

static void free_class(struct rank_class *c) {
  free(c->blocks);
  free(c->block_at);
  free(c->tmpl);
  free(c->block);
  free(c->stream);
  free(c->dep_first);
  free(c->deps);
  free(c->waiter_first);
  free(c->waiters);
  free(c->qpos);
  free(c->queue);
  free(c->inst);
}

static void free_run(struct ds_exec *ex) {
  for (int32_t i = 0; i < ex->n_colls; i++) {
    ds_coll_free(ex->colls[i].coll);
    free(ex->colls[i].rank_of);
    free(ex->colls[i].op_of);
  }
  free(ex->colls);
  ex->colls = NULL;
  ex->n_colls = 0;
  for (int32_t i = 0; i < ex->n_classes; i++) free_class(&ex->classes[i]);
  free(ex->classes);
  ex->classes = NULL;
  ex->n_classes = 0;
  for (int32_t k = 0; k < ex->n_cohorts; k++)
    if (ex->cohorts[k].mem != &ex->cohorts[k].one) free(ex->cohorts[k].mem);
  free(ex->cohorts);
  ex->cohorts = NULL;
  ex->n_cohorts = 0;
  free(ex->class_of);
  free(ex->cohort_of);
  free(ex->scratch);
  free(ex->queue_head);
  free(ex->queue_busy);
  free(ex->head_start);
  free(ex->tok);
  free(ex->tok_next);
  free(ex->coll_done);
  free(ex->released);
  free(ex->comm_busy);
  free(ex->held);
  free(ex->running);
  free(ex->last_end);
  free(ex->tokens);
  ex->class_of = ex->cohort_of = ex->scratch = NULL;
  ex->queue_head = NULL;
  ex->queue_busy = ex->released = NULL;
  ex->head_start = ex->last_end = NULL;
  ex->tok = ex->tok_next = ex->coll_done = NULL;
  ex->comm_busy = NULL;
  ex->held = NULL;
  ex->running = NULL;
  ex->tokens = NULL;
  ex->n_tokens = ex->cap_tokens = 0;
  ex->free_token = -1;
  ex->n_partial = 0;
}

void ds_exec_free(struct ds_exec *ex) {
  if (!ex) return;
  free_run(ex);
  for (int32_t i = 0; i < ex->n_rings; i++) ds_ring_release(&ex->rings[i].ring);
  free(ex->rings);
  ds_net_free(ex->net);
  ds_engine_free(ex->eng);
  free(ex);
}

uint64_t ds_exec_events(const struct ds_exec *ex) { return ds_engine_fired(ex->eng); }

struct ds_exec_lockstep ds_exec_lockstep(const struct ds_exec *ex) {
  return (struct ds_exec_lockstep){ex->last_initial, ex->last_final};
}

static ds_status build_run(struct ds_exec *ex, const int64_t *release_ns, struct ds_err *err) {
  size_t w = (size_t)ex->sched->world_size;
  size_t nq = w * DS_STREAM_COUNT;
  ex->queue_head = calloc(nq + 1, sizeof *ex->queue_head);
  ex->queue_busy = calloc(nq + 1, 1);
  ex->head_start = calloc(nq + 1, sizeof *ex->head_start);
  ex->tok = malloc((nq + 1) * sizeof *ex->tok);
  ex->tok_next = malloc((nq + 1) * sizeof *ex->tok_next);
  ex->coll_done = calloc(nq + 1, sizeof *ex->coll_done);
  ex->released = calloc(w + 1, 1);
  ex->comm_busy = calloc(w + 1, sizeof *ex->comm_busy);
  ex->held = calloc(w + 1, sizeof *ex->held);
  ex->running = malloc((w + 1) * sizeof *ex->running);
  ex->last_end = malloc((w + 1) * sizeof *ex->last_end);
  ex->cohorts = calloc(w + 1, sizeof *ex->cohorts);
  ex->cohort_of = malloc((w + 1) * sizeof *ex->cohort_of);
  ex->scratch = malloc((w + 1) * sizeof *ex->scratch);
  if (!ex->queue_head || !ex->queue_busy || !ex->head_start || !ex->tok || !ex->tok_next ||
      !ex->coll_done || !ex->released || !ex->comm_busy || !ex->held || !ex->running ||
      !ex->last_end || !ex->cohorts || !ex->cohort_of || !ex->scratch)
    return ds_err_set(err, DS_ENOMEM, "executor: out of memory");
  for (size_t i = 0; i <= nq; i++) ex->tok[i] = ex->tok_next[i] = -1;
  for (size_t r = 0; r <= w; r++) ex->running[r].op = UINT32_MAX;
  DS_CHECK(ds__exec_build_classes(ex, err));
  return ds__exec_build_cohorts(ex, release_ns, err);
}

struct unfinished {
  int32_t rank;
  uint32_t op;
};

static int find_unfinished(struct ds_exec *ex, int32_t r, uint32_t e, void *ctx) {
  if (op_state(ex, r, e) == 0) return 0;
  *(struct unfinished *)ctx = (struct unfinished){r, e};
  return 1;
}

/* The run's whole work as foreseen now (ds_engine_set_work_limit): what was
 * done (events, flows started, flow rates re-solved), and once the run is
 * one iteration in (ops done x iterations >= all ops; half of them for one
 * iteration), that times all ops over the ops done: every iteration runs
 * the same ops, so its work is about the last one's. */
static uint64_t foreseen_work(void *ctx, uint64_t fired) {
  const struct ds_exec *ex = ctx;
  double done = (double)ds_net_work_done(ex->net, fired);
  double n_ops = (double)ex->sched->n_ops, ops = (double)ex->ops_done;
  int32_t iters = ex->opt.iters > 1 ? ex->opt.iters : 2;
  if (ops > 0 && ops * iters >= n_ops && ops < n_ops) done *= n_ops / ops;
  return done < 1.8e19 ? (uint64_t)done : UINT64_MAX;
}

ds_status ds_exec_run_shared(struct ds_exec *ex, struct ds_shared_schedule *sched,
                             int64_t *rank_time_ns, ds_exec_op_fn on_op, void *ctx,
                             struct ds_err *err) {
  struct coll_owner *owners = NULL;
  ds_status st;
  if (sched->world_size > ex->topo->n_gpus)
    return ds_err_set(err, DS_EUSAGE, "schedule has %d ranks but topology %s has %d GPUs",
                      sched->world_size, ex->topo->name, ex->topo->n_gpus);
  ex->sched = sched;
  ex->on_op = on_op;
  ex->on_op_ctx = ctx;
  ex->rank_time = rank_time_ns;
  ex->ops_done = 0;
  ex->failure = DS_OK;
  ex->err = err;
  DS_CHECK_GOTO(build_run(ex, rank_time_ns, err), st, out);
  DS_CHECK_GOTO(ds__exec_build_colls(ex, &owners, err), st, out);
  for (int32_t k = 0; k < ex->n_cohorts; k++) {
    struct ds_event ev = {.kind = DS_EV_RANK_RELEASE, .a = k};
    int64_t r0 = rank_time_ns[ex->cohorts[k].mem[0]];
    int64_t t = r0 > ds_engine_now(ex->eng) ? r0 : ds_engine_now(ex->eng);
    DS_CHECK_GOTO(ds_engine_schedule(ex->eng, t, &ev, NULL), st, out);
  }
  ds_engine_set_work_limit(ex->eng, ex->opt.work_limit, foreseen_work, ex);
  ds_status run_st = ds_engine_run(ex->eng, INT64_MAX);
  for (int32_t k = 0; k < ex->n_cohorts; k++)
    for (int32_t j = 0; j < ex->cohorts[k].n; j++)
      rank_time_ns[ex->cohorts[k].mem[j]] = ex->last_end[k];
  ex->last_initial = ex->initial_cohorts;
  ex->last_final = ex->n_cohorts;
  if (ds_engine_work_exceeded(ex->eng)) {
    st = ds_err_set(err, DS_EINPUT,
                    "this run is too large to simulate in reasonable time: about %.2g steps "
                    "of work (events, flows and flow rates; %.1f%% of its ops run when it "
                    "stopped), past the bound of %.2g (a few minutes of one core)%s%s",
                    (double)ds_engine_work_exceeded(ex->eng),
                    100.0 * (double)ex->ops_done / (double)(sched->n_ops ? sched->n_ops : 1),
                    (double)ex->opt.work_limit, ex->opt.work_advice ? ": " : "",
                    ex->opt.work_advice ? ex->opt.work_advice : "");
    goto out;
  }
  if (run_st != DS_OK || ds_engine_overflowed(ex->eng)) {
    st = ds_err_set(err, DS_EINPUT, "%s", DS_ENGINE_OVERFLOW_MSG);
    goto out;
  }
  if (ex->failure != DS_OK) {
    st = ds_err_set(err, ex->failure, "simulation failed: %s",
                    ds_status_message(ex->failure));
    goto out;
  }
  if (ex->ops_done != sched->n_ops) {
    struct unfinished u = {-1, 0};
    if (ds__exec_for_each_op(ex, find_unfinished, &u)) {
      const struct rank_class *c = class_of(ex, u.rank);
      const struct ds_op *o = op_at(ex, c, u.op);
      st = ds_err_set(err, DS_EINPUT,
                      "schedule deadlocks: op %" PRId64 " (rank %d, %s %s) never %s",
                      op_id(ex, c, u.rank, u.op), u.rank, ds_op_kind_name(o->kind), o->name,
                      op_state(ex, u.rank, u.op) == 2 ? "starts" : "ends");
    } else {
      st = ds_err_set(err, DS_EINTERNAL, "schedule deadlocks");
    }
    goto out;
  }
  st = DS_OK;
out:
  free_run(ex);
  free(owners);
  return st;
}

/* ds_exec_run's record of every op's times, by full-schedule index. */
struct full_times {
  const struct ds_shared_schedule *s;
  int64_t *start, *end;
};

static void record_full(void *ctx, size_t block, int32_t rank, uint32_t t, int64_t start_ns,
                        int64_t end_ns) {
  struct full_times *ft = ctx;
  size_t i = ds_shared_index(ft->s, block, rank, t);
  ft->start[i] = start_ns;
  ft->end[i] = end_ns;
}

ds_status ds_exec_run(struct ds_exec *ex, struct ds_schedule *sched,
                      int64_t *rank_time_ns, int64_t *op_start_ns,
                      int64_t *op_end_ns, struct ds_err *err) {
  struct ds_shared_schedule *s;
  for (size_t i = 0; i < sched->n_ops; i++) op_start_ns[i] = op_end_ns[i] = -1;
  if (ds_shared_from_schedule(sched, NULL, 0, &s) != DS_OK)
    return ds_err_set(err, DS_ENOMEM, "executor: out of memory");
  struct full_times ft = {s, op_start_ns, op_end_ns};
  ds_status st = ds_exec_run_shared(ex, s, rank_time_ns, record_full, &ft, err);
  ds_shared_free(s);
  return st;
}
