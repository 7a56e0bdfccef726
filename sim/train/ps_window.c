/*
 * Where a parameter-server run keeps its ops' times (see ps_impl.h; the
 * event loop is ps.c's): each worker's ops of the step it is in, which
 * all end before it leaves the step (its pulls last; an async update is
 * its worker's), so async workers steps apart hold one step's ops between
 * them, whatever the lag; a window of iterations' blocks where ops of a
 * step are needed together after their workers have moved on (sync's
 * updates, one per server for every worker; a consumer's rows, handed on a
 * step at a time, on_iter), laid out when the first worker enters a step
 * and retired once every worker has ended it; and with jitter each
 * worker's draws, drawn when the first worker enters a step, in op order,
 * and kept until the worker gets there. Everything held is counted in
 * held_bytes, against what opt->mem_limit leaves after one step's estimate
 * (ds__ps_mem_left; ds__ps_lay_out, refuse).
 */
#include "sim/train/ps_impl.h"

#include <assert.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/units.h"

/* Op j of iteration iter is op iter * n_step + j of the run. */
static size_t block(const struct ps_sim *s, int32_t iter) {
  return (size_t)iter * s->y.n_step;
}

static struct ps_block *block_of(const struct ps_sim *s, int32_t it) {
  assert(s->track && it >= s->lo && it <= s->hi);
  return s->ring[(size_t)it % s->ring_cap];
}

/* The worker whose op j of an iteration is, *local its index among the
 * worker's ops (own_start: program, updates when async, pulls); -1 for a
 * sync update, *local its server. */
static int32_t owner_of(const struct layout *y, int async, size_t j, size_t *local) {
  size_t prog = (size_t)y->W * (size_t)y->per_w, K = (size_t)y->K;
  if (j < prog) {
    *local = j % (size_t)y->per_w;
    return (int32_t)(j / (size_t)y->per_w);
  }
  j -= prog;
  if (j < (size_t)y->n_update) {
    *local = async ? (size_t)y->per_w + j % K : j;
    return async ? (int32_t)(j / K) : -1;
  }
  j -= (size_t)y->n_update;
  *local = (size_t)y->per_w + (async ? K : 0) + j % K;
  return (int32_t)(j / K);
}

/* owner_of's inverse: op j of the iteration that is worker w's op local. */
static size_t own_op(const struct layout *y, int async, int32_t w, size_t local) {
  size_t K = (size_t)y->K, per_w = (size_t)y->per_w;
  if (local < per_w) return ds__ps_ix_prog(y, w, (int32_t)local);
  local -= per_w;
  if (async && local < K) return ds__ps_ix_update(y, w, (int32_t)local);
  if (async) local -= K;
  return ds__ps_ix_pull(y, w, (int32_t)local);
}

int64_t *ds__ps_op_time(const struct ps_sim *s, size_t op, int end) {
  size_t local;
  int32_t it = (int32_t)(op / s->y.n_step);
  int32_t w = owner_of(&s->y, s->opt->mode == DS_PS_ASYNC, op % s->y.n_step, &local);
  if (w < 0) {
    struct ps_block *b = block_of(s, it);
    return end ? &b->uend[local] : &b->ustart[local];
  }
  assert(s->iter[w] == it);
  size_t i = (size_t)w * s->n_own + local;
  return end ? &s->own_end[i] : &s->own_start[i];
}

/* Worker w's jitter draw for program entry j (a compute op) of the step it
 * is in. */
double ds__ps_draw(const struct ps_sim *s, int32_t w, int32_t j) {
  assert(s->cmp_of[j] >= 0 && s->draws[w].head);
  return s->draws[w].head->v[s->cmp_of[j]];
}

static void hold(struct ps_sim *s, double bytes) {
  s->held_bytes += bytes;
  if (s->held_bytes > s->held_peak) s->held_peak = s->held_bytes;
}

/* Bytes of one iteration's block: a consumer's copy of every op's times,
 * sync's updates. */
static double block_bytes(const struct ps_sim *s) {
  return (double)sizeof(struct ps_block) +
         (s->opt->on_iter ? (double)s->y.n_step * 2 * sizeof(int64_t) : 0) +
         (s->opt->mode == DS_PS_SYNC ? (double)s->y.K * 2 * sizeof(int64_t) : 0);
}

