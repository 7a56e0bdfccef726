/*
 * The spins of a schedule that a wait of the replay sees (spin_check.h).
 *
 * --timeout bounds each wait (options.h): a collective's wait for the other
 * ranks (cpu device), the barrier between iterations (both launchers) and
 * the cuda device's one wait for an iteration's GPU work. What a rank spins
 * (dur_us) is known before any rank starts, so a wait it would keep past
 * the limit is found here, not after the limit has passed at run time with
 * a message blaming a rank that "did not arrive".
 *
 * The other ranks' wait. Ops of one (rank, stream) run one after the other
 * and an op starts after its deps; ops on different streams overlap. Every
 * rank runs the same collectives in the same order on its comm stream
 * (schedule_check.c), so the others enter a rank's collective c_j no
 * earlier than the end of c_{j-1} (T_{j-1}; the start of the iteration for
 * the first), and wait for it at most S(c_j) - T_{j-1}, S being when the
 * rank enters c_j; for the barrier after the iteration, the end of the
 * rank's last op less the end of its last collective. How large can that
 * be? Collectives may take no time, and the others may be late to any
 * earlier meeting m (a collective, or the start) by any amount: with m late
 * by a lot, everything after m runs from T_m, and S(c_j) - T_{j-1} is
 * L(m, c_j) - L(m, c_{j-1}), L(m, x) being the longest chain of spins from
 * m's end to x's start (collectives after m taking no time). The wait is
 * the largest of those over m; m = c_{j-1} gives the chain between the
 * two collectives, m = the start the rank's whole timeline with every
 * collective instant. Neither the sum of the ops listed between two
 * collectives in the file (ops listed there may not precede c_j: a
 * backward op runs beside an all-reduce, ops on two streams overlap; ops
 * listed before c_{j-1} may: a chain on the compute stream that c_{j-1}
 * did not wait for) nor the chain since the last collective on it (which
 * counts spins that c_{j-1} already waited for: DDP's backward pass,
 * before every bucket) is that wait.
 *
 * One pass per meeting m over the ops it reaches: for DDP the start
 * reaches every op and a bucket's all-reduce only the later ones and the
 * step, a few thousand steps per rank. A schedule that would take more
 * than max_steps (DS_SPIN_EXACT_STEPS) in all (pathological: many collectives that each
 * reach most ops) gets the chain since the last meeting on it instead, one
 * pass, never shorter, so it refuses at least what the exact wait refuses.
 *
 * The cuda device issues an iteration's ops without waiting (launches,
 * events and NCCL calls are asynchronous) and then waits, once, for all of
 * them: that wait lasts at least the iteration's longest chain with
 * collectives taking no time and ending at their ranks' latest entry
 * (ds_spin_longest_iteration).
 *
 * Ops whose time is not their dur_us (collectives, GEMMs) count as 0.
 */
#include "spin_check.h"

#include <stdlib.h>

#define NONE SIZE_MAX

int ds_spin_op_spins(const struct ds_op *o, enum ds_compute_mode compute) {
  if (ds_op_kind_is_collective(o->kind)) return 0;
  int computes = o->kind == DS_OP_FWD || o->kind == DS_OP_BWD || o->kind == DS_OP_LOSS ||
                 o->kind == DS_OP_STEP;
  return !(compute == DS_COMPUTE_GEMM && computes && o->flops > 0);
}

/* The schedule as a graph: per op its spin and its predecessors (stream
 * order and deps) and successors; each rank's ops in file order. */
struct graph {
  struct ds_schedule *s;
  size_t n;
  double *w;                /* spun us, 0 for ops that do not spin */
  unsigned char *coll;      /* is a collective */
  size_t *pfirst, *pred;    /* preds of x: pred[pfirst[x] .. pfirst[x+1]) */
  size_t *sfirst, *succ;    /* successors, likewise */
  size_t *rfirst, *rorder;  /* rank r's ops: rorder[rfirst[r] .. rfirst[r+1]) */
};

