/*
 * Parameter-server training (see ps.h for the model).
 *
 * The schedule of one iteration is built first (every iteration runs the
 * same ops; only when they run changes), then an event loop on the engine
 * walks the iterations: each worker's compute ops one after another, its
 * pushes as flows on the network model, each server's updates through a
 * FIFO queue, the pulls as flows back. Op j of iteration i is op
 * i * n_step + j of the run (the events' and flows' tags). Its times live
 * with its worker (ps_window.c): every op of a worker's step ends before
 * the worker leaves the step (its pulls last; an async update is its
 * worker's), so each worker holds its own ops of the step it is in, and
 * async workers any number of steps apart hold one step's ops between
 * them. A window of iterations' blocks is kept only where a step's ops
 * are needed together after their workers have moved on: sync's updates
 * (at most two steps live: a worker cannot end step i + 1 before every
 * worker's push of it) and a consumer's rows (on_iter, handed on a step at
 * a time once every worker has ended it: async, the steps between its
 * slowest and its fastest worker). With jitter, a step's draws are drawn
 * when the first worker enters it, steps in order, and each worker keeps
 * its own until it gets there. All of it is counted (held_bytes) and
 * refused past opt->mem_limit as a step is laid out. Layout of one
 * iteration's ops:
 *
 *   per worker w: its program, per_w ops: the compute ops (fwd..., loss,
 *     bwd...), each layer's after its host launch (a host op, timed when
 *     the step starts, or, after a layer's host-device sync, when the
 *     sync's wait ends), with the pushes where they are issued (after backward: one
 *     per server at the end; per layer: after each layer's backward, one
 *     per server holding tensors of that layer)
 *   updates: K (sync: one per server) or W * K (async: per worker and server)
 *   per worker w: K pulls
 *
 * This file runs the event loop and the setup; where the ops' times are
 * kept is ps_window.c, the program and the ops are built in
 * ps_schedule.c, the sharding is ps_shard.c (ps_impl.h).
 */
#include "sim/train/ps.h"
#include "sim/train/ps_impl.h"

#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/net/engine.h"
#include "sim/net/events.h"
#include "sim/train/jitter.h"
#include "base/units.h"

static void layout_init(struct layout *y, int32_t W, int32_t K, int32_t per_w,
                        enum ds_ps_mode mode) {
  y->W = W;
  y->K = K;
  y->per_w = per_w;
  y->n_update = mode == DS_PS_SYNC ? K : W * K;
  y->n_step = (size_t)W * (size_t)y->per_w + (size_t)y->n_update + (size_t)W * (size_t)K;
}

static void fail(struct ps_sim *s, ds_status st) {
  if (s->failure == DS_OK) s->failure = st;
}

/* ---- routes ---- */

/* Every worker-server route, each direction's links (s->routes, s->links;
 * the links' array trimmed to what they use). */
static ds_status build_routes(struct ps_sim *s, struct ds_err *err) {
  const struct layout *y = &s->y;
  size_t n_pairs = (size_t)y->W * (size_t)y->K * 2, used = 0, cap = 64;
  int32_t scratch_cap = s->topo->n_links + 1;
  int32_t *scratch = malloc((size_t)scratch_cap * sizeof *scratch);
  s->routes = calloc(n_pairs, sizeof *s->routes);
  s->links = malloc(cap * sizeof *s->links);
  ds_status st = DS_ENOMEM;
  if (!scratch || !s->routes || !s->links) goto out;
  s->local_bw = s->c->mem_bw_bytes_per_s * s->c->params.mem_efficiency / 2;
  for (int32_t w = 0; w < y->W; w++)
    for (int32_t k = 0; k < y->K; k++)
      for (int dir = 0; dir < 2; dir++) {
        struct route *r = &s->routes[((size_t)w * (size_t)y->K + (size_t)k) * 2 + (size_t)dir];
        int32_t g = s->sh.gpu[k], n = 0;
        r->first = (int32_t)used;
        if (g == w) continue;
        st = ds_topo_route(s->topo, dir ? g : w, dir ? w : g, scratch, scratch_cap, &n, err);
        if (st != DS_OK) goto fail;
        if (used + (size_t)n > cap) {
          while (used + (size_t)n > cap) cap *= 2;
          int32_t *grown = realloc(s->links, cap * sizeof *grown);
          st = DS_ENOMEM;
          if (!grown) goto out;
          s->links = grown;
        }
        r->len = n;
        memcpy(s->links + used, scratch, (size_t)n * sizeof *scratch);
        used += (size_t)n;
      }
  /* the doubling's slack back (up to half the array) */
  int32_t *fit = realloc(s->links, (used ? used : 1) * sizeof *fit);
  if (fit) s->links = fit;
  st = DS_OK;
out:
  if (st == DS_ENOMEM) ds_err_set(err, st, "parameter server: out of memory");
fail:
  free(scratch);
  return st;
}