/* Bytes of every worker's own ops of the step it is in (start and end). */
static double own_ops_bytes(const struct ps_sim *s) {
  return (double)s->y.W * (double)s->n_own * 2 * sizeof(int64_t);
}

/* Bytes of one worker's draws of one step. */
static double draw_step_bytes(const struct ps_sim *s) {
  return (double)sizeof(struct ps_draw_step) + (double)s->n_cmp * sizeof(double);
}

/* The step worker w is in, one past it once it has ended it (between
 * ds__ps_worker_done and its next step, or past its last). */
static int32_t step_of(const struct ps_sim *s, int32_t w) {
  return s->iter[w] + (s->pos[w] == s->y.per_w && s->pulls_left[w] == 0);
}

/* What the run holds, held_bytes, and the `more` bytes laying out step
 * iter needs would pass opt->mem_limit: refused, DS_EINPUT (err_set).
 * What grows is what async workers drifting apart (a straggler, jitter)
 * hold for the steps between the slowest and the fastest: a consumer's
 * blocks (its rows go out a step at a time once every worker has ended
 * it) and, with jitter, the draws of the workers behind (drawn when the
 * first worker enters a step: ds__ps_lay_out). Beyond what one step holds
 * (each worker's ops, a block, a step's draws: `fixed`) it grows in
 * proportion to the steps run (the workers' rates stay), so the fastest,
 * entering step iter, would be (iters - 1) / iter times as far ahead
 * entering the last: refused naming the --iters that would fit. With no
 * worker behind, or sync (its workers are a step apart at most), what one
 * step holds does not fit: refused naming --world-size. */
static ds_status refuse(struct ps_sim *s, int32_t iter, double more) {
  const struct ds_ps_options *o = s->opt;
  char why[192];
  double W = (double)s->y.W, limit = ds__ps_mem_left(s, why, sizeof why);
  double need = s->held_bytes + more;
  double fixed = own_ops_bytes(s) +
                 (s->jitter ? W * draw_step_bytes(s) : 0) + (s->track ? block_bytes(s) : 0);
  int32_t slowest = iter;
  for (int32_t w = 0; w < s->y.W; w++)
    if (step_of(s, w) < slowest) slowest = step_of(s, w);
  int trace = o->on_iter != NULL, draws = s->jitter != NULL;
  s->err_set = 1;
  if (slowest >= iter || o->mode == DS_PS_SYNC || limit <= fixed)
    return ds_err_set(s->err, DS_EINPUT,
                      "option --world-size: one step's ops of %d ranks (their times%s%s) "
                      "would take about %.3g GiB, more than %s; give a smaller --world-size",
                      o->world_size, trace ? ", the trace's rows" : "",
                      draws ? ", the jitter draws" : "", need / DS_UNITS_GIB, why);
  double fit = floor((limit - fixed) / (need - fixed) * (double)iter) + 1;
  const char *trace_rows = "the trace's rows (handed on a step at a time once every worker has "
                           "ended it)",
             *draw_rows = "the jitter draws of the workers behind (drawn when the first worker "
                          "enters a step: one generator, in op order)";
  return ds_err_set(
      s->err, DS_EINPUT,
      "option --iters: the workers are %d steps apart (the slowest in step %d, the fastest "
      "entering step %d: a straggler or jitter drifts %s workers apart) and the run holds, "
      "for the %d steps from the slowest's to the fastest's, %s%s%s: about %.3g GiB, more "
      "than %s; give --iters about %.0f or fewer, a smaller --world-size, %s (what the steps "
      "are held for)",
      iter - slowest, slowest, iter, ds_ps_mode_name(o->mode), iter - slowest + 1,
      trace ? trace_rows : "", trace && draws ? " and " : "", draws ? draw_rows : "",
      need / DS_UNITS_GIB, why, fit < 2 ? 2 : fit,
      trace && draws ? "no --jitter, or none of --trace, --plot and --chrome"
      : trace        ? "or none of --trace, --plot and --chrome"
                     : "or no --jitter");
}

static void free_block(struct ps_block *b) {
  if (!b) return;
  free(b->start);
  free(b->end);
  free(b->ustart);
  free(b->uend);
  free(b);
}