static void graph_free(struct graph *g) {
  free(g->w);
  free(g->coll);
  free(g->pfirst);
  free(g->pred);
  free(g->sfirst);
  free(g->succ);
  free(g->rfirst);
  free(g->rorder);
}

static ds_status graph_build(struct ds_schedule *s, enum ds_compute_mode compute,
                             struct graph *g, struct ds_err *err) {
  size_t n = s->n_ops, world = (size_t)s->world_size, m = n + s->n_deps + 1;
  *g = (struct graph){.s = s, .n = n};
  g->w = malloc((n + 1) * sizeof *g->w);
  g->coll = malloc(n + 1);
  g->pfirst = calloc(n + 2, sizeof *g->pfirst);
  g->pred = malloc(m * sizeof *g->pred);
  g->sfirst = calloc(n + 2, sizeof *g->sfirst);
  g->succ = malloc(m * sizeof *g->succ);
  g->rfirst = calloc(world + 1, sizeof *g->rfirst);
  g->rorder = malloc((n + 1) * sizeof *g->rorder);
  size_t *last_on = malloc(world * DS_STREAM_COUNT * sizeof *last_on);
  size_t *fill = calloc(world > n ? world + 1 : n + 1, sizeof *fill);
  ds_status st = DS_OK;
  if (!g->w || !g->coll || !g->pfirst || !g->pred || !g->sfirst || !g->succ || !g->rfirst ||
      !g->rorder || !last_on || !fill) {
    st = ds_err_set(err, DS_ENOMEM, "out of memory checking the schedule's spins");
    goto out;
  }
  for (size_t i = 0; i < world * DS_STREAM_COUNT; i++) last_on[i] = NONE;
  size_t np = 0;
  for (size_t i = 0; i < n; i++) {
    const struct ds_op *o = &s->ops[i];
    g->coll[i] = (unsigned char)ds_op_kind_is_collective(o->kind);
    g->w[i] = ds_spin_op_spins(o, compute) && o->dur_us > 0 ? o->dur_us : 0;
    g->pfirst[i] = np;
    size_t *prev = &last_on[(size_t)o->rank * DS_STREAM_COUNT + (size_t)o->stream];
    if (*prev != NONE) g->pred[np++] = *prev;
    *prev = i;
    const int64_t *deps = ds_schedule_deps(s, o);
    for (uint32_t k = 0; k < o->dep_count; k++) {
      size_t p;
      if (ds_schedule_find(s, deps[k], &p) != 0) {
        st = ds_err_set(err, DS_EINTERNAL, "op %lld: dependency %lld is no op (the schedule "
                        "was not validated)", (long long)o->id, (long long)deps[k]);
        goto out;
      }
      g->pred[np++] = p;
    }
  }
  g->pfirst[n] = np;
  /* successors: the preds reversed */
  for (size_t k = 0; k < np; k++) g->sfirst[g->pred[k] + 1]++;
  for (size_t i = 0; i < n; i++) g->sfirst[i + 1] += g->sfirst[i];
  for (size_t x = 0; x < n; x++)
    for (size_t k = g->pfirst[x]; k < g->pfirst[x + 1]; k++) {
      size_t p = g->pred[k];
      g->succ[g->sfirst[p] + fill[p]++] = x;
    }
  for (size_t i = 0; i < n; i++) g->rfirst[s->ops[i].rank + 1]++;
  for (size_t r = 0; r < world; r++) g->rfirst[r + 1] += g->rfirst[r];
  for (size_t r = 0; r < world; r++) fill[r] = 0;
  for (size_t i = 0; i < n; i++) {
    size_t r = (size_t)s->ops[i].rank;
    g->rorder[g->rfirst[r] + fill[r]++] = i;
  }
out:
  free(last_on);
  free(fill);
  if (st != DS_OK) graph_free(g);
  return st;
}

