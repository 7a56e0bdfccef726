/*
 * Parameter-server training (see ps.h for the model).
 *
 * The schedule of every iteration is built first (ops never change; only
 * when they run does), then an event loop on the engine walks it: each
 * worker's compute ops one after another, its pushes as flows on the
 * network model, each server's updates through a FIFO queue, the pulls as
 * flows back. Layout of one iteration's ops (the same in every iteration,
 * offset by i * n_step):
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
 * This file runs the event loop and the setup; the program and the ops are
 * built in ps_schedule.c, the sharding is ps_shard.c (ps_impl.h).
 */
#include "sim/train/ps.h"
#include "sim/train/ps_impl.h"

#include <math.h>
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
        r->bw = s->local_bw;
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
        r->bw = INFINITY;
        for (int32_t i = 0; i < n; i++) {
          const struct ds_link *lk = &s->topo->links[scratch[i]];
          s->links[used + (size_t)i] = scratch[i];
          r->lat_ns += lk->lat_ns;
          if (lk->bw_bytes_per_s < r->bw) r->bw = lk->bw_bytes_per_s;
        }
        used += (size_t)n;
      }
  st = DS_OK;
out:
  if (st == DS_ENOMEM) ds_err_set(err, st, "parameter server: out of memory");
fail:
  free(scratch);
  return st;
}

/* ---- the event loop ---- */

static void start_compute(struct ps_sim *s, int32_t w);
static void try_update(struct ps_sim *s, int32_t k);

static size_t block(const struct ps_sim *s, int32_t iter) {
  return (size_t)iter * s->y.n_step;
}

static void start_flow(struct ps_sim *s, size_t op, int32_t w, int32_t k, int pull) {
  const struct route *r = ds__ps_route_of(s, w, k, pull);
  s->start[op] = ds_engine_now(s->eng);
  double bytes = s->all->ops[op].bytes;
  ds_status st = r->len
      ? ds_net_flow_start(s->net, s->links + r->first, NULL, r->len, bytes, 0, r->lat_ns, op)
      : ds_net_flow_start_capped(s->net, NULL, NULL, 0, bytes, 0, 0, s->local_bw, op);
  if (st != DS_OK) fail(s, st);
}

/* Times worker w's host entries from program entry j on, up to the next
 * sync (j itself may be one), the first starting at `at`: the host threads
 * run them one after another, ahead of the GPU (nothing they launch holds
 * them back), so their times are known from there (ds__ps_build_program). */
