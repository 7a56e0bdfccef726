/*
 * Parameter-server training (see ps.h for the model).
 *
 * The schedule of one iteration is built first (every iteration runs the
 * same ops; only when they run changes), then an event loop on the engine
 * walks the iterations: each worker's compute ops one after another, its
 * pushes as flows on the network model, each server's updates through a
 * FIFO queue, the pulls as flows back. Op j of iteration i is op
 * i * n_step + j of the run (the events' and flows' tags); its times and
 * its scale live in iteration i's block while some worker is in iteration
 * i or an op of it may still run: a window of iterations, laid out when
 * the first worker enters one (its jitter drawn then, iterations in order)
 * and retired, its times handed to the caller, once every worker has
 * finished it. Sync keeps at most two iterations live (a worker cannot
 * end step i + 1 before every worker's push of it); async as many as lie
 * between its slowest and its fastest worker, refused past opt->mem_limit
 * (refuse_window). Layout of one iteration's
 * ops:
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

#include <assert.h>
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

/* Op `op` of the run is op op % n_step of iteration op / n_step: its
 * properties are the one-step schedule's, its times and scale its
 * iteration's block's, which is live (lo <= iteration <= hi) while the op
 * can be touched. */
static size_t block(const struct ps_sim *s, int32_t iter) {
  return (size_t)iter * s->y.n_step;
}

static struct ps_block *block_at(const struct ps_sim *s, size_t op) {
  int32_t it = (int32_t)(op / s->y.n_step);
  assert(it >= s->lo && it <= s->hi);
  return s->ring[(size_t)it % s->ring_cap];
}

static int64_t *op_start(const struct ps_sim *s, size_t op) {
  return &block_at(s, op)->start[op % s->y.n_step];
}

static int64_t *op_end(const struct ps_sim *s, size_t op) {
  return &block_at(s, op)->end[op % s->y.n_step];
}

static const struct ds_op *op_of(const struct ps_sim *s, size_t op) {
  return &s->step->ops[op % s->y.n_step];
}