/* ---- the exact wait: one pass per meeting --------------------------------- */

struct pass {
  double *lv;       /* L(m, x): the longest chain of spins from m's end to x's start */
  size_t *arg;      /* the pred it comes through (NONE: from m or nothing) */
  size_t *stamp;    /* == gen: reached in this pass */
  size_t gen;
  size_t *reach;    /* the ops reached, in file order */
  size_t *stack;
  double steps;     /* work so far, all passes */
};

static int cmp_size(const void *a, const void *b) {
  size_t x = *(const size_t *)a, y = *(const size_t *)b;
  return (x > y) - (x < y);
}

/* L(m, .) over the ops m reaches (m NONE: the start of rank r's iteration,
 * which reaches all its ops); returns how many. */
static size_t run_pass(const struct graph *g, struct pass *p, int32_t r, size_t m) {
  size_t nr = 0;
  p->gen++;
  if (m == NONE) {
    for (size_t k = g->rfirst[r]; k < g->rfirst[r + 1]; k++) {
      p->reach[nr++] = g->rorder[k];
      p->stamp[g->rorder[k]] = p->gen;
    }
  } else {
    size_t top = 0, hi = m;
    p->stack[top++] = m;
    p->stamp[m] = p->gen;
    while (top > 0) {
      size_t x = p->stack[--top];
      p->reach[nr++] = x;
      if (x > hi) hi = x;
      for (size_t k = g->sfirst[x]; k < g->sfirst[x + 1]; k++)
        if (p->stamp[g->succ[k]] != p->gen) {
          p->stamp[g->succ[k]] = p->gen;
          p->stack[top++] = g->succ[k];
        }
    }
    /* In file order, a topological order. The ops reached lie in [m, hi]:
     * where they are most of it, one scan of the stamps lists them in order
     * at a fraction of qsort's cost (which took 2/3 of the check's time on a
     * schedule where every collective reaches every later op). */
    if ((hi - m + 1) / 8 <= nr) {
      nr = 0;
      for (size_t x = m; x <= hi; x++)
        if (p->stamp[x] == p->gen) p->reach[nr++] = x;
    } else {
      qsort(p->reach, nr, sizeof *p->reach, cmp_size);
    }
  }
  for (size_t k = 0; k < nr; k++) {
    size_t x = p->reach[k];
    double best = 0;
    size_t arg = NONE;
    if (x != m)
      for (size_t q = g->pfirst[x]; q < g->pfirst[x + 1]; q++) {
        size_t y = g->pred[q];
        if (p->stamp[y] != p->gen || y == m) continue;
        double v = p->lv[y] + (g->coll[y] ? 0 : g->w[y]);
        if (v > best) best = v, arg = y;
      }
    p->lv[x] = best;
    p->arg[x] = arg;
    p->steps += 1.0 + (double)(g->pfirst[x + 1] - g->pfirst[x]);
  }
  return nr;
}

/* A rank's waits: wait[j] (us) and from[j] (the meeting m that gives it)
 * for meetings j = 1..K (its collectives, in order) and K+1 (the end of the
 * iteration); meeting 0 is the start. */
struct rank_waits {
  double *us;
  size_t *from;
};

/* After run_pass from meeting i (op m): each later meeting's L(m, .) less
 * the previous one's. end_op receives the op whose end is the latest. */
static void add_waits(const struct graph *g, const struct pass *p, size_t nr, size_t i,
                      size_t m, const size_t *meet_of, size_t n_coll,
                      struct rank_waits *rw, size_t *end_op) {
  double prev = 0, end = 0;
  *end_op = NONE;
  for (size_t k = 0; k < nr; k++) {
    size_t x = p->reach[k];
    if (x == m) continue;
    double e = p->lv[x] + (g->coll[x] ? 0 : g->w[x]);
    if (e > end) end = e, *end_op = x;
    if (!g->coll[x]) continue;
    size_t j = meet_of[x];
    if (p->lv[x] - prev > rw->us[j]) rw->us[j] = p->lv[x] - prev, rw->from[j] = i;
    prev = p->lv[x];
  }
  if (end - prev > rw->us[n_coll + 1]) rw->us[n_coll + 1] = end - prev, rw->from[n_coll + 1] = i;
}