/* The ring of blocks' capacity for step iter: it doubles when the live
 * iterations outgrow it. */
static size_t ring_cap_for(const struct ps_sim *s, int32_t iter) {
  if ((size_t)(iter - s->lo) + 1 <= s->ring_cap) return s->ring_cap;
  return s->ring_cap ? 2 * s->ring_cap : 2;
}

/* Iteration iter's block, where blocks are kept (track), a spare one or
 * new. */
static ds_status new_block(struct ps_sim *s, int32_t iter) {
  size_t n_all = s->opt->on_iter ? s->y.n_step : 0;
  size_t n_upd = s->opt->mode == DS_PS_SYNC ? (size_t)s->y.K : 0;
  if (ring_cap_for(s, iter) > s->ring_cap) {
    size_t cap = ring_cap_for(s, iter);
    struct ps_block **ring = calloc(cap, sizeof *ring);
    if (!ring) return DS_ENOMEM;
    for (int32_t i = s->lo; i <= s->hi; i++)
      ring[(size_t)i % cap] = s->ring[(size_t)i % s->ring_cap];
    free(s->ring);
    hold(s, (double)(cap - s->ring_cap) * sizeof *ring);
    s->ring = ring;
    s->ring_cap = cap;
  }
  struct ps_block *b = s->spare;
  if (b) {
    s->spare = b->next;
  } else {
    b = calloc(1, sizeof *b);
    if (!b) return DS_ENOMEM;
    if (n_all) {
      b->start = malloc(n_all * sizeof *b->start);
      b->end = malloc(n_all * sizeof *b->end);
    }
    if (n_upd) {
      b->ustart = malloc(n_upd * sizeof *b->ustart);
      b->uend = malloc(n_upd * sizeof *b->uend);
    }
    if ((n_all && (!b->start || !b->end)) || (n_upd && (!b->ustart || !b->uend))) {
      free_block(b);
      return DS_ENOMEM;
    }
    s->n_blocks++;
    hold(s, block_bytes(s));
  }
  b->next = NULL;
  b->left = s->y.W;
  for (size_t k = 0; k < n_upd; k++) b->ustart[k] = b->uend[k] = -1;
  s->ring[(size_t)iter % s->ring_cap] = b;
  return DS_OK;
}

/* Every worker's jitter draws of the step being laid out, the ops in order
 * (the workers' programs, one after another; nothing else is a compute
 * op), each worker's at the end of its queue, in a spare step's or a new
 * one. */
static ds_status draw_step(struct ps_sim *s) {
  for (int32_t w = 0; w < s->y.W; w++) {
    struct ps_draws *d = &s->draws[w];
    struct ps_draw_step *st = s->draw_spare;
    if (st) {
      s->draw_spare = st->next;
      s->n_draw_spare--;
    } else {
      st = malloc(sizeof *st + (size_t)s->n_cmp * sizeof *st->v);
      if (!st) return DS_ENOMEM;
      hold(s, draw_step_bytes(s));
    }
    st->next = NULL;
    if (d->tail) d->tail->next = st;
    else d->head = st;
    d->tail = st;
    const struct ds_op *ops = s->step->ops + ds__ps_ix_prog(&s->y, w, 0);
    for (int32_t j = 0; j < s->y.per_w; j++)
      if (s->cmp_of[j] >= 0) st->v[s->cmp_of[j]] = ds_jitter_next(s->jitter, &ops[j]);
  }
  return DS_OK;
}

/* Worker w has ended the step at the head of its queue: its draws are
 * spare. */
static void drop_draws(struct ps_sim *s, int32_t w) {
  struct ps_draws *d = &s->draws[w];
  struct ps_draw_step *st = d->head;
  assert(st);
  d->head = st->next;
  if (!d->head) d->tail = NULL;
  st->next = s->draw_spare;
  s->draw_spare = st;
  s->n_draw_spare++;
}

