#include "traces/trace_keys.h"

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

/* One row's key; sorted by rank, id, then iteration (then row, so equal
 * keys keep file order and the later row is the one reported). */
struct key {
  int32_t rank;
  int32_t iter;
  int64_t id;
  size_t row;
};

static int cmp_key(const void *pa, const void *pb) {
  const struct key *a = pa, *b = pb;
  if (a->rank != b->rank) return a->rank < b->rank ? -1 : 1;
  if (a->id != b->id) return a->id < b->id ? -1 : 1;
  if (a->iter != b->iter) return a->iter < b->iter ? -1 : 1;
  return (a->row > b->row) - (a->row < b->row);
}

/* The first key of (rank, id): its earliest iteration, or NULL. */
static const struct key *first_of(const struct key *keys, size_t n, int32_t rank,
                                  int64_t id) {
  size_t lo = 0, hi = n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    const struct key *k = &keys[mid];
    if (k->rank < rank || (k->rank == rank && k->id < id))
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo < n && keys[lo].rank == rank && keys[lo].id == id ? &keys[lo] : NULL;
}

/* Whether a dependency of row `row` (rank, iteration iter) names an op
 * of its rank earlier in the file in the same iteration, or, when the id is
 * not in this iteration at all, one of the previous iteration (the
 * exception: an iteration's first op may wait for the last step before it,
 * an id its own iteration does not have; any row may, SCHEMA.md
 * "Dependencies in a trace"). The keys of one (rank, id) lie together, one
 * per iteration. */
static int resolves(const struct key *keys, size_t n, int32_t rank, int64_t id, int32_t iter,
                    size_t row) {
  int in_iter = 0, in_previous = 0;
  for (const struct key *k = first_of(keys, n, rank, id);
       k && k < keys + n && k->rank == rank && k->id == id; k++) {
    if (k->iter == iter) in_iter = 1 + (k->row < row);
    if (k->iter == iter - 1) in_previous = 1;
  }
  return in_iter ? in_iter == 2 : in_previous;
}

ds_status ds_trace_check_keys(const struct ds_trace *t, size_t *bad, size_t *other,
                              struct ds_err *err) {
  size_t n = t->n_rows;
  if (n == 0) return DS_OK;
  struct key *keys = malloc(n * sizeof *keys);
  if (!keys) return ds_err_set(err, DS_ENOMEM, "out of memory");
  for (size_t i = 0; i < n; i++) {
    const struct ds_op *op = &t->rows[i].sched->ops[t->rows[i].op];
    keys[i] = (struct key){op->rank, t->rows[i].iter, op->id, i};
  }
  qsort(keys, n, sizeof *keys, cmp_key);
  ds_status st = DS_OK;
  for (size_t i = 1; i < n && st == DS_OK; i++) {
    const struct key *a = &keys[i - 1], *b = &keys[i];
    if (a->rank == b->rank && a->id == b->id && a->iter == b->iter) {
      *bad = b->row;
      *other = a->row;
      st = ds_err_set(err, DS_EINPUT,
                      "column 'id': op %" PRId64 " of rank %" PRId32 " in iteration %" PRId32
                      " appears twice; (iter, rank, id) names one op",
                      b->id, b->rank, b->iter);
    }
  }
  for (size_t i = 0; i < n && st == DS_OK; i++) {
    const struct ds_schedule *s = t->rows[i].sched;
    const struct ds_op *op = &s->ops[t->rows[i].op];
    const int64_t *deps = ds_schedule_deps(s, op);
    for (uint32_t d = 0; d < op->dep_count && st == DS_OK; d++) {
      int64_t dep = deps[d];
      if (resolves(keys, n, op->rank, dep, t->rows[i].iter, i)) continue;
      *bad = *other = i;
      int32_t iter = t->rows[i].iter;
      char before[40] = "";
      if (iter > 0) snprintf(before, sizeof before, " or in iteration %" PRId32, iter - 1);
      st = ds_err_set(err, DS_EINPUT,
                      "column 'deps': %" PRId64 " names no op of rank %" PRId32
                      " earlier in iteration %" PRId32 "%s",
                      dep, op->rank, iter, before);
    }
  }
  free(keys);
  return st;
}

/* One iteration's latest end: the row that holds it. */
struct iter_end {
  int32_t iter;
  int64_t end_ns;
  size_t row;
};

static int cmp_iter_end(const void *pa, const void *pb) {
  const struct iter_end *a = pa, *b = pb;
  if (a->iter != b->iter) return a->iter < b->iter ? -1 : 1;
  if (a->end_ns != b->end_ns) return a->end_ns > b->end_ns ? -1 : 1; /* latest first */
  return (a->row > b->row) - (a->row < b->row);
}

/* Integer nanoseconds as "123.456" microseconds (times are >= 0 here). */
static void fmt_us(char *buf, size_t n, int64_t ns) {
  snprintf(buf, n, "%" PRId64 ".%03" PRId64, ns / 1000, ns % 1000);
}

ds_status ds_trace_check_iter_ends(const struct ds_trace *t, size_t *bad, size_t *other,
                                   struct ds_err *err) {
  size_t n = t->n_rows;
  if (n == 0) return DS_OK;
  struct iter_end *e = malloc(n * sizeof *e);
  if (!e) return ds_err_set(err, DS_ENOMEM, "out of memory");
  for (size_t i = 0; i < n; i++) e[i] = (struct iter_end){t->rows[i].iter, t->rows[i].end_ns, i};
  qsort(e, n, sizeof *e, cmp_iter_end);
  ds_status st = DS_OK;
  /* the first key of each iteration is its latest end; prev that of the
   * iterations before it together */
  const struct iter_end *prev = NULL;
  for (size_t i = 0; i < n && st == DS_OK; i++) {
    if (i > 0 && e[i].iter == e[i - 1].iter) continue;
    if (prev && e[i].end_ns < prev->end_ns) {
      char at[32], before[32];
      fmt_us(at, sizeof at, e[i].end_ns);
      fmt_us(before, sizeof before, prev->end_ns);
      *bad = e[i].row;
      *other = prev->row;
      st = ds_err_set(err, DS_EINPUT,
                      "column 'end_us': iteration %" PRId32 " ends at %s us, before "
                      "iteration %" PRId32 " (%s us); an iteration's last op ends no "
                      "earlier than the iterations before it",
                      e[i].iter, at, prev->iter, before);
    }
    if (!prev || e[i].end_ns >= prev->end_ns) prev = &e[i];
  }
  free(e);
  return st;
}