double ds__ps_route_lat_ns(const struct ps_sim *s, const struct route *r) {
  double lat_ns = 0;
  for (int32_t i = 0; i < r->len; i++) lat_ns += s->topo->links[s->links[r->first + i]].lat_ns;
  return lat_ns;
}

double ds__ps_route_bw(const struct ps_sim *s, const struct route *r) {
  if (r->len == 0) return s->local_bw;
  double bw = INFINITY;
  for (int32_t i = 0; i < r->len; i++) {
    double b = s->topo->links[s->links[r->first + i]].bw_bytes_per_s;
    if (b < bw) bw = b;
  }
  return bw;
}

/* ---- the event loop ---- */

static void start_compute(struct ps_sim *s, int32_t w);
static void try_update(struct ps_sim *s, int32_t k);

/* Op `op` of the run is op op % n_step of iteration op / n_step: its
 * properties are the one-step schedule's; its times are its worker's
 * (ps_window.c). */
static size_t block(const struct ps_sim *s, int32_t iter) {
  return (size_t)iter * s->y.n_step;
}

static int64_t *op_start(const struct ps_sim *s, size_t op) {
  return ds__ps_op_time(s, op, 0);
}

static int64_t *op_end(const struct ps_sim *s, size_t op) {
  return ds__ps_op_time(s, op, 1);
}

static const struct ds_op *op_of(const struct ps_sim *s, size_t op) {
  return &s->step->ops[op % s->y.n_step];
}

static void start_flow(struct ps_sim *s, size_t op, int32_t w, int32_t k, int pull) {
  const struct route *r = ds__ps_route_of(s, w, k, pull);
  *op_start(s, op) = ds_engine_now(s->eng);
  double bytes = op_of(s, op)->bytes;
  ds_status st = r->len
      ? ds_net_flow_start(s->net, s->links + r->first, NULL, r->len, bytes, 0,
                          ds__ps_route_lat_ns(s, r), op)
      : ds_net_flow_start_capped(s->net, NULL, NULL, 0, bytes, 0, 0, s->local_bw, op);
  if (st != DS_OK) fail(s, st);
}

/* Times worker w's host entries from program entry j on, up to the next
 * sync (j itself may be one), the first starting at `at`: the host threads
 * run them one after another, ahead of the GPU (nothing they launch holds
 * them back), so their times are known from there (ds__ps_build_program). */
static void time_host(struct ps_sim *s, int32_t w, int32_t j, int64_t at) {
  int64_t *start = s->own_start + (size_t)w * s->n_own, *end = s->own_end + (size_t)w * s->n_own;
  int64_t from = -1;
  for (int32_t i = j; i < s->y.per_w; i++) {
    const struct entry *e = &s->prog[i];
    if (!e->host) continue;
    if (from >= 0 && e->sync) break;
    if (from < 0) from = e->host_from_ns;
    start[i] = at + e->host_from_ns - from;
    end[i] = at + e->host_to_ns - from;
  }
}

/* The worker's step starts now (its pulls in): its host launches up to the
 * first sync are timed from here. */
static void begin_step(struct ps_sim *s, int32_t w) {
  time_host(s, w, 0, ds_engine_now(s->eng));
}

/* Entry j is a sync whose kernel, the entry before it, has just ended: the
 * host's wait ends now, or when its own work before the sync does, and it
 * goes on with the launches up to the next sync. */
static void end_sync(struct ps_sim *s, int32_t w, int32_t j) {
  const int64_t *end = s->own_end + (size_t)w * s->n_own;
  int64_t at = ds_engine_now(s->eng);
  for (int32_t i = j - 1; i >= 0; i--)
    if (s->prog[i].host) {
      if (end[i] > at) at = end[i];
      break;
    }
  time_host(s, w, j, at);
}