/* Lays out iteration `iter` (= hi + 1), the first worker entering it: its
 * block where blocks are kept, and with jitter every worker's draws of it,
 * drawn now, iterations in order, so that the jitter generator gives op
 * i*n_step + j the draw ds_jitter_fill of every iteration's ops would
 * (jitter.h). A worker behind keeps its draws of the steps it has not
 * reached, 8 bytes per compute op and step, which grow with its lag (a
 * straggler's, nearly --iters): they are counted in held_bytes and bounded
 * by opt->mem_limit as a consumer's blocks are (refuse), and a step's are
 * reused once its worker has ended it (drop_draws), so the run holds the
 * steps the workers are behind now, not the most each ever was. They
 * cannot be drawn later, when the worker gets there, with the same
 * values: the draws come from one mt19937 whose lognormal takes a varying
 * number of uniforms each (GSL's polar method rejects a pair outside the
 * unit circle), so where a worker's draws of a step start in the sequence
 * is known only once every earlier draw is made. Keeping the generator's
 * state instead, at the start of each of a worker's steps, grows with the
 * lag all the same, 2.5 KB a copy (mt19937's 624 words), as much as a
 * step's draws of 312 compute ops (ResNet-50 has 349); keeping it once a
 * step and re-drawing from there would draw the draws of every worker
 * ahead in the step again for each worker, W times the draws. */
ds_status ds__ps_lay_out(struct ps_sim *s, int32_t iter) {
  double more = 0;
  if (s->track) {
    more += (double)(ring_cap_for(s, iter) - s->ring_cap) * sizeof *s->ring;
    if (!s->spare) more += block_bytes(s);
  }
  if (s->jitter && s->n_draw_spare < (size_t)s->y.W)
    more += (double)((size_t)s->y.W - s->n_draw_spare) * draw_step_bytes(s);
  if (s->opt->mem_limit && s->held_bytes + more > ds__ps_mem_left(s, NULL, 0))
    return refuse(s, iter, more);
  if (s->track) DS_CHECK(new_block(s, iter));
  s->hi = iter;
  return s->jitter ? draw_step(s) : DS_OK;
}

/* Op j of iteration it never ran (DS_EINTERNAL). */
static ds_status never_ran(struct ps_sim *s, int32_t it, size_t j) {
  s->err_set = 1;
  return ds_err_set(s->err, DS_EINTERNAL, "parameter server: op %zu (%s %s) never ran",
                    block(s, it) + j, ds_op_kind_name(s->step->ops[j].kind),
                    s->step->ops[j].name);
}

/* Whether op j of an iteration is a server's update. */
static int is_update(const struct layout *y, size_t j) {
  return j >= ds__ps_ix_update(y, 0, 0) && j < ds__ps_ix_pull(y, 0, 0);
}

/* Async: of ops j .. j + n of iteration it, ended (start, end), rank 0's
 * that may run inside rank 0's own step of the last iteration go to the
 * result's before_last_rank0 (ds_ps_result; analysis/metrics.h). That
 * step starts where rank 0's previous one ended (its forward waits for
 * its pull), so an op of an earlier iteration that ends by then, or
 * starts after the last step's end, is left out, and one kept is dropped
 * as these bounds become known: the list holds GPU 0's updates of about
 * one of rank 0's steps, whatever the lag. */
static ds_status keep_late(struct ps_sim *s, int32_t it, size_t j, size_t n,
                           const int64_t *start, const int64_t *end) {
  struct ds_ps_result *r = s->result;
  int last = it == s->opt->iters - 1;
  int64_t *bound = last ? &s->rank0_last_end_ns : &s->rank0_worker_end_ns;
  for (size_t i = 0; i < n; i++)
    if (s->step->ops[j + i].rank == 0 && !is_update(&s->y, j + i) && end[i] > *bound)
      *bound = end[i];
  if (last) return DS_OK;
  int64_t lo = s->rank0_worker_end_ns,
          hi = s->rank0_last_end_ns == INT64_MIN ? INT64_MAX : s->rank0_last_end_ns;
  size_t k = 0;
  for (size_t i = 0; i < r->n_before_last_rank0; i++) {
    struct ds_ps_op_time t = r->before_last_rank0[i];
    if (t.end_ns > lo && t.start_ns < hi) r->before_last_rank0[k++] = t;
  }
  r->n_before_last_rank0 = k;
  for (size_t i = 0; i < n; i++) {
    if (s->step->ops[j + i].rank != 0 || end[i] <= lo || start[i] >= hi) continue;
    if (r->n_before_last_rank0 == s->late_cap) {
      size_t cap = s->late_cap ? 2 * s->late_cap : 16;
      struct ds_ps_op_time *grown = realloc(r->before_last_rank0, cap * sizeof *grown);
      if (!grown) {
        s->err_set = 1;
        return ds_err_set(s->err, DS_ENOMEM, "out of memory");
      }
      r->before_last_rank0 = grown;
      s->late_cap = cap;
    }
    r->before_last_rank0[r->n_before_last_rank0++] =
        (struct ds_ps_op_time){j + i, start[i], end[i]};
  }
  return DS_OK;
}