static void start_flow(struct ps_sim *s, size_t op, int32_t w, int32_t k, int pull) {
  const struct route *r = ds__ps_route_of(s, w, k, pull);
  *op_start(s, op) = ds_engine_now(s->eng);
  double bytes = op_of(s, op)->bytes;
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
    *op_start(s, op) = at + e->host_from_ns - from;
    *op_end(s, op) = at + e->host_to_ns - from;
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
      int64_t e = *op_end(s, base + ds__ps_ix_prog(&s->y, w, i));
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
  struct ps_block *b = block_at(s, op);
  size_t j = op % s->y.n_step;
  if (s->pos[w] > 0 && s->prog[s->pos[w] - 1].host && b->end[j - 1] > start)
    start = b->end[j - 1];
  b->start[j] = start;
  double ns = s->step->ops[j].dur_us * 1000.0 * b->scale[j];
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
  *op_start(s, u) = now;
  struct ds_event ev = {.kind = DS_EV_OP_DONE, .a = -1 - k, .b = (int64_t)u};
  ds_status st = ds_engine_schedule(
      s->eng, now + ds_units_round_ns(op_of(s, u)->dur_us * 1000.0), &ev, NULL);
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

/* ---- the window of iterations ---- */

/* Bytes of one iteration's block (start, end, scale per op). */
static double block_bytes(const struct ps_sim *s) {
  return (double)sizeof(struct ps_block) +
         (double)s->y.n_step * (2 * sizeof(int64_t) + sizeof(double));
}

/* A new block would take the window past opt->mem_limit (bounded on its
 * own, as what the caller keeps is, check_kept): async workers
 * drifting apart (a straggler, jitter) hold every step between them, more
 * the longer the run. Refused, naming the --iters that would fit: the gap
 * grows in proportion to the steps run (the workers' rates stay), so the
 * fastest, entering step iter with the slowest at lo, would be about
 * (iters - 1) * (iter - lo) / iter steps ahead entering the last, holding
 * one block more than that. */
static ds_status refuse_window(struct ps_sim *s, int32_t iter) {
  const struct ds_ps_options *o = s->opt;
  double per = block_bytes(s), need = (double)(s->n_blocks + 1) * per;
  s->err_set = 1;
  if (iter <= s->lo)
    return ds_err_set(s->err, DS_EINPUT,
                      "option --world-size: one step's ops of %d ranks would take about %.3g "
                      "GiB, more than the %.3g GiB allowed (half this machine's memory); "
                      "give a smaller --world-size",
                      o->world_size, need / DS_UNITS_GIB, (double)o->mem_limit / DS_UNITS_GIB);
  double fit_blocks = floor((double)o->mem_limit / per);
  double fit = floor((fit_blocks - 1) * (double)iter / (double)(iter - s->lo)) + 1;
  return ds_err_set(s->err, DS_EINPUT,
                    "option --iters: the workers are %d steps apart (the slowest in step %d, "
                    "the fastest entering step %d: a straggler or jitter drifts %s workers "
                    "apart) and holding the %d steps from the slowest's to the fastest's "
                    "would take about %.3g GiB, more than the %.3g GiB allowed (half this "
                    "machine's memory); give --iters about %.0f or fewer, or a smaller "
                    "--world-size",
                    iter - s->lo, s->lo, iter, ds_ps_mode_name(o->mode), iter - s->lo + 1,
                    need / DS_UNITS_GIB, (double)o->mem_limit / DS_UNITS_GIB, fit < 2 ? 2 : fit);
}

/* Lays out iteration `iter` (= hi + 1), the first worker entering it: a
 * block of its ops' times and scales, the scales drawn now, iterations in
 * order, so that the jitter generator gives op i*n_step + j the draw
 * ds_jitter_fill of every iteration's ops would (jitter.h). The ring of
 * blocks doubles when the live iterations outgrow it. DS_EINPUT (message
 * in s->err, err_set) when a new block would pass opt->mem_limit. */
static ds_status lay_out(struct ps_sim *s, int32_t iter) {
  size_t n = s->y.n_step;
  if (!s->spare && s->opt->mem_limit &&
      (double)(s->n_blocks + 1) * block_bytes(s) > (double)s->opt->mem_limit)
    return refuse_window(s, iter);
  if ((size_t)(iter - s->lo) + 1 > s->ring_cap) {
    size_t cap = s->ring_cap ? 2 * s->ring_cap : 2;
    struct ps_block **ring = calloc(cap, sizeof *ring);
    if (!ring) return DS_ENOMEM;
    for (int32_t i = s->lo; i <= s->hi; i++)
      ring[(size_t)i % cap] = s->ring[(size_t)i % s->ring_cap];
    free(s->ring);
    s->ring = ring;
    s->ring_cap = cap;
  }
  struct ps_block *b = s->spare;
  if (b) {
    s->spare = b->next;
  } else {
    b = calloc(1, sizeof *b);
    if (!b) return DS_ENOMEM;
    b->start = malloc(n * sizeof *b->start);
    b->end = malloc(n * sizeof *b->end);
    b->scale = malloc(n * sizeof *b->scale);
    if (!b->start || !b->end || !b->scale) {
      free(b->start);
      free(b->end);
      free(b->scale);
      free(b);
      return DS_ENOMEM;
    }
    s->n_blocks++;
  }
  b->next = NULL;
  b->left = s->y.W;
  for (size_t j = 0; j < n; j++) {
    const struct ds_op *op = &s->step->ops[j];
    b->start[j] = b->end[j] = -1;
    b->scale[j] = s->jitter ? ds_jitter_next(s->jitter, op) : 1.0;
    if (s->opt->rank_factor && op->stream == DS_STREAM_COMPUTE)
      b->scale[j] *= s->opt->rank_factor[op->rank];
  }
  s->ring[(size_t)iter % s->ring_cap] = b;
  s->hi = iter;
  return DS_OK;
}

/* Every op of iteration it has ended (DS_EINTERNAL naming the first that
 * has not). */
static ds_status check_ran(struct ps_sim *s, int32_t it) {
  const struct ps_block *b = s->ring[(size_t)it % s->ring_cap];
  for (size_t j = 0; j < s->y.n_step; j++)
    if (b->end[j] < 0) {
      s->err_set = 1;
      return ds_err_set(s->err, DS_EINTERNAL, "parameter server: op %zu (%s %s) never ran",
                        block(s, it) + j, ds_op_kind_name(s->step->ops[j].kind),
                        s->step->ops[j].name);
    }
  return DS_OK;
}

/* Iteration lo has run (every worker finished it, so every op of it did:
 * each push feeds an update, each update a pull the worker waited for):
 * its times go to the caller (on_iter), iteration 0's and the last's are
 * kept for the result, and its block is free for a later iteration. */
static ds_status retire(struct ps_sim *s, struct ds_ps_result *r) {
  int32_t it = s->lo;
  size_t n = s->y.n_step;
  struct ps_block *b = s->ring[(size_t)it % s->ring_cap];
  DS_CHECK(check_ran(s, it));
  if (it == 0) {
    memcpy(r->first_start_ns, b->start, n * sizeof *b->start);
    memcpy(r->first_end_ns, b->end, n * sizeof *b->end);
  }
  if (it == s->opt->iters - 1) {
    memcpy(r->last_start_ns, b->start, n * sizeof *b->start);
    memcpy(r->last_end_ns, b->end, n * sizeof *b->end);
  } else {
    for (size_t j = 0; j < n; j++)
      if (b->end[j] > r->before_last_end_ns) r->before_last_end_ns = b->end[j];
  }
  if (s->opt->on_iter) {
    ds_status st = s->opt->on_iter(s->opt->on_iter_ctx, s->step, it, b->start, b->end, s->err);
    if (st != DS_OK) {
      s->err_set = 1;
      return st;
    }
  }
  s->ring[(size_t)it % s->ring_cap] = NULL;
  b->next = s->spare;
  s->spare = b;
  s->lo++;
  return DS_OK;
}

/* A worker has finished iteration iter: the iterations every worker has
 * finished retire, in order, and the worker's next one is laid out if it
 * is the first there. */
static void worker_done(struct ps_sim *s, int32_t iter) {
  s->ring[(size_t)iter % s->ring_cap]->left--;
  while (s->lo <= s->hi && s->ring[(size_t)s->lo % s->ring_cap]->left == 0) {
    ds_status st = retire(s, s->result);
    if (st != DS_OK) {
      fail(s, st);
      return;
    }
  }
  if (iter + 1 < s->opt->iters && iter + 1 > s->hi) {
    ds_status st = lay_out(s, iter + 1);
    if (st != DS_OK) fail(s, st);
  }
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
  if (iter == 0) s->first_end[w] = ds_engine_now(s->eng);
  if (iter == s->opt->iters - 1) s->last_end[w] = ds_engine_now(s->eng);
  worker_done(s, iter);
  if (iter + 1 >= s->opt->iters || s->failure != DS_OK) return;
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

static ds_status alloc_state(struct ps_sim *s) {
  size_t W = (size_t)s->y.W, K = (size_t)s->y.K;
  s->iter = calloc(W, sizeof *s->iter);
  s->pos = calloc(W, sizeof *s->pos);
  s->pulls_left = malloc(W * sizeof *s->pulls_left);
  s->first_end = calloc(W, sizeof *s->first_end);
  s->last_end = calloc(W, sizeof *s->last_end);
  s->arrived = calloc(W * K, sizeof *s->arrived);
  s->version = calloc(K, sizeof *s->version);
  s->pulled = calloc(W * K, sizeof *s->pulled);
  s->queue = malloc(K * (W + 1) * sizeof *s->queue);
  s->q_head = calloc(K, sizeof *s->q_head);
  s->q_len = calloc(K, sizeof *s->q_len);
  s->busy = calloc(K, 1);
  if (!s->iter || !s->pos || !s->pulls_left || !s->first_end || !s->last_end || !s->arrived ||
      !s->version || !s->pulled || !s->queue || !s->q_head || !s->q_len || !s->busy)
    return DS_ENOMEM;
  return DS_OK;
}

static void free_block(struct ps_block *b) {
  if (!b) return;
  free(b->start);
  free(b->end);
  free(b->scale);
  free(b);
}

static void free_state(struct ps_sim *s) {
  ds_net_free(s->net);
  ds_engine_free(s->eng);
  ds_jitter_free(s->jitter);
  ds_ps_shards_release(&s->sh);
  for (int32_t i = s->lo; s->ring && i <= s->hi; i++) free_block(s->ring[(size_t)i % s->ring_cap]);
  while (s->spare) {
    struct ps_block *b = s->spare;
    s->spare = b->next;
    free_block(b);
  }
  free(s->ring);
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

/* What the caller keeps of every op (ds_ps_options kept_bytes_per_op):
 * refused before the run when it cannot fit, naming the iterations that
 * would. */
static ds_status check_kept(const struct ds_schedule *step, const struct ds_ps_options *o,
                            struct ds_err *err) {
  double per_iter = o->kept_bytes_per_op * (double)step->n_ops, need = per_iter * o->iters;
  if (!o->mem_limit || need <= (double)o->mem_limit) return DS_OK;
  double fit = floor((double)o->mem_limit / per_iter);
  return ds_err_set(err, DS_EINPUT,
                    "option --iters: %s keeps every op of the run in memory: %d iterations of "
                    "%d ranks would hold about %.3g GiB, more than the %.3g GiB allowed (half "
                    "this machine's memory); give --iters %.0f or fewer, or a smaller "
                    "--world-size",
                    o->kept_by ? o->kept_by : "the caller", o->iters, o->world_size,
                    need / DS_UNITS_GIB, (double)o->mem_limit / DS_UNITS_GIB, fit < 2 ? 2 : fit);
}

/* The result's copies of iteration 0's and the last iteration's times. */
static ds_status alloc_result(struct ds_ps_result *r) {
  size_t n = r->step->n_ops + 1;
  r->first_start_ns = malloc(n * sizeof *r->first_start_ns);
  r->first_end_ns = malloc(n * sizeof *r->first_end_ns);
  r->last_start_ns = malloc(n * sizeof *r->last_start_ns);
  r->last_end_ns = malloc(n * sizeof *r->last_end_ns);
  r->before_last_end_ns = INT64_MIN;
  if (!r->first_start_ns || !r->first_end_ns || !r->last_start_ns || !r->last_end_ns)
    return DS_ENOMEM;
  return DS_OK;
}

/* --strategy ps runs a window of iterations (ps.c's head): memory is the
 * blocks of the iterations some worker is in, whatever --iters is; the
 * one bound on a long run is the work bound (work_limit). */
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
  DS_CHECK_GOTO(build_routes(&s, err), st, out);
  DS_CHECK_GOTO(ds_schedule_new(o->world_size, &r->step), st, oom);
  DS_CHECK_GOTO(ds__ps_build_iteration(&s, r->step), st, oom);
  DS_CHECK_GOTO(ds_schedule_validate(r->step, err), st, out);
  DS_CHECK_GOTO(check_kept(r->step, o, err), st, out);
  s.step = r->step;
  DS_CHECK_GOTO(alloc_result(r), st, oom);
  DS_CHECK_GOTO(alloc_state(&s), st, oom);
  if (o->jitter) DS_CHECK_GOTO(ds_jitter_new(o->jitter_cv, o->seed, &s.jitter), st, oom);
  st = lay_out(&s, 0);
  if (st != DS_OK) {
    if (s.err_set) goto out;
    goto oom;
  }
  DS_CHECK_GOTO(ds_engine_new(0, handle, &s, &s.eng), st, oom);
  DS_CHECK_GOTO(ds_net_new(topo, s.eng, o->net_mode, on_flow_done, NULL, &s, &s.net), st, oom);
  for (int32_t w = 0; w < s.y.W; w++) {
    s.pulls_left[w] = s.y.K;
    begin_step(&s, w);
    advance(&s, w);
  }
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
  /* every iteration retired: a block left means some op never ran */
  if (s.lo <= s.hi) {
    st = check_ran(&s, s.lo);
    if (st == DS_OK)
      st = ds_err_set(err, DS_EINTERNAL, "parameter server: iteration %d never ended", s.lo);
    goto out;
  }
  DS_CHECK_GOTO(measure(&s, r), st, oom);
  r->blocks = s.n_blocks;
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
  free(r->worker_step_ms);
  memset(r, 0, sizeof *r);
}