/* A worker's compute op starts when the op before it has ended and its
 * host launch, the program's entry before it when it has one, has. It
 * lasts its dur_us times its jitter draw (when there is jitter) times its
 * rank's factor (a straggler), rounded once. */
static void start_compute(struct ps_sim *s, int32_t w) {
  int32_t pos = s->pos[w];
  size_t j = ds__ps_ix_prog(&s->y, w, pos), op = block(s, s->iter[w]) + j;
  int64_t *start = s->own_start + (size_t)w * s->n_own, *end = s->own_end + (size_t)w * s->n_own;
  int64_t at = ds_engine_now(s->eng);
  if (pos > 0 && s->prog[pos - 1].host && end[pos - 1] > at) at = end[pos - 1];
  start[pos] = at;
  const struct ds_op *o = &s->step->ops[j];
  double scale = s->jitter ? ds__ps_draw(s, w, pos) : 1.0;
  scale *= ds_straggler_op_factor(s->opt->rank_factor, o->rank, o);
  double ns = o->dur_us * 1000.0 * scale;
  struct ds_event ev = {.kind = DS_EV_OP_DONE, .a = w, .b = (int64_t)op};
  ds_status st = ds_engine_schedule(s->eng, at + ds_units_round_ns(ns), &ev, NULL);
  if (st != DS_OK) fail(s, st);
}

static void start_pull(struct ps_sim *s, int32_t iter, int32_t w, int32_t k) {
  if (s->pulled) s->pulled[(size_t)w * (size_t)s->y.K + (size_t)k] = s->version[k];
  start_flow(s, block(s, iter) + ds__ps_ix_pull(&s->y, w, k), w, k, 1);
}

/* Update op u (a global index) has been applied on server k. */
static void update_done(struct ps_sim *s, size_t u, int32_t k) {
  size_t local = u % s->y.n_step;
  int32_t iter = (int32_t)(u / s->y.n_step);
  s->busy[k] = 0;
  s->version[k]++;
  if (s->opt->mode == DS_PS_SYNC) {
    for (int32_t w = 0; w < s->y.W; w++) start_pull(s, iter, w, k);
  } else {
    size_t base = (size_t)s->y.W * (size_t)s->y.per_w;
    int32_t w = (int32_t)((local - base) / (size_t)s->y.K);
    start_pull(s, iter, w, k);
  }
  try_update(s, k);
}

/* Room of a server's FIFO of updates, one more than it ever holds:
 * async, one update per worker; sync, one at a time (a worker enters step
 * i + 1 only after its pull of server k's update i, so no push of step
 * i + 1 reaches k before that update has run). */
static size_t queue_cap(const struct ps_sim *s) {
  return s->opt->mode == DS_PS_ASYNC ? (size_t)s->y.W + 1 : 2;
}

static void try_update(struct ps_sim *s, int32_t k) {
  if (s->busy[k] || s->q_len[k] == 0) return;
  size_t qcap = queue_cap(s);
  size_t u = s->queue[(size_t)k * qcap + (size_t)s->q_head[k]];
  s->q_head[k] = (int32_t)(((size_t)s->q_head[k] + 1) % qcap);
  s->q_len[k]--;
  s->busy[k] = 1;
  if (s->opt->mode == DS_PS_ASYNC) {
    size_t base = (size_t)s->y.W * (size_t)s->y.per_w;
    int32_t w = (int32_t)((u % s->y.n_step - base) / (size_t)s->y.K);
    int64_t stale = s->version[k] - s->pulled[(size_t)w * (size_t)s->y.K + (size_t)k];
    s->stale_sum += (double)stale;
    if (stale > s->stale_max) s->stale_max = stale;
  }
  s->n_updates++;
  int64_t now = ds_engine_now(s->eng);
  *op_start(s, u) = now;
  struct ds_event ev = {.kind = DS_EV_OP_DONE, .a = -1 - k, .b = (int64_t)u};
  ds_status st = ds_engine_schedule(
      s->eng, now + ds_units_round_ns(op_of(s, u)->dur_us * 1000.0), &ev, NULL);
  if (st != DS_OK) fail(s, st);
}