/* The chain behind rank r's wait at meeting j from meeting i, into *out:
 * its spinning ops from the first that ends after the previous meeting. */
static void trace_wait(const struct graph *g, struct pass *p, int32_t r, const size_t *meets,
                       size_t n_coll, size_t i, size_t j, double us, struct ds_spin_path *out) {
  size_t m = i == 0 ? NONE : meets[i - 1];
  size_t nr = run_pass(g, p, r, m);
  size_t target = NONE;
  if (j <= n_coll) {
    target = meets[j - 1];
  } else {
    double end = 0;
    for (size_t k = 0; k < nr; k++) {
      size_t x = p->reach[k];
      double e = x == m ? 0 : p->lv[x] + (g->coll[x] ? 0 : g->w[x]);
      if (e > end) end = e, target = x;
    }
  }
  size_t before = j - 1 == 0 ? NONE : meets[j - 2]; /* the previous meeting's op */
  double prev = before == NONE || before == m ? 0 : p->lv[before];
  /* the chain, backwards from the target, into stack */
  size_t len = 0;
  for (size_t x = target; x != NONE && x != m; x = p->arg[x]) p->stack[len++] = x;
  *out = (struct ds_spin_path){.us = us, .first = NONE, .last = target, .since = before,
                               .ends_at_collective = j <= n_coll};
  for (size_t k = len; k-- > 0;) {
    size_t y = p->stack[k];
    if (g->coll[y] || g->w[y] <= 0) continue;
    if (out->first == NONE && p->lv[y] + g->w[y] > prev) out->first = y;
    if (out->first != NONE) out->n_spins++;
  }
}

/* The exact wait; *done 0 (and *out unset) past max_steps. */
static ds_status exact_wait(const struct graph *g, double max_steps, struct ds_spin_path *out,
                            int *done, struct ds_err *err) {
  size_t n = g->n;
  struct pass p = {0};
  struct rank_waits rw = {0};
  p.lv = malloc((n + 1) * sizeof *p.lv);
  p.arg = malloc((n + 1) * sizeof *p.arg);
  p.stamp = calloc(n + 1, sizeof *p.stamp);
  p.reach = malloc((n + 1) * sizeof *p.reach);
  p.stack = malloc((n + 1) * sizeof *p.stack);
  rw.us = malloc((n + 2) * sizeof *rw.us);
  rw.from = malloc((n + 2) * sizeof *rw.from);
  size_t *meet_of = malloc((n + 1) * sizeof *meet_of);
  size_t *meets = malloc((n + 1) * sizeof *meets);
  ds_status st = DS_OK;
  if (!p.lv || !p.arg || !p.stamp || !p.reach || !p.stack || !rw.us || !rw.from || !meet_of ||
      !meets) {
    st = ds_err_set(err, DS_ENOMEM, "out of memory checking the schedule's spins");
    goto out;
  }
  *out = (struct ds_spin_path){.first = NONE, .last = NONE, .since = NONE};
  *done = 0;
  int32_t best_r = -1;
  size_t best_i = 0, best_j = 0, best_k = 0;
  for (int32_t r = 0; r < g->s->world_size; r++) {
    size_t k = 0;
    for (size_t q = g->rfirst[r]; q < g->rfirst[r + 1]; q++) {
      size_t x = g->rorder[q];
      if (g->coll[x]) meets[k] = x, meet_of[x] = ++k;
    }
    for (size_t j = 0; j <= k + 1; j++) rw.us[j] = 0, rw.from[j] = 0;
    for (size_t i = 0; i <= k; i++) {
      size_t m = i == 0 ? NONE : meets[i - 1], end_op;
      size_t nr = run_pass(g, &p, r, m);
      add_waits(g, &p, nr, i, m, meet_of, k, &rw, &end_op);
      if (p.steps > max_steps) goto out;
    }
    for (size_t j = 1; j <= k + 1; j++)
      if (rw.us[j] > out->us) {
        out->us = rw.us[j];
        best_r = r, best_i = rw.from[j], best_j = j, best_k = k;
      }
  }
  if (best_r >= 0) {
    size_t k = 0;
    for (size_t q = g->rfirst[best_r]; q < g->rfirst[best_r + 1]; q++)
      if (g->coll[g->rorder[q]]) meets[k++] = g->rorder[q];
    trace_wait(g, &p, best_r, meets, best_k, best_i, best_j, out->us, out);
  }
  *done = 1;
out:
  free(p.lv);
  free(p.arg);
  free(p.stamp);
  free(p.reach);
  free(p.stack);
  free(rw.us);
  free(rw.from);
  free(meet_of);
  free(meets);
  return st;
}