static void time_host(struct ps_sim *s, int32_t w, int32_t j, int64_t at) {
  size_t base = block(s, s->iter[w]);
  int64_t from = -1;
  for (int32_t i = j; i < s->y.per_w; i++) {
    const struct entry *e = &s->prog[i];
    if (!e->host) continue;
    if (from >= 0 && e->sync) break;
    if (from < 0) from = e->host_from_ns;
    size_t op = base + ds__ps_ix_prog(&s->y, w, i);
    s->start[op] = at + e->host_from_ns - from;
    s->end[op] = at + e->host_to_ns - from;
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
  size_t base = block(s, s->iter[w]);
  int64_t at = ds_engine_now(s->eng);
  for (int32_t i = j - 1; i >= 0; i--)
    if (s->prog[i].host) {
      int64_t e = s->end[base + ds__ps_ix_prog(&s->y, w, i)];
      if (e > at) at = e;
      break;
    }
  time_host(s, w, j, at);
}

/* A worker's compute op starts when the op before it has ended and its
 * host launch, the program's entry before it when it has one, has. */
static void start_compute(struct ps_sim *s, int32_t w) {
  size_t op = block(s, s->iter[w]) + ds__ps_ix_prog(&s->y, w, s->pos[w]);
  int64_t start = ds_engine_now(s->eng);
  if (s->pos[w] > 0 && s->prog[s->pos[w] - 1].host && s->end[op - 1] > start)
    start = s->end[op - 1];
  s->start[op] = start;
  double ns = s->all->ops[op].dur_us * 1000.0 * s->scale[op];
  struct ds_event ev = {.kind = DS_EV_OP_DONE, .a = w, .b = (int64_t)op};
  ds_status st = ds_engine_schedule(s->eng, start + ds_units_round_ns(ns), &ev, NULL);
  if (st != DS_OK) fail(s, st);
}

static void start_pull(struct ps_sim *s, int32_t iter, int32_t w, int32_t k) {
  s->pulled[(size_t)w * (size_t)s->y.K + (size_t)k] = s->version[k];
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

static void try_update(struct ps_sim *s, int32_t k) {
  if (s->busy[k] || s->q_len[k] == 0) return;
  size_t qcap = (size_t)s->y.W + 1;
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
  s->start[u] = now;
  struct ds_event ev = {.kind = DS_EV_OP_DONE, .a = -1 - k, .b = (int64_t)u};
  ds_status st = ds_engine_schedule(
      s->eng, now + ds_units_round_ns(s->all->ops[u].dur_us * 1000.0), &ev, NULL);
  if (st != DS_OK) fail(s, st);
}

static void enqueue_update(struct ps_sim *s, int32_t k, size_t u) {
  size_t qcap = (size_t)s->y.W + 1;
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

/* A worker's step ends once its program has run and every pull has
 * arrived (per layer, a server holding only late layers may answer before
 * the worker's backward is over); then its next step starts. */
static void maybe_finish(struct ps_sim *s, int32_t w) {
  if (s->pos[w] < s->y.per_w || s->pulls_left[w] > 0) return;
  int32_t iter = s->iter[w];
  s->iter_end[(size_t)w * (size_t)s->opt->iters + (size_t)iter] = ds_engine_now(s->eng);
  if (iter + 1 >= s->opt->iters) return;
  s->iter[w] = iter + 1;
  s->pos[w] = 0;
  s->pulls_left[w] = s->y.K;
  begin_step(s, w);
  advance(s, w);
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
  s->end[op] = ds_engine_now(s->eng);
  s->pos[w]++;
  advance(s, w);
}

static void on_flow_done(void *owner, uint64_t tag) {
  struct ps_sim *s = owner;
  size_t op = (size_t)tag;
  const struct ds_op *o = &s->all->ops[op];
  int32_t iter = (int32_t)(op / s->y.n_step);
  int32_t k = o->bucket;
  s->end[op] = ds_engine_now(s->eng);
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
  if (ev->kind != DS_EV_OP_DONE) {
    ds_net_handle_event(s->net, ev);
    return;
  }
  size_t op = (size_t)ev->b;
  if (ev->a >= 0) {
    compute_done(s, ev->a, op);
  } else {
    s->end[op] = ds_engine_now(s->eng);
    update_done(s, op, -1 - ev->a);
  }
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
    const int64_t *e = &s->iter_end[(size_t)w * (size_t)it];
    double step_ms = (double)(e[it - 1] - e[0]) / 1e6 / (it - 1);
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

static ds_status alloc_state(struct ps_sim *s) {
  size_t W = (size_t)s->y.W, K = (size_t)s->y.K, n = s->all->n_ops;
  s->scale = malloc(n * sizeof *s->scale);
  s->iter = calloc(W, sizeof *s->iter);
  s->pos = calloc(W, sizeof *s->pos);
  s->pulls_left = malloc(W * sizeof *s->pulls_left);
  s->iter_end = calloc(W * (size_t)s->opt->iters, sizeof *s->iter_end);
  s->arrived = calloc(W * K, sizeof *s->arrived);
  s->version = calloc(K, sizeof *s->version);
  s->pulled = calloc(W * K, sizeof *s->pulled);
  s->queue = malloc(K * (W + 1) * sizeof *s->queue);
  s->q_head = calloc(K, sizeof *s->q_head);
  s->q_len = calloc(K, sizeof *s->q_len);
  s->busy = calloc(K, 1);
  if (!s->scale || !s->iter || !s->pos || !s->pulls_left || !s->iter_end || !s->arrived ||
      !s->version || !s->pulled || !s->queue || !s->q_head || !s->q_len || !s->busy)
    return DS_ENOMEM;
  return DS_OK;
}

static void free_state(struct ps_sim *s) {
  ds_net_free(s->net);
  ds_engine_free(s->eng);
  ds_ps_shards_release(&s->sh);
  free(s->scale);
  free(s->links);
  free(s->routes);
  free(s->iter);
  free(s->pos);
  free(s->pulls_left);
  free(s->iter_end);
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

/* The bytes the run's ops take per iteration, from one iteration's
 * schedule: each op, its two times and its jitter scale (ds_ps_result,
 * ps_sim), its id index pair (ds_schedule's sorted_ids) and its
 * dependency ids; the arrays grow by doubling, so up to twice that is
 * held while they grow. 512 ranks of ResNet-50 on cluster-512x8-h100
 * measured 1.15 and 4.42 GB of RSS at 20 and 80 iterations, about
 * 107 KB per rank and iteration. */
static double ps_schedule_bytes(const struct ds_schedule *step) {
  double per_op = (double)sizeof(struct ds_op) + 2.0 * sizeof(int64_t) + sizeof(double) +
                  2.0 * sizeof(int64_t);
  return (double)step->n_ops * per_op + (double)step->n_deps * sizeof(int64_t);
}

/* --strategy ps builds every iteration's ops before it runs (the order in
 * which servers apply pushes is decided as it runs, over ops laid out in
 * advance): a run whose ops cannot fit in memory is refused before they
 * are built, naming how many iterations would fit. */
static ds_status check_memory(const struct ds_schedule *step, const struct ds_ps_options *o,
                              struct ds_err *err) {
  double per_iter = ps_schedule_bytes(step), need = per_iter * o->iters;
  if (!o->mem_limit || need <= (double)o->mem_limit) return DS_OK;
  double fit = floor((double)o->mem_limit / per_iter);
  return ds_err_set(err, DS_EINPUT,
                    "option --iters: --strategy ps lays out every iteration's ops before it "
                    "runs: %d iterations of %d ranks would hold about %.3g GiB, more than "
                    "the %.3g GiB allowed (half this machine's memory); give "
                    "--iters %.0f or fewer, or a smaller --world-size",
                    o->iters, o->world_size, need / DS_UNITS_GIB,
                    (double)o->mem_limit / DS_UNITS_GIB, fit < 2 ? 2 : fit);
}

ds_status ds_ps_run(struct ds_topo *topo, const struct ds_model *model,
                    const struct ds_compute *compute, const struct ds_ps_options *o,
                    struct ds_ps_result *r, struct ds_err *err) {
  struct ps_sim s = {.topo = topo, .model = model, .c = compute, .opt = o};
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
  DS_CHECK_GOTO(build_routes(&s, err), st, out);
  DS_CHECK_GOTO(ds_schedule_new(o->world_size, &r->step), st, oom);
  DS_CHECK_GOTO(ds_schedule_new(o->world_size, &r->all), st, oom);
  DS_CHECK_GOTO(ds__ps_build_iteration(&s, 0, -1, r->step), st, oom);
  DS_CHECK_GOTO(check_memory(r->step, o, err), st, out);
  for (int32_t i = 0; i < o->iters; i++)
    DS_CHECK_GOTO(ds__ps_build_iteration(&s, (int64_t)i * (int64_t)s.y.n_step,
                                         i ? (int64_t)(i - 1) * (int64_t)s.y.n_step : -1, r->all),
                  st, oom);
  DS_CHECK_GOTO(ds_schedule_validate(r->all, err), st, out);
  s.all = r->all;
  r->op_start_ns = malloc(r->all->n_ops * sizeof *r->op_start_ns);
  r->op_end_ns = malloc(r->all->n_ops * sizeof *r->op_end_ns);
  if (!r->op_start_ns || !r->op_end_ns) {
    st = DS_ENOMEM;
    goto oom;
  }
  s.start = r->op_start_ns;
  s.end = r->op_end_ns;
  for (size_t i = 0; i < r->all->n_ops; i++) s.start[i] = s.end[i] = -1;
  DS_CHECK_GOTO(alloc_state(&s), st, oom);
  if (o->jitter) DS_CHECK_GOTO(ds_jitter_fill(r->all, o->jitter_cv, o->seed, s.scale), st, oom);
  else for (size_t i = 0; i < r->all->n_ops; i++) s.scale[i] = 1.0;
  for (size_t i = 0; o->rank_factor && i < r->all->n_ops; i++)
    if (r->all->ops[i].stream == DS_STREAM_COMPUTE)
      s.scale[i] *= o->rank_factor[r->all->ops[i].rank];
  DS_CHECK_GOTO(ds_engine_new(0, handle, &s, &s.eng), st, oom);
  DS_CHECK_GOTO(ds_net_new(topo, s.eng, o->net_mode, on_flow_done, NULL, &s, &s.net), st, oom);
  for (int32_t w = 0; w < s.y.W; w++) {
    s.pulls_left[w] = s.y.K;
    begin_step(&s, w);
    advance(&s, w);
  }
  ds_engine_set_work_limit(s.eng, o->work_limit, ds_net_work_done, s.net);
  if (ds_engine_run(s.eng, INT64_MAX) != DS_OK || ds_engine_overflowed(s.eng)) {
    if (ds_engine_work_exceeded(s.eng))
      st = ds_err_set(err, DS_EINPUT,
                      "this run is too large to simulate in reasonable time: past %.2g steps "
                      "of work (events, flows and flow rates), the bound (a few minutes of "
                      "one core)%s%s",
                      (double)o->work_limit, o->work_advice ? ": " : "",
                      o->work_advice ? o->work_advice : "");
    else
      st = ds_err_set(err, DS_EINPUT, "%s", DS_ENGINE_OVERFLOW_MSG);
    goto out;
  }
  if (s.failure != DS_OK) {
    st = ds_err_set(err, s.failure, "parameter server simulation failed: %s",
                    ds_status_message(s.failure));
    goto out;
  }
  for (size_t i = 0; i < r->all->n_ops; i++)
    if (s.end[i] < 0) {
      st = ds_err_set(err, DS_EINTERNAL, "parameter server: op %zu (%s %s) never ran", i,
                      ds_op_kind_name(r->all->ops[i].kind), r->all->ops[i].name);
      goto out;
    }
  DS_CHECK_GOTO(measure(&s, r), st, oom);
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
  ds_schedule_free(r->all);
  free(r->op_start_ns);
  free(r->op_end_ns);
  free(r->worker_step_ms);
  memset(r, 0, sizeof *r);
}