static void enqueue_update(struct ps_sim *s, int32_t k, size_t u) {
  size_t qcap = queue_cap(s);
  if ((size_t)s->q_len[k] + 1 >= qcap) {
    fail(s, DS_EINTERNAL);
    return;
  }
  s->queue[(size_t)k * qcap + ((size_t)s->q_head[k] + (size_t)s->q_len[k]) % qcap] = u;
  s->q_len[k]++;
  try_update(s, k);
}

/* Issues the pushes at the worker's position in its program, then starts
 * its next compute op, if any: pushes never hold compute back. */
static void advance(struct ps_sim *s, int32_t w);

/* Worker w enters iteration it (its pulls of the one before in): none of
 * its ops of it has run. */
static void enter(struct ps_sim *s, int32_t w, int32_t it) {
  size_t at = (size_t)w * s->n_own;
  s->iter[w] = it;
  s->pos[w] = 0;
  s->pulls_left[w] = s->y.K;
  for (size_t i = 0; i < s->n_own; i++) s->own_start[at + i] = s->own_end[at + i] = -1;
  begin_step(s, w);
  advance(s, w);
}

/* A worker's step ends once its program has run and every pull has
 * arrived (per layer, a server holding only late layers may answer before
 * the worker's backward is over); then its next step starts. */
static void maybe_finish(struct ps_sim *s, int32_t w) {
  if (s->pos[w] < s->y.per_w || s->pulls_left[w] > 0) return;
  int32_t iter = s->iter[w];
  if (iter == 0) s->first_end[w] = ds_engine_now(s->eng);
  if (iter == s->opt->iters - 1) s->last_end[w] = ds_engine_now(s->eng);
  ds_status st = ds__ps_worker_done(s, w, iter);
  if (st != DS_OK) fail(s, st);
  if (iter + 1 >= s->opt->iters || s->failure != DS_OK) return;
  enter(s, w, iter + 1);
}

static void advance(struct ps_sim *s, int32_t w) {
  size_t base = block(s, s->iter[w]);
  while (s->pos[w] < s->y.per_w &&
         (s->prog[s->pos[w]].kind == DS_OP_PUSH || s->prog[s->pos[w]].host)) {
    const struct entry *e = &s->prog[s->pos[w]];
    if (!e->host) start_flow(s, base + ds__ps_ix_prog(&s->y, w, s->pos[w]), w, e->k, 0);
    /* a sync follows its layer's kernel, which has just ended (a sync is
     * never first); a launch was timed by begin_step or end_sync */
    if (e->sync) end_sync(s, w, s->pos[w]);
    s->pos[w]++;
  }
  if (s->pos[w] < s->y.per_w) start_compute(s, w);
  else maybe_finish(s, w);
}

static void compute_done(struct ps_sim *s, int32_t w, size_t op) {
  *op_end(s, op) = ds_engine_now(s->eng);
  s->ops_ended++;
  s->pos[w]++;
  advance(s, w);
}

static void on_flow_done(void *owner, uint64_t tag) {
  struct ps_sim *s = owner;
  size_t op = (size_t)tag;
  const struct ds_op *o = op_of(s, op);
  int32_t iter = (int32_t)(op / s->y.n_step);
  int32_t k = o->bucket;
  *op_end(s, op) = ds_engine_now(s->eng);
  s->ops_ended++;
  if (o->kind == DS_OP_PUSH) {
    /* an update waits for every piece: the worker's (async) or everyone's */
    if (s->opt->mode == DS_PS_ASYNC) {
      int32_t *n = &s->arrived[(size_t)o->rank * (size_t)s->y.K + (size_t)k];
      if (++*n < s->pieces[k]) return;
      *n = 0;
      enqueue_update(s, k, block(s, iter) + ds__ps_ix_update(&s->y, o->rank, k));
    } else if (++s->arrived[k] == s->y.W * s->pieces[k]) {
      s->arrived[k] = 0;
      enqueue_update(s, k, block(s, iter) + ds__ps_ix_update(&s->y, 0, k));
    }
    return;
  }
  s->pulls_left[o->rank]--;
  maybe_finish(s, o->rank);
}