/* ---- one walk: the bound since the last meeting, and the iteration ------- */

/* Per op, the longest chain ending at its start and at its end (us, first
 * spinning op, spinning ops, and the meeting it starts from). Ranks are
 * visited each up to its next collective, so that a collective ends (join:
 * at its ranks' latest entry; else: a chain restarts there) once every
 * rank has entered it. */
struct walk {
  const struct graph *g;
  int join;
  double *start_us, *end_us;
  size_t *start_first, *end_first, *start_n, *end_n, *start_from, *end_from;
};

static void visit_start(struct walk *w, size_t i) {
  const struct graph *g = w->g;
  double us = -1; /* the first pred's, then the longest */
  size_t first = NONE, n = 0, from = NONE;
  for (size_t q = g->pfirst[i]; q < g->pfirst[i + 1]; q++) {
    size_t p = g->pred[q];
    if (w->end_us[p] > us)
      us = w->end_us[p], first = w->end_first[p], n = w->end_n[p], from = w->end_from[p];
  }
  if (us < 0) us = 0;
  w->start_us[i] = us;
  w->start_first[i] = first;
  w->start_n[i] = n;
  w->start_from[i] = from;
}

static void visit_end(struct walk *w, size_t i) {
  double d = w->g->w[i];
  w->end_us[i] = w->start_us[i] + d;
  w->end_first[i] = w->start_first[i] != NONE ? w->start_first[i] : d > 0 ? i : NONE;
  w->end_n[i] = w->start_n[i] + (d > 0);
  w->end_from[i] = w->start_from[i];
}

static void visit_collective(struct walk *w, const size_t *at, int32_t entered) {
  size_t late = at[0];
  for (int32_t r = 1; r < entered; r++)
    if (w->start_us[at[r]] > w->start_us[late]) late = at[r];
  for (int32_t r = 0; r < entered; r++) {
    size_t i = at[r];
    w->end_us[i] = w->join ? w->start_us[late] : 0;
    w->end_first[i] = w->join ? w->start_first[late] : NONE;
    w->end_n[i] = w->join ? w->start_n[late] : 0;
    w->end_from[i] = w->join ? NONE : i;
  }
}