/* Ops j .. j + n of iteration it, ended (start, end): into the result
 * (iteration 0's and the last's times, the latest end of the others,
 * async: rank 0's that may run in its last step, keep_late) and the
 * block a consumer gets them from. */
static ds_status keep(struct ps_sim *s, int32_t it, size_t j, size_t n, const int64_t *start,
                      const int64_t *end) {
  struct ds_ps_result *r = s->result;
  if (s->opt->mode == DS_PS_ASYNC) DS_CHECK(keep_late(s, it, j, n, start, end));
  if (it == 0) {
    memcpy(r->first_start_ns + j, start, n * sizeof *start);
    memcpy(r->first_end_ns + j, end, n * sizeof *end);
  }
  if (it == s->opt->iters - 1) {
    memcpy(r->last_start_ns + j, start, n * sizeof *start);
    memcpy(r->last_end_ns + j, end, n * sizeof *end);
  } else {
    for (size_t i = 0; i < n; i++) {
      if (end[i] > r->before_last_end_ns) r->before_last_end_ns = end[i];
      if (s->step->ops[j + i].rank == 0 && end[i] > r->before_last_rank0_end_ns)
        r->before_last_rank0_end_ns = end[i];
    }
  }
  if (s->opt->on_iter) {
    struct ps_block *b = block_of(s, it);
    memcpy(b->start + j, start, n * sizeof *start);
    memcpy(b->end + j, end, n * sizeof *end);
  }
  return DS_OK;
}

/* Worker w has ended iteration it: each of its ops has (DS_EINTERNAL
 * naming the first that has not), and they are kept. */
static ds_status worker_ended(struct ps_sim *s, int32_t w, int32_t it) {
  const struct layout *y = &s->y;
  int async = s->opt->mode == DS_PS_ASYNC;
  const int64_t *start = s->own_start + (size_t)w * s->n_own,
                *end = s->own_end + (size_t)w * s->n_own;
  size_t K = (size_t)y->K, u = (size_t)y->per_w;
  for (size_t i = 0; i < s->n_own; i++)
    if (end[i] < 0) return never_ran(s, it, own_op(y, async, w, i));
  DS_CHECK(keep(s, it, ds__ps_ix_prog(y, w, 0), u, start, end));
  if (async) {
    DS_CHECK(keep(s, it, ds__ps_ix_update(y, w, 0), K, start + u, end + u));
    u += K;
  }
  DS_CHECK(keep(s, it, ds__ps_ix_pull(y, w, 0), K, start + u, end + u));
  s->workers_done++;
  return DS_OK;
}

/* Iteration lo, which every worker has ended, retires: sync's updates are
 * kept, its times go to the consumer (ds_ps_options on_iter), and its
 * block is free for a later iteration. */