static void handle(void *ctx, struct ds_engine *eng, const struct ds_event *ev) {
  struct ps_sim *s = ctx;
  (void)eng;
  /* after a failure the pending events drain and the run returns */
  if (s->failure != DS_OK) return;
  if (ev->kind != DS_EV_OP_DONE) {
    ds_net_handle_event(s->net, ev);
    return;
  }
  size_t op = (size_t)ev->b;
  if (ev->a >= 0) {
    compute_done(s, ev->a, op);
  } else {
    *op_end(s, op) = ds_engine_now(s->eng);
    s->ops_ended++;
    update_done(s, op, -1 - ev->a);
  }
}

/* The ops whose end is an event (compute ops, pushes, updates, pulls; not
 * the host's launches, timed ahead) of one step. */
static uint64_t timed_per_step(const struct ps_sim *s) {
  uint64_t n = 0;
  for (int32_t j = 0; j < s->y.per_w; j++) n += !s->prog[j].host;
  return n * (uint64_t)s->y.W + (uint64_t)s->y.n_update + (uint64_t)s->y.W * (uint64_t)s->y.K;
}

/* The run's whole work as foreseen now (ds_engine_set_work_limit): the
 * work done (events, flows started, flow rates re-solved), and once a
 * step's worth of ops has ended, that times all the run's ops over those
 * ended: every step runs the same ops, so its work is about the earlier
 * ones'. A --iters far past the bound is refused after its first step, as
 * the executor's runs are (sim/train/exec.c). */
static uint64_t foreseen_work(void *ctx, uint64_t fired) {
  const struct ps_sim *s = ctx;
  double done = (double)ds_net_work_done(s->net, fired);
  double all = (double)s->timed_per_step * (double)s->opt->iters, ended = (double)s->ops_ended;
  if (ended >= (double)s->timed_per_step && ended < all) done *= all / ended;
  return done < 1.8e19 ? (uint64_t)done : UINT64_MAX;
}

/* ---- measurement ---- */

/* The per-worker step times, their throughput and the staleness; the
 * iteration metrics are analysis/metrics.c's, on the ops' times (ps.h). */
static ds_status measure(struct ps_sim *s, struct ds_ps_result *r) {
  const struct layout *y = &s->y;
  int32_t it = s->opt->iters;
  r->worker_step_ms = malloc((size_t)y->W * sizeof *r->worker_step_ms);
  if (!r->worker_step_ms) return DS_ENOMEM;
  double sum_step = 0, rate = 0;
  for (int32_t w = 0; w < y->W; w++) {
    double step_ms = (double)(s->last_end[w] - s->first_end[w]) / 1e6 / (it - 1);
    r->worker_step_ms[w] = step_ms;
    sum_step += step_ms;
    if (step_ms > 0) rate += (double)s->opt->batch / (step_ms / 1e3);
  }
  r->mean_step_ms = sum_step / y->W;
  r->samples_per_s = rate;
  r->n_updates = s->n_updates;
  r->staleness_mean = s->n_updates ? s->stale_sum / (double)s->n_updates : 0;
  r->staleness_max = s->stale_max;
  r->events = ds_engine_fired(s->eng);
  return DS_OK;
}

/* ---- setup ---- */

static ds_status check_options(const struct ds_topo *topo, const struct ds_ps_options *o,
                               struct ds_err *err) {
  if (o->world_size < 1 || o->world_size > topo->n_gpus)
    return ds_err_set(err, DS_EUSAGE,
                      "option --world-size: %d ranks but topology %s has %d GPUs",
                      o->world_size, topo->name, topo->n_gpus);
  if (o->iters < 2)
    return ds_err_set(err, DS_EUSAGE,
                      "option --iters: the parameter server needs at least 2 steps, got %d",
                      o->iters);
  if (o->batch < 1)
    return ds_err_set(err, DS_EUSAGE, "option --batch: expected >= 1, got %lld",
                      (long long)o->batch);
  for (int32_t w = 0; o->rank_factor && w < o->world_size; w++)
    if (!(o->rank_factor[w] > 0) || !isfinite(o->rank_factor[w]))
      return ds_err_set(err, DS_EUSAGE,
                        "option --straggler: rank %d: expected a factor > 0, got %g", w,
                        o->rank_factor[w]);
  return DS_OK;
}