static ds_status walk_all(struct walk *w, struct ds_err *err) {
  const struct graph *g = w->g;
  size_t world = (size_t)g->s->world_size;
  size_t *cur = malloc(world * sizeof *cur), *at = malloc(world * sizeof *at);
  ds_status st = DS_OK;
  if (!cur || !at) {
    st = ds_err_set(err, DS_ENOMEM, "out of memory checking the schedule's spins");
    goto out;
  }
  for (size_t r = 0; r < world; r++) cur[r] = g->rfirst[r];
  for (;;) {
    int32_t entered = 0;
    for (size_t r = 0; r < world; r++) {
      for (; cur[r] < g->rfirst[r + 1]; cur[r]++) {
        size_t i = g->rorder[cur[r]];
        visit_start(w, i);
        if (g->coll[i]) break;
        visit_end(w, i);
      }
      if (cur[r] < g->rfirst[r + 1]) at[entered++] = g->rorder[cur[r]];
    }
    if (entered == 0) break;
    if (w->join && entered != g->s->world_size) {
      st = ds_err_set(err, DS_EINTERNAL, "%d of %d ranks have a collective left (the "
                      "collectives were not checked)", entered, g->s->world_size);
      goto out;
    }
    visit_collective(w, at, entered);
    for (size_t r = 0; r < world; r++)
      if (cur[r] < g->rfirst[r + 1]) cur[r]++;
  }
out:
  free(cur);
  free(at);
  return st;
}

/* The longest chain that ends at a collective's entry or at an op's end,
 * collectives first among equals. */
static ds_status walk_longest(const struct graph *g, int join, struct ds_spin_path *out,
                              struct ds_err *err) {
  size_t n = g->n + 1;
  struct walk w = {.g = g, .join = join};
  w.start_us = malloc(n * sizeof *w.start_us);
  w.end_us = malloc(n * sizeof *w.end_us);
  w.start_first = malloc(n * sizeof *w.start_first);
  w.end_first = malloc(n * sizeof *w.end_first);
  w.start_n = malloc(n * sizeof *w.start_n);
  w.end_n = malloc(n * sizeof *w.end_n);
  w.start_from = malloc(n * sizeof *w.start_from);
  w.end_from = malloc(n * sizeof *w.end_from);
  ds_status st = DS_OK;
  *out = (struct ds_spin_path){.first = NONE, .last = NONE, .since = NONE};
  if (!w.start_us || !w.end_us || !w.start_first || !w.end_first || !w.start_n || !w.end_n ||
      !w.start_from || !w.end_from) {
    st = ds_err_set(err, DS_ENOMEM, "out of memory checking the schedule's spins");
    goto out;
  }
  DS_CHECK_GOTO(walk_all(&w, err), st, out);
  struct ds_spin_path at_coll = *out, at_end = *out;
  for (size_t i = 0; i < g->n; i++) {
    if (g->coll[i]) {
      if (w.start_us[i] > at_coll.us)
        at_coll = (struct ds_spin_path){.us = w.start_us[i], .n_spins = w.start_n[i],
                                        .first = w.start_first[i], .last = i,
                                        .since = w.start_from[i], .ends_at_collective = 1};
    } else if (w.end_us[i] > at_end.us) {
      at_end = (struct ds_spin_path){.us = w.end_us[i], .n_spins = w.end_n[i],
                                     .first = w.end_first[i], .last = i,
                                     .since = w.end_from[i]};
    }
  }
  *out = at_end.us > at_coll.us ? at_end : at_coll;
out:
  free(w.start_us);
  free(w.end_us);
  free(w.start_first);
  free(w.end_first);
  free(w.start_n);
  free(w.end_n);
  free(w.start_from);
  free(w.end_from);
  return st;
}

ds_status ds_spin_longest_wait(struct ds_schedule *s, enum ds_compute_mode compute,
                               double max_steps, struct ds_spin_path *out, struct ds_err *err) {
  struct graph g;
  DS_CHECK(graph_build(s, compute, &g, err));
  int done = 0;
  ds_status st = exact_wait(&g, max_steps, out, &done, err);
  if (st == DS_OK && !done) st = walk_longest(&g, 0, out, err);
  graph_free(&g);
  return st;
}

ds_status ds_spin_longest_iteration(struct ds_schedule *s, enum ds_compute_mode compute,
                                    struct ds_spin_path *out, struct ds_err *err) {
  struct graph g;
  DS_CHECK(graph_build(s, compute, &g, err));
  ds_status st = walk_longest(&g, 1, out, err);
  out->since = NONE;
  graph_free(&g);
  return st;
}