static ds_status retire(struct ps_sim *s) {
  int32_t it = s->lo;
  struct ps_block *b = s->ring[(size_t)it % s->ring_cap];
  if (b->ustart) {
    size_t j = ds__ps_ix_update(&s->y, 0, 0);
    for (int32_t k = 0; k < s->y.K; k++)
      if (b->uend[k] < 0) return never_ran(s, it, j + (size_t)k);
    DS_CHECK(keep(s, it, j, (size_t)s->y.K, b->ustart, b->uend));
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

/* Worker w has finished iteration iter: its ops are kept, the iterations
 * every worker has finished retire, in order, where blocks are kept, and
 * the worker's next one is laid out if it is the first there. */
ds_status ds__ps_worker_done(struct ps_sim *s, int32_t w, int32_t iter) {
  DS_CHECK(worker_ended(s, w, iter));
  if (s->jitter) drop_draws(s, w);
  if (s->track) {
    s->ring[(size_t)iter % s->ring_cap]->left--;
    while (s->lo <= s->hi && s->ring[(size_t)s->lo % s->ring_cap]->left == 0)
      DS_CHECK(retire(s));
  }
  if (iter + 1 < s->opt->iters && iter + 1 > s->hi) return ds__ps_lay_out(s, iter + 1);
  return DS_OK;
}

/* The run has ended with a step some worker never ended: DS_EINTERNAL
 * naming the first op that never ran (of the first worker with one), else
 * the earliest step a worker is in. */
ds_status ds__ps_unended(struct ps_sim *s) {
  const struct layout *y = &s->y;
  int32_t first = s->opt->iters;
  for (int32_t w = 0; w < y->W; w++) {
    const int64_t *end = s->own_end + (size_t)w * s->n_own;
    for (size_t i = 0; i < s->n_own; i++)
      if (end[i] < 0)
        return never_ran(s, s->iter[w], own_op(y, s->opt->mode == DS_PS_ASYNC, w, i));
    if (s->iter[w] < first) first = s->iter[w];
  }
  if (s->track && s->lo <= s->hi) {
    const struct ps_block *b = block_of(s, s->lo);
    for (int32_t k = 0; b->uend && k < y->K; k++)
      if (b->uend[k] < 0) return never_ran(s, s->lo, ds__ps_ix_update(y, 0, k));
    first = s->lo;
  }
  s->err_set = 1;
  return ds_err_set(s->err, DS_EINTERNAL, "parameter server: iteration %d never ended", first);
}


/* Each worker's ops of its step, the compute ops of its program (the
 * jitter draws'), and whether blocks are kept. */
ds_status ds__ps_window_init(struct ps_sim *s) {
  size_t W = (size_t)s->y.W, K = (size_t)s->y.K;
  /* each worker's ops of its step: its program, its updates (async), its
   * pulls */
  s->n_own = (size_t)s->y.per_w + (s->opt->mode == DS_PS_ASYNC ? K : 0) + K;
  s->own_start = malloc(W * s->n_own * sizeof *s->own_start);
  s->own_end = malloc(W * s->n_own * sizeof *s->own_end);
  s->cmp_of = malloc((size_t)s->y.per_w * sizeof *s->cmp_of);
  if (s->opt->jitter) s->draws = calloc(W, sizeof *s->draws);
  if (!s->own_start || !s->own_end || !s->cmp_of || (s->opt->jitter && !s->draws))
    return DS_ENOMEM;
  hold(s, own_ops_bytes(s));
  /* the compute ops of a worker's program, the same for every worker (the
   * jitter draws' order: ds_jitter_next draws for these alone) */
  for (int32_t j = 0; j < s->y.per_w; j++)
    s->cmp_of[j] = s->step->ops[j].stream == DS_STREAM_COMPUTE ? s->n_cmp++ : -1;
  for (size_t j = (size_t)s->y.W * (size_t)s->y.per_w; j < s->y.n_step; j++)
    assert(s->step->ops[j].stream != DS_STREAM_COMPUTE);
  /* blocks are kept where an iteration's ops are needed together */
  s->track = s->opt->on_iter || s->opt->mode == DS_PS_SYNC;
  s->rank0_worker_end_ns = s->rank0_last_end_ns = INT64_MIN;
  return DS_OK;
}

static void free_draws(struct ps_draw_step *st) {
  while (st) {
    struct ps_draw_step *next = st->next;
    free(st);
    st = next;
  }
}

void ds__ps_window_free(struct ps_sim *s) {
  for (int32_t i = s->lo; s->ring && i <= s->hi; i++) free_block(s->ring[(size_t)i % s->ring_cap]);
  while (s->spare) {
    struct ps_block *b = s->spare;
    s->spare = b->next;
    free_block(b);
  }
  free(s->ring);
  for (int32_t w = 0; s->draws && w < s->y.W; w++) free_draws(s->draws[w].head);
  free_draws(s->draw_spare);
  free(s->draws);
  free(s->own_start);
  free(s->own_end);
  free(s->cmp_of);
}