/* Sync's servers count pushes per server and keep no staleness: only
 * async's per-pair state is workers x servers. */
static ds_status alloc_state(struct ps_sim *s) {
  size_t W = (size_t)s->y.W, K = (size_t)s->y.K;
  int async = s->opt->mode == DS_PS_ASYNC;
  s->iter = calloc(W, sizeof *s->iter);
  s->pos = calloc(W, sizeof *s->pos);
  s->pulls_left = malloc(W * sizeof *s->pulls_left);
  s->first_end = calloc(W, sizeof *s->first_end);
  s->last_end = calloc(W, sizeof *s->last_end);
  s->arrived = calloc(async ? W * K : K, sizeof *s->arrived);
  s->version = calloc(K, sizeof *s->version);
  s->pulled = async ? calloc(W * K, sizeof *s->pulled) : NULL;
  s->queue = malloc(K * queue_cap(s) * sizeof *s->queue);
  s->q_head = calloc(K, sizeof *s->q_head);
  s->q_len = calloc(K, sizeof *s->q_len);
  s->busy = calloc(K, 1);
  if (!s->iter || !s->pos || !s->pulls_left || !s->first_end || !s->last_end || !s->arrived ||
      !s->version || (async && !s->pulled) || !s->queue || !s->q_head || !s->q_len || !s->busy)
    return DS_ENOMEM;
  return ds__ps_window_init(s);
}

static void free_state(struct ps_sim *s) {
  ds_net_free(s->net);
  ds_engine_free(s->eng);
  ds_jitter_free(s->jitter);
  ds_ps_shards_release(&s->sh);
  ds__ps_window_free(s);
  free(s->links);
  free(s->routes);
  free(s->iter);
  free(s->pos);
  free(s->pulls_left);
  free(s->first_end);
  free(s->last_end);
  free(s->arrived);
  free(s->version);
  free(s->pulled);
  free(s->queue);
  free(s->q_head);
  free(s->q_len);
  free(s->busy);
  free(s->prog);
  free(s->pieces);
  free(s->last_push);
  free(s->update_extra_ns);
}

double ds__ps_mem_left(const struct ps_sim *s, char *why, size_t cap) {
  double limit = (double)s->opt->mem_limit, left = limit - s->step_bytes;
  if (left < 0) left = 0;
  if (!why || !cap) return left;
  if (s->step_bytes > 0)
    snprintf(why, cap, "the %.3g GiB left of %.3g GiB (half this machine's memory) after one "
             "step's ops, routes and flows (%.3g GiB)", left / DS_UNITS_GIB,
             limit / DS_UNITS_GIB, s->step_bytes / DS_UNITS_GIB);
  else
    snprintf(why, cap, "the %.3g GiB allowed (half this machine's memory)", limit / DS_UNITS_GIB);
  return left;
}

/* What the caller keeps of every op (ds_ps_options kept_bytes_per_op):
 * refused before the run when it cannot fit in what mem_limit leaves after
 * one step (ps_sim step_bytes), naming the iterations that would. */
static ds_status check_kept(const struct ps_sim *s, const struct ds_schedule *step,
                            struct ds_err *err) {
  const struct ds_ps_options *o = s->opt;
  double per_iter = o->kept_bytes_per_op * (double)step->n_ops, need = per_iter * o->iters;
  char why[192];
  double left = ds__ps_mem_left(s, why, sizeof why);
  if (!o->mem_limit || need <= left) return DS_OK;
  double fit = floor(left / per_iter);
  return ds_err_set(err, DS_EINPUT,
                    "option --iters: %s keeps every op of the run in memory: %d iterations of "
                    "%d ranks would hold about %.3g GiB, more than %s; give --iters %.0f or "
                    "fewer, or a smaller --world-size",
                    o->kept_by ? o->kept_by : "the caller", o->iters, o->world_size,
                    need / DS_UNITS_GIB, why, fit < 2 ? 2 : fit);
}

/* What one step of W workers and K servers takes, for the whole run,
 * whatever --iters: each op of the step's schedule (PS_OP_BYTES: the op,
 * its dependency, the schedule's index of it, the result's four times of
 * it, its worker's two), W x K pushes and pulls among them (async: and
 * updates), and each worker-server pair's two routes and the flows of its
 * push and pull, which a step's pulls start together (PS_PAIR_BYTES_*,
 * measured: docs/reliability.md). W x K, not W + K: every worker exchanges
 * its shard with every server, every step. Per server, the estimate is
 * linear: a worker's n_push pushes are p = n_push / K per server (one
 * after backward; per layer, one per layer holding its tensors). */
#define PS_OP_BYTES ((double)sizeof(struct ds_op) + 72.0)
#define PS_PAIR_BYTES_SYNC 330.0
#define PS_PAIR_BYTES_ASYNC 380.0 /* and each pair's staleness and queue's room */

struct step_estimate {
  double fixed;      /* the workers' compute ops and launches */
  double per_server; /* a server's pushes, update(s), pulls, routes, flows */
};

static struct step_estimate step_estimate(const struct ps_sim *s) {
  const struct layout *y = &s->y;
  double W = (double)y->W, n_push = 0;
  for (int32_t k = 0; k < y->K; k++) n_push += s->pieces[k];
  int sync = s->opt->mode == DS_PS_SYNC;
  double p = n_push / (double)y->K, updates = sync ? 1 : W;
  return (struct step_estimate){
      .fixed = W * ((double)y->per_w - n_push) * PS_OP_BYTES,
      .per_server = (W * p + updates + W) * PS_OP_BYTES +
                    W * (sync ? PS_PAIR_BYTES_SYNC : PS_PAIR_BYTES_ASYNC)};
}

/* One step's ops, routes and flows, refused before any is allocated when
 * they would pass step_mem_limit (else a run that runs out of memory on
 * the way, minutes in), naming the product and the --ps-servers that
 * would fit. */
static ds_status check_pairs(struct ps_sim *s, struct ds_err *err) {
  const struct layout *y = &s->y;
  struct step_estimate e = step_estimate(s);
  double need = e.fixed + (double)y->K * e.per_server, limit = (double)s->opt->step_mem_limit;
  if (!s->opt->step_mem_limit) return DS_OK;
  if (need <= limit) {
    s->step_bytes = need; /* the first claim on mem_limit (ps_sim) */
    return DS_OK;
  }
  double fit = floor((limit - e.fixed) / e.per_server);
  char way[96] = "give";
  if (fit >= 1) snprintf(way, sizeof way, "give --ps-servers %.0f or fewer, or", fit);
  return ds_err_set(err, DS_EINPUT,
                    "option --ps-servers: every worker pushes to and pulls from every server "
                    "each step: %d workers x %d servers = %.0f worker-server pairs, whose "
                    "ops, routes and flows would hold about %.3g GiB, more than the %.3g GiB "
                    "allowed (half this machine's memory); %s a smaller --world-size",
                    y->W, y->K, (double)y->W * (double)y->K, need / DS_UNITS_GIB,
                    limit / DS_UNITS_GIB, way);
}

/* The result's copies of iteration 0's and the last iteration's times. */
static ds_status alloc_result(struct ds_ps_result *r) {
  size_t n = r->step->n_ops + 1;
  r->first_start_ns = malloc(n * sizeof *r->first_start_ns);
  r->first_end_ns = malloc(n * sizeof *r->first_end_ns);
  r->last_start_ns = malloc(n * sizeof *r->last_start_ns);
  r->last_end_ns = malloc(n * sizeof *r->last_end_ns);
  r->before_last_end_ns = r->before_last_rank0_end_ns = INT64_MIN;
  if (!r->first_start_ns || !r->first_end_ns || !r->last_start_ns || !r->last_end_ns)
    return DS_ENOMEM;
  return DS_OK;
}

/* --strategy ps holds each worker's ops of its step, a window of
 * iterations where needed and the draws of workers behind (ps.c's head):
 * memory is not --iters' but the lag's, bounded by mem_limit; the bound on
 * a long run is the work bound (work_limit). */
ds_status ds_ps_run(struct ds_topo *topo, const struct ds_model *model,
                    const struct ds_compute *compute, const struct ds_ps_options *o,
                    struct ds_ps_result *r, struct ds_err *err) {
  struct ps_sim s = {.topo = topo, .model = model, .c = compute, .opt = o, .result = r,
                     .err = err, .hi = -1};
  ds_status st;
  memset(r, 0, sizeof *r);
  DS_CHECK(check_options(topo, o, err));
  DS_CHECK(ds_ps_shard(model, o->n_servers, o->world_size, &s.sh, err));
  DS_CHECK_GOTO(ds__ps_build_program(&s), st, oom);
  s.update_extra_ns = ds__ps_update_extra_ns(model, compute, &s.sh, o->mode, o->world_size);
  if (!s.update_extra_ns) {
    st = DS_ENOMEM;
    goto oom;
  }
  layout_init(&s.y, o->world_size, o->n_servers, s.n_prog, o->mode);
  DS_CHECK_GOTO(check_pairs(&s, err), st, out);
  DS_CHECK_GOTO(build_routes(&s, err), st, out);
  DS_CHECK_GOTO(ds_schedule_new(o->world_size, &r->step), st, oom);
  DS_CHECK_GOTO(ds__ps_build_iteration(&s, r->step), st, oom);
  DS_CHECK_GOTO(ds_schedule_validate(r->step, err), st, out);
  DS_CHECK_GOTO(check_kept(&s, r->step, err), st, out);
  s.step = r->step;
  DS_CHECK_GOTO(alloc_result(r), st, oom);
  DS_CHECK_GOTO(alloc_state(&s), st, oom);
  if (o->jitter) DS_CHECK_GOTO(ds_jitter_new(o->jitter_cv, o->seed, &s.jitter), st, oom);
  st = ds__ps_lay_out(&s, 0);
  if (st != DS_OK) {
    if (s.err_set) goto out;
    goto oom;
  }
  DS_CHECK_GOTO(ds_engine_new(0, handle, &s, &s.eng), st, oom);
  DS_CHECK_GOTO(ds_net_new(topo, s.eng, o->net_mode, on_flow_done, NULL, &s, &s.net), st, oom);
  for (int32_t w = 0; w < s.y.W; w++) enter(&s, w, 0);
  s.timed_per_step = timed_per_step(&s);
  ds_engine_set_work_limit(s.eng, o->work_limit, foreseen_work, &s);
  if (ds_engine_run(s.eng, INT64_MAX) != DS_OK || ds_engine_overflowed(s.eng)) {
    if (ds_engine_work_exceeded(s.eng))
      st = ds_err_set(err, DS_EINPUT,
                      "this run is too large to simulate in reasonable time: about %.2g steps "
                      "of work (events, flows and flow rates; %.1f%% of its ops run when it "
                      "stopped), past the bound of %.2g (a few minutes of one core)%s%s",
                      (double)ds_engine_work_exceeded(s.eng),
                      100.0 * (double)s.ops_ended / ((double)s.timed_per_step * o->iters),
                      (double)o->work_limit, o->work_advice ? ": " : "",
                      o->work_advice ? o->work_advice : "");
    else
      st = ds_err_set(err, DS_EINPUT, "%s", DS_ENGINE_OVERFLOW_MSG);
    goto out;
  }
  if (s.failure != DS_OK) {
    st = s.failure;
    if (!s.err_set)
      ds_err_set(err, s.failure, "parameter server simulation failed: %s",
                 ds_status_message(s.failure));
    goto out;
  }
  /* every worker ended every step, and where blocks are kept every
   * iteration retired: else some op never ran */
  if (s.workers_done != (uint64_t)s.y.W * (uint64_t)o->iters || (s.track && s.lo <= s.hi)) {
    st = ds__ps_unended(&s);
    goto out;
  }
  DS_CHECK_GOTO(measure(&s, r), st, oom);
  r->blocks = s.n_blocks;
  r->held_bytes = s.held_peak;
  st = DS_OK;
  goto out;
oom:
  ds_err_set(err, st, "parameter server: %s", ds_status_message(st));
out:
  free_state(&s);
  if (st != DS_OK) ds_ps_result_release(r);
  return st;
}

void ds_ps_result_release(struct ds_ps_result *r) {
  if (!r) return;
  ds_schedule_free(r->step);
  free(r->first_start_ns);
  free(r->first_end_ns);
  free(r->last_start_ns);
  free(r->last_end_ns);
  free(r->before_last_rank0);
  free(r->worker_step_ms);
  memset(r, 0, sizeof *r);
}
