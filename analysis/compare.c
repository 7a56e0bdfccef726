/*
 * The join of a predicted and a measured trace and the metrics over it
 * (compare.h, docs/analysis.md). Both traces are indexed by (iter, rank, id);
 * the predicted iteration is the reference op list, and every measured
 * iteration must list exactly the same ops, so after the check the k-th op
 * of every iteration is the same op and per-op values accumulate by
 * position. Per-iteration metrics are computed on each iteration alone and
 * then averaged, never on an averaged timeline.
 */
#include "analysis/compare.h"

#include <gsl/gsl_sort.h>
#include <gsl/gsl_statistics_double.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/csvread.h"
#include "base/units.h"
#include "analysis/metrics.h"


#define IM_COUNT DS_METRIC_COUNT
#define IM_iter_ms DS_METRIC_iter_ms

struct key {
  int32_t iter, rank;
  int64_t id;
  uint32_t row;
};

static int cmp_key(const void *a, const void *b) {
  const struct key *x = a, *y = b;
  if (x->iter != y->iter) return x->iter < y->iter ? -1 : 1;
  if (x->rank != y->rank) return x->rank < y->rank ? -1 : 1;
  if (x->id != y->id) return x->id < y->id ? -1 : 1;
  return (x->row > y->row) - (x->row < y->row);
}

static const struct ds_op *row_op(const struct ds_trace *t, uint32_t row) {
  return &t->rows[row].sched->ops[t->rows[row].op];
}

static ds_status sorted_keys(const struct ds_trace *t, struct key **out) {
  struct key *k = malloc((t->n_rows ? t->n_rows : 1) * sizeof *k);
  if (!k) return DS_ENOMEM;
  for (size_t i = 0; i < t->n_rows; i++) {
    const struct ds_op *o = row_op(t, (uint32_t)i);
    k[i] = (struct key){t->rows[i].iter, o->rank, o->id, (uint32_t)i};
  }
  qsort(k, t->n_rows, sizeof *k, cmp_key);
  *out = k;
  return DS_OK;
}

/* The latest end among the rows of keys k[0..n) (earlier iterations than
 * the one measured) of rank `rank`, or of every rank when rank is -1: the
 * previous iteration's end and rank 0's (metrics.h). */
static int64_t keys_last_end(const struct ds_trace *t, const struct key *k, size_t n,
                             int32_t rank) {
  int64_t e = DS_METRICS_NO_PREVIOUS;
  for (size_t i = 0; i < n; i++)
    if ((rank < 0 || row_op(t, k[i].row)->rank == rank) && t->rows[k[i].row].end_ns > e)
      e = t->rows[k[i].row].end_ns;
  return e;
}

/* Rank 0's rows of a trace sorted by start, each with the latest end of
 * those up to it (max_end): the rows of other iterations that may overlap
 * a span are found without a pass over the trace per iteration (analyze
 * measures every iteration). */
struct rank0_row {
  struct ds_timed_op t;
  int32_t iter;
  int64_t max_end;
};
struct rank0_rows {
  struct rank0_row *r;
  size_t n;
};

static int cmp_rank0_start(const void *a, const void *b) {
  const struct rank0_row *x = a, *y = b;
  return (x->t.start_ns > y->t.start_ns) - (x->t.start_ns < y->t.start_ns);
}

/* r: rank 0's rows of t, whose keys k[0 .. t->n_rows) are sorted. DS_ENOMEM. */
static ds_status rank0_rows_of(const struct ds_trace *t, const struct key *k,
                               struct rank0_rows *r) {
  size_t n = 0;
  for (size_t i = 0; i < t->n_rows; i++) n += k[i].rank == 0;
  r->n = 0;
  r->r = malloc((n + 1) * sizeof *r->r);
  if (!r->r) return DS_ENOMEM;
  for (size_t i = 0; i < t->n_rows; i++) {
    if (k[i].rank != 0) continue;
    const struct ds_trace_row *row = &t->rows[k[i].row];
    r->r[r->n++] = (struct rank0_row){{row_op(t, k[i].row), row->start_ns, row->end_ns},
                                      k[i].iter, 0};
  }
  qsort(r->r, r->n, sizeof *r->r, cmp_rank0_start);
  for (size_t i = 0; i < r->n; i++)
    r->r[i].max_end = i && r->r[i - 1].max_end > r->r[i].t.end_ns ? r->r[i - 1].max_end
                                                                  : r->r[i].t.end_ns;
  return DS_OK;
}

/* Appends to out[*n_out ..] the rows of r not of iteration iter that
 * overlap [lo, hi): a binary search for the last start before hi, then
 * back while an earlier row may still end after lo. */
static void rank0_rows_overlapping(const struct rank0_rows *r, int32_t iter, int64_t lo,
                                   int64_t hi, struct ds_timed_op *out, size_t *n_out) {
  size_t a = 0, b = r->n;
  while (a < b) {
    size_t mid = a + (b - a) / 2;
    if (r->r[mid].t.start_ns < hi)
      a = mid + 1;
    else
      b = mid;
  }
  for (size_t i = a; i-- > 0 && r->r[i].max_end > lo;)
    if (r->r[i].iter != iter && r->r[i].t.end_ns > lo) out[(*n_out)++] = r->r[i].t;
}

/* Metrics of one iteration (k[0..n) of t; the n_prev keys before k are
 * its earlier iterations, the keys after k[n - 1] up to t's n_rows its
 * later ones) by analysis/metrics.c, with rank 0's ops of the other
 * iterations (ds_metrics_measure_among); *t0 is its earliest start;
 * *whole, when not NULL, all of metrics.c's result (rank 0's window with
 * it). */
static ds_status measure_iter(const struct ds_trace *t, const struct rank0_rows *r0,
                              const struct key *k, size_t n, size_t n_prev, double *m,
                              int64_t *t0_out, struct ds_metrics *whole) {
  struct ds_timed_op *ops = malloc((n + 1) * sizeof *ops);
  if (!ops) return DS_ENOMEM;
  for (size_t i = 0; i < n; i++) {
    const struct ds_trace_row *r = &t->rows[k[i].row];
    ops[i] = (struct ds_timed_op){row_op(t, k[i].row), r->start_ns, r->end_ns};
  }
  struct ds_metrics mt;
  int64_t prev = keys_last_end(t, k - n_prev, n_prev, -1),
          prev_r0 = keys_last_end(t, k - n_prev, n_prev, 0);
  ds_status st = ds_metrics_measure(ops, n, prev, prev_r0, &mt);
  if (st == DS_OK && mt.rank0_own_step && n) {
    /* measured over rank 0's own step, inside its ops' span: again, with
     * rank 0's rows of the other iterations there */
    int64_t lo = INT64_MAX, hi = INT64_MIN;
    for (size_t i = 0; i < n; i++) {
      if (ops[i].op->rank != 0) continue;
      if (ops[i].start_ns < lo) lo = ops[i].start_ns;
      if (ops[i].end_ns > hi) hi = ops[i].end_ns;
    }
    struct ds_timed_op *more = realloc(ops, (n + r0->n + 1) * sizeof *ops);
    if (!more) {
      free(ops);
      return DS_ENOMEM;
    }
    ops = more;
    size_t n_other = 0;
    rank0_rows_overlapping(r0, k[0].iter, lo, hi, ops + n, &n_other);
    st = ds_metrics_measure_among(ops, n, ops + n, n_other, prev, prev_r0, &mt);
  }
  free(ops);
  DS_CHECK(st);
  for (int i = 0; i < IM_COUNT; i++) m[i] = mt.v[i];
  *t0_out = mt.t0_ns;
  if (whole) *whole = mt;
  return DS_OK;
}

static void describe(const struct ds_op *o, char *buf, size_t len) {
  snprintf(buf, len, "op %lld (rank %d, %s %s \"%s\", %.17g bytes)",
           (long long)o->id, o->rank, ds_stream_name(o->stream),
           ds_op_kind_name(o->kind), o->name, o->bytes);
}

/* Checks that measured iteration m[0..nm) holds exactly the ops of the
 * reference ref[0..nr), field by field. */
static ds_status check_same(const struct ds_compare *c, const struct key *ref,
                            size_t nr, const struct key *m, size_t nm,
                            struct ds_err *err) {
  char a[512], b[512];
  const char *head = "are not traces of one schedule";
  size_t i = 0, j = 0;
  while (i < nr || j < nm) {
    int order = j >= nm ? -1 : i >= nr ? 1
              : ref[i].rank != m[j].rank ? (ref[i].rank < m[j].rank ? -1 : 1)
              : ref[i].id != m[j].id ? (ref[i].id < m[j].id ? -1 : 1) : 0;
    if (order < 0) {
      describe(row_op(c->pred, ref[i].row), a, sizeof a);
      return ds_err_set(err, DS_EINPUT,
                        "%s and %s %s: %s of predicted iteration %d is missing "
                        "from measured iteration %d",
                        c->pred_path, c->meas_path, head, a, c->pred_iter,
                        m[0].iter);
    }
    if (order > 0) {
      describe(row_op(c->meas, m[j].row), a, sizeof a);
      return ds_err_set(err, DS_EINPUT,
                        "%s and %s %s: %s of measured iteration %d is not in "
                        "predicted iteration %d",
                        c->pred_path, c->meas_path, head, a, m[j].iter,
                        c->pred_iter);
    }
    if (j + 1 < nm && m[j + 1].rank == m[j].rank && m[j + 1].id == m[j].id)
      return ds_err_set(err, DS_EINPUT,
                        "%s: op %lld of rank %d appears twice in iteration %d",
                        c->meas_path, (long long)m[j].id, m[j].rank, m[j].iter);
    const struct ds_op *p = row_op(c->pred, ref[i].row);
    const struct ds_op *q = row_op(c->meas, m[j].row);
    if (p->stream != q->stream || p->kind != q->kind ||
        strcmp(p->name, q->name) != 0 || p->bytes != q->bytes) {
      describe(p, a, sizeof a);
      describe(q, b, sizeof b);
      return ds_err_set(err, DS_EINPUT,
                        "%s and %s %s: predicted iteration %d has %s, measured "
                        "iteration %d has %s",
                        c->pred_path, c->meas_path, head, c->pred_iter, a,
                        m[j].iter, b);
    }
    i++;
    j++;
  }
  return DS_OK;
}

static void dist(double *v, size_t n, struct ds_dist *d) {
  memset(d, 0, sizeof *d);
  d->n = n;
  if (n == 0) return;
  gsl_sort(v, 1, n);
  d->mean = gsl_stats_mean(v, 1, n);
  d->median = gsl_stats_quantile_from_sorted_data(v, 1, n, 0.5);
  d->p95 = gsl_stats_quantile_from_sorted_data(v, 1, n, 0.95);
  d->max = v[n - 1];
}

static void add_metric(struct ds_compare *c, const char *name, double pred,
                       double meas) {
  struct ds_metric *m = &c->metrics[c->n_metrics++];
  snprintf(m->name, sizeof m->name, "%s", name);
  m->pred = pred;
  m->meas = meas;
}

struct ranked {
  double abs_err;
  size_t i;
};

static int cmp_ranked(const void *a, const void *b) {
  const struct ranked *x = a, *y = b;
  if (x->abs_err != y->abs_err) return x->abs_err > y->abs_err ? -1 : 1;
  return (x->i > y->i) - (x->i < y->i);
}

/* One of rank 0's bucket collectives of the last micro-step: its bucket
 * and the op's index in c->ops. */
struct bucket_op {
  int32_t bucket;
  size_t i;
};

static int cmp_bucket_op(const void *a, const void *b) {
  const struct bucket_op *x = a, *y = b;
  if (x->bucket != y->bucket) return x->bucket < y->bucket ? -1 : 1;
  return (x->i > y->i) - (x->i < y->i);
}

/* Whether op o is rank 0's forward or loss (the micro-steps' boundaries). */
static int rank0_forward(const struct ds_op *o) {
  return o->rank == 0 && ds_metrics_class(o) == DS_METRICS_COMPUTE &&
         (o->kind == DS_OP_FWD || o->kind == DS_OP_LOSS);
}

/* The per-bucket (rank 0's bucket collectives of the last micro-step, once
 * per bucket, in bucket order) and per-rank metrics, from the ops. The
 * buckets are found by sorting the ops that have one, not by indexing an
 * array with the bucket number, which a trace may set to anything up to
 * 2^31 - 1. DS_ENOMEM when the scratch array cannot be allocated. */
static ds_status add_op_metrics(struct ds_compare *c) {
  size_t n = c->n_ops;
  char name[40];
  /* the last micro-step starts with the last forward (the same ops on
   * both sides: one schedule) */
  double pred_fwd = -INFINITY;
  for (size_t i = 0; i < n; i++)
    if (rank0_forward(c->ops[i].op) && c->ops[i].pred_start_ms > pred_fwd)
      pred_fwd = c->ops[i].pred_start_ms;
  struct bucket_op *bo = malloc((n + 1) * sizeof *bo);
  if (!bo) return DS_ENOMEM;
  size_t nb = 0;
  for (size_t i = 0; i < n; i++) {
    int32_t b = ds_metrics_bucket(c->ops[i].op);
    if (b >= 0 && c->ops[i].pred_start_ms >= pred_fwd) bo[nb++] = (struct bucket_op){b, i};
  }
  qsort(bo, nb, sizeof *bo, cmp_bucket_op);
  /* one bucket's collectives (a comm hook runs several): the first start
   * and the span to the last end, predicted and measured */
  for (size_t j = 0; j < nb;) {
    int32_t b = bo[j].bucket;
    const struct ds_compare_op *o = &c->ops[bo[j].i];
    double ps = o->pred_start_ms, pe = ps + o->pred_dur_ms;
    double ms = o->meas_start_ms, me = ms + o->meas_dur_ms;
    for (; j < nb && bo[j].bucket == b; j++) {
      o = &c->ops[bo[j].i];
      double ope = o->pred_start_ms + o->pred_dur_ms, ome = o->meas_start_ms + o->meas_dur_ms;
      if (o->pred_start_ms < ps) ps = o->pred_start_ms;
      if (ope > pe) pe = ope;
      if (o->meas_start_ms < ms) ms = o->meas_start_ms;
      if (ome > me) me = ome;
    }
    snprintf(name, sizeof name, "bucket%d_start_ms", b);
    add_metric(c, name, ps, ms);
    snprintf(name, sizeof name, "bucket%d_dur_ms", b);
    add_metric(c, name, pe - ps, me - ms);
  }
  free(bo);
  /* each rank's compute and communication sums, in one pass over the ops
   * (each rank's terms added in op order, as a pass per rank would) */
  size_t nr = (size_t)c->world_size;
  double *sum = calloc(4 * nr + 1, sizeof *sum);
  if (!sum) return DS_ENOMEM;
  double *pc = sum, *mc = pc + nr, *pm = mc + nr, *mm = pm + nr;
  for (size_t i = 0; i < n; i++) {
    const struct ds_compare_op *o = &c->ops[i];
    size_t r = (size_t)o->op->rank; /* < world_size: the reader's ranks */
    enum ds_metrics_class cls = ds_metrics_class(o->op);
    if (cls == DS_METRICS_HOST) continue; /* neither compute nor comm */
    if (cls == DS_METRICS_COMM) {
      pm[r] += o->pred_dur_ms;
      mm[r] += o->meas_dur_ms;
    } else {
      pc[r] += o->pred_dur_ms;
      mc[r] += o->meas_dur_ms;
    }
  }
  for (size_t r = 0; r < nr; r++) {
    snprintf(name, sizeof name, "rank%zu_compute_ms", r);
    add_metric(c, name, pc[r], mc[r]);
    snprintf(name, sizeof name, "rank%zu_comm_ms", r);
    add_metric(c, name, pm[r], mm[r]);
  }
  free(sum);
  return DS_OK;
}

/* Distributions and the top ops by |duration error| (both only with a
 * measured side), then the per-bucket and per-rank metrics, once the per-op
 * means are known. */
static ds_status summarize(struct ds_compare *c) {
  size_t n = c->n_ops;
  if (!c->meas) return add_op_metrics(c);
  double *v = malloc((n + 1) * sizeof *v);
  struct ranked *rk = malloc((n + 1) * sizeof *rk);
  if (!v || !rk) {
    free(v);
    free(rk);
    return DS_ENOMEM;
  }
  for (size_t i = 0; i < n; i++) v[i] = fabs(c->ops[i].pred_dur_ms - c->ops[i].meas_dur_ms);
  dist(v, n, &c->dur_abs_ms);
  size_t k = 0;
  for (size_t i = 0; i < n; i++)
    if (c->ops[i].meas_dur_ms > 0)
      v[k++] = fabs(c->ops[i].pred_dur_ms - c->ops[i].meas_dur_ms) / c->ops[i].meas_dur_ms;
  dist(v, k, &c->dur_rel);
  for (size_t i = 0; i < n; i++) v[i] = fabs(c->ops[i].pred_start_ms - c->ops[i].meas_start_ms);
  dist(v, n, &c->start_abs_ms);
  c->n_within_spread = 0;
  for (size_t i = 0; i < n; i++) {
    v[i] = c->ops[i].meas_dur_sd_ms;
    c->n_within_spread += fabs(c->ops[i].pred_dur_ms - c->ops[i].meas_dur_ms) <=
                          c->ops[i].meas_dur_sd_ms;
  }
  dist(v, c->n_meas_iters > 1 ? n : 0, &c->spread_sd_ms);
  k = 0;
  for (size_t i = 0; i < n; i++)
    if (c->ops[i].meas_dur_ms > 0)
      v[k++] = c->ops[i].meas_dur_sd_ms / c->ops[i].meas_dur_ms;
  dist(v, c->n_meas_iters > 1 ? k : 0, &c->spread_cv);
  for (size_t i = 0; i < n; i++)
    rk[i] = (struct ranked){fabs(c->ops[i].pred_dur_ms - c->ops[i].meas_dur_ms), i};
  qsort(rk, n, sizeof *rk, cmp_ranked);
  c->n_top = n < 5 ? n : 5;
  for (size_t i = 0; i < c->n_top; i++) c->top[i] = rk[i].i;
  free(v);
  free(rk);
  return add_op_metrics(c);
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* The iteration of lower-median time among iters[0..n) (ms[i] the time of
 * iters[i]), the first such on ties; n >= 1. */
static ds_status median_iter(const double *ms, const int32_t *iters, size_t n,
                             int32_t *out) {
  double *sorted = malloc(n * sizeof *sorted);
  if (!sorted) return DS_ENOMEM;
  memcpy(sorted, ms, n * sizeof *sorted);
  qsort(sorted, n, sizeof *sorted, cmp_double);
  double med = sorted[(n - 1) / 2];
  free(sorted);
  for (size_t i = 0; i < n; i++)
    if (ms[i] == med) {
      *out = iters[i];
      break;
    }
  return DS_OK;
}

/* Allocates ops and metrics for the reference iteration ref[0..nr) of
 * c->pred, measures it (pm: its per-iteration metrics) and fills each op's
 * predicted start and duration. */
static ds_status measure_pred(struct ds_compare *c, const struct rank0_rows *r0,
                              const struct key *ref, size_t nr, size_t n_prev, double *pm) {
  c->ops = calloc(nr + 1, sizeof *c->ops);
  /* the iteration's metrics, rank0_window_ms, each op's start and
   * duration, two per rank */
  c->metrics = calloc(IM_COUNT + 1 + 2 * nr + 2 * (size_t)c->world_size + 1, sizeof *c->metrics);
  if (!c->ops || !c->metrics) return DS_ENOMEM;
  int64_t t0;
  struct ds_metrics whole;
  DS_CHECK(measure_iter(c->pred, r0, ref, nr, n_prev, pm, &t0, &whole));
  c->rank0_own_step = whole.rank0_own_step;
  c->rank0_window_ms = whole.rank0_window_ms;
  c->n_ops = nr;
  for (size_t i = 0; i < nr; i++) {
    const struct ds_trace_row *r = &c->pred->rows[ref[i].row];
    c->ops[i].op = row_op(c->pred, ref[i].row);
    c->ops[i].pred_start_ms = (double)(r->start_ns - t0) / DS_UNITS_NS_PER_MS;
    c->ops[i].pred_dur_ms = (double)(r->end_ns - r->start_ns) / DS_UNITS_NS_PER_MS;
  }
  return DS_OK;
}

/* Measures the predicted iteration ref and every measured group, fills ops
 * and the per-iteration metrics; the n_prev keys before ref are the
 * predicted trace's earlier iterations. mk/nm: all measured keys. */
static ds_status join(struct ds_compare *c, const struct rank0_rows *pred_r0,
                      const struct key *ref, size_t nr, size_t n_prev,
                      const struct rank0_rows *meas_r0, const struct key *mk, size_t nm,
                      int32_t skip, struct ds_err *err) {
  ds_status st = DS_OK;
  double pm[IM_COUNT], mm[IM_COUNT], sum[IM_COUNT] = {0};
  double *m2 = calloc(nr + 1, sizeof *m2);
  double *iter_ms = malloc((nm + 1) * sizeof *iter_ms);
  c->meas_iters = malloc((nm + 1) * sizeof *c->meas_iters);
  c->left_out = malloc((nm + 1) * sizeof *c->left_out);
  if (!m2 || !iter_ms || !c->meas_iters || !c->left_out) {
    st = ds_err_set(err, DS_ENOMEM, "analyze: out of memory");
    goto out;
  }
  if ((st = measure_pred(c, pred_r0, ref, nr, n_prev, pm)) != DS_OK) {
    ds_err_set(err, st, "analyze: out of memory");
    goto out;
  }
  int64_t t0;
  int32_t group = 0;
  /* skip < 0: the leading measured iterations of another schedule are left
   * out (the first one's difference is the error when none joins). */
  int auto_match = skip < 0;
  struct ds_err first_diff = {0};
  for (size_t a = 0, b; a < nm; a = b) {
    for (b = a; b < nm && mk[b].iter == mk[a].iter; b++) {}
    if (group++ < skip) {
      c->n_skipped++;
      continue;
    }
    if (auto_match && c->n_meas_iters == 0) {
      struct ds_err why = {0};
      if (check_same(c, ref, nr, mk + a, b - a, &why) != DS_OK) {
        if (c->n_left_out == 0) first_diff = why;
        c->left_out[c->n_left_out++] = mk[a].iter;
        continue;
      }
    }
    DS_CHECK_GOTO(check_same(c, ref, nr, mk + a, b - a, err), st, out);
    DS_CHECK_GOTO(measure_iter(c->meas, meas_r0, mk + a, b - a, a, mm, &t0, NULL), st, out);
    size_t it = c->n_meas_iters++;
    c->meas_iters[it] = mk[a].iter;
    iter_ms[it] = mm[IM_iter_ms];
    for (int i = 0; i < IM_COUNT; i++) sum[i] += mm[i];
    double w = (double)(it + 1);
    for (size_t i = 0; i < nr; i++) { /* Welford's running mean and M2 */
      const struct ds_trace_row *r = &c->meas->rows[mk[a + i].row];
      struct ds_compare_op *o = &c->ops[i];
      double d = (double)(r->end_ns - r->start_ns) / DS_UNITS_NS_PER_MS;
      double s = (double)(r->start_ns - t0) / DS_UNITS_NS_PER_MS;
      double delta = d - o->meas_dur_ms;
      o->meas_dur_ms += delta / w;
      m2[i] += delta * (d - o->meas_dur_ms);
      o->meas_start_ms += (s - o->meas_start_ms) / w;
    }
  }
  if (c->n_meas_iters == 0 && c->n_left_out > 0) {
    st = first_diff.status;
    if (err) *err = first_diff;
    goto out;
  }
  if (c->n_meas_iters == 0) {
    /* the count the trace has, not the N asked for */
    st = skip > 0 ? ds_err_set(err, DS_EINPUT, "%s: no measured iterations left to "
                               "compare: --skip-measured %d skips all %d of them",
                               c->meas_path, skip, c->n_skipped)
                  : ds_err_set(err, DS_EINPUT, "%s: no measured iterations to compare",
                               c->meas_path);
    goto out;
  }
  for (size_t i = 0; i < nr; i++)
    c->ops[i].meas_dur_sd_ms =
        c->n_meas_iters > 1 ? sqrt(m2[i] / (double)(c->n_meas_iters - 1)) : 0;
  for (int i = 0; i < IM_COUNT; i++)
    add_metric(c, ds_metrics_name((enum ds_metric_id)i), pm[i], sum[i] / (double)c->n_meas_iters);
  c->meas_iter_sd_ms = c->n_meas_iters > 1
                           ? gsl_stats_sd(iter_ms, 1, c->n_meas_iters) : 0;
  /* The plotted measured iteration: the lower median of the iteration
   * times, the first such iteration on ties. */
  if (median_iter(iter_ms, c->meas_iters, c->n_meas_iters, &c->plot_meas_iter) != DS_OK ||
      summarize(c) != DS_OK)
    st = ds_err_set(err, DS_ENOMEM, "analyze: out of memory");
  for (size_t i = 0; i < c->n_meas_iters; i++)
    if (c->meas_iters[i] == c->plot_meas_iter) c->meas_iter_median_ms = iter_ms[i];
out:
  free(m2);
  free(iter_ms);
  return st;
}

/* Reads one trace of the analysis: one that cannot be opened is the user's
 * input (DS_EINPUT, exit 2, not 1), and so is one without rows. */
static ds_status read_trace(const char *path, struct ds_trace **t, struct ds_err *err) {
  ds_status st = ds_trace_read_csv(path, t, err);
  if (st == DS_EIO) {
    st = DS_EINPUT;
    if (err) err->status = st;
  }
  if (st == DS_OK && (*t)->n_rows == 0)
    st = ds_err_set(err, DS_EINPUT, "%s: the trace has no rows", ds_csvread_input_name(path));
  return st;
}

/* The keys [*a, *b) of iteration iter among the n sorted keys pk of the
 * trace at path: DS_EUSAGE when it has none, DS_EINPUT when an op appears
 * twice in it. */
static ds_status iter_range(const struct key *pk, size_t n, int32_t iter,
                            const char *path, size_t *a_out, size_t *b_out,
                            struct ds_err *err) {
  size_t a = 0, b;
  while (a < n && pk[a].iter != iter) a++;
  for (b = a; b < n && pk[b].iter == iter; b++) {}
  if (a == b)
    return ds_err_set(err, DS_EUSAGE, "%s: no rows of iteration %d (the trace has "
                      "iterations %d..%d)", path, iter, pk[0].iter, pk[n - 1].iter);
  for (size_t i = a + 1; i < b; i++)
    if (pk[i].rank == pk[i - 1].rank && pk[i].id == pk[i - 1].id)
      return ds_err_set(err, DS_EINPUT, "%s: op %lld of rank %d appears twice in "
                        "iteration %d", path, (long long)pk[i].id, pk[i].rank,
                        pk[i].iter);
  *a_out = a;
  *b_out = b;
  return DS_OK;
}

/* A measurement first and a prediction second are the two traces swapped:
 * every error would come out with its sign inverted, so the order is
 * refused with the command that has it right (DS_EUSAGE, exit 2). Two
 * predictions (two settings of ddpsim) or two measurements (two replays)
 * are comparisons a user means, taken in the order given. */
static ds_status check_order(const struct ds_compare *c, struct ds_err *err) {
  if (strcmp(c->pred->source, "real") != 0 || strcmp(c->meas->source, "sim") != 0)
    return DS_OK;
  return ds_err_set(err, DS_EUSAGE, "%s is a measured trace (source real) and %s a "
                    "predicted one (source sim), given in the wrong order: the "
                    "prediction comes first, as in `ddpsim analyze %s %s`, or every "
                    "error would have its sign inverted", c->pred_path, c->meas_path,
                    c->meas_path, c->pred_path);
}

static int32_t world_size(const struct ds_trace *t) {
  return t->owned ? t->owned->world_size : 1;
}

static ds_status default_iter(struct ds_compare *c, const struct rank0_rows *r0,
                              const struct key *pk, size_t n, struct ds_err *err);

ds_status ds_compare_load(const char *pred_path, const char *meas_path,
                          const struct ds_compare_options *opt,
                          struct ds_compare **out, struct ds_err *err) {
  ds_status st = DS_OK;
  struct key *pk = NULL, *mk = NULL;
  struct rank0_rows pr0 = {0}, mr0 = {0};
  struct ds_compare *c = calloc(1, sizeof *c);
  *out = NULL;
  /* "-" is read from standard input and named so from here on */
  const char *pred_in = pred_path, *meas_in = meas_path;
  pred_path = ds_csvread_input_name(pred_path);
  meas_path = ds_csvread_input_name(meas_path);
  if (!c || !(c->pred_path = strdup(pred_path)) || !(c->meas_path = strdup(meas_path)) ||
      !(c->label = strdup(pred_path))) {
    st = ds_err_set(err, DS_ENOMEM, "analyze: out of memory");
    goto out;
  }
  DS_CHECK_GOTO(read_trace(pred_in, &c->pred, err), st, out);
  DS_CHECK_GOTO(read_trace(meas_in, &c->meas, err), st, out);
  DS_CHECK_GOTO(check_order(c, err), st, out);
  if (sorted_keys(c->pred, &pk) != DS_OK || sorted_keys(c->meas, &mk) != DS_OK ||
      rank0_rows_of(c->pred, pk, &pr0) != DS_OK || rank0_rows_of(c->meas, mk, &mr0) != DS_OK) {
    st = ds_err_set(err, DS_ENOMEM, "analyze: out of memory");
    goto out;
  }
  int32_t ws_p = world_size(c->pred), ws_m = world_size(c->meas);
  c->world_size = ws_p > ws_m ? ws_p : ws_m;
  /* the first trace's iteration by the rule a lone trace has (load_one):
   * a measured first trace (two replays compared) gives its median one,
   * as `analyze` of it alone and its plot do */
  c->first_iter = pk[0].iter;
  c->last_iter = c->pred_iter = pk[c->pred->n_rows - 1].iter;
  c->iter_choice = opt && opt->pred_iter >= 0 ? DS_ITER_GIVEN
                   : strcmp(c->pred->source, "real") == 0 ? DS_ITER_MEDIAN
                                                           : DS_ITER_LAST;
  if (c->iter_choice == DS_ITER_GIVEN) c->pred_iter = opt->pred_iter;
  DS_CHECK_GOTO(default_iter(c, &pr0, pk, c->pred->n_rows, err), st, out);
  size_t a, b;
  DS_CHECK_GOTO(iter_range(pk, c->pred->n_rows, c->pred_iter, pred_path, &a, &b, err),
                st, out);
  DS_CHECK_GOTO(join(c, &pr0, pk + a, b - a, a, &mr0, mk, c->meas->n_rows,
                     opt ? opt->skip_measured : -1, err), st, out);
out:
  free(pk);
  free(mk);
  free(pr0.r);
  free(mr0.r);
  if (st != DS_OK) {
    ds_compare_free(c);
    return st;
  }
  *out = c;
  return DS_OK;
}

/* A lone trace's default iteration: a ddpsim trace's last, a ddpreal
 * trace's of median time (every iteration measured as the reported one).
 * Counts the iterations on the way. */
static ds_status default_iter(struct ds_compare *c, const struct rank0_rows *r0,
                              const struct key *pk, size_t n, struct ds_err *err) {
  ds_status st = DS_OK;
  double m[IM_COUNT];
  double *ms = malloc((n + 1) * sizeof *ms);
  int32_t *iters = malloc((n + 1) * sizeof *iters);
  if (!ms || !iters) {
    st = ds_err_set(err, DS_ENOMEM, "analyze: out of memory");
    goto out;
  }
  for (size_t a = 0, b; a < n; a = b) {
    for (b = a; b < n && pk[b].iter == pk[a].iter; b++) {}
    int64_t t0;
    if ((st = measure_iter(c->pred, r0, pk + a, b - a, a, m, &t0, NULL)) != DS_OK) {
      ds_err_set(err, st, "analyze: out of memory");
      goto out;
    }
    iters[c->n_iters] = pk[a].iter;
    ms[c->n_iters++] = m[IM_iter_ms];
  }
  if (c->iter_choice == DS_ITER_MEDIAN &&
      median_iter(ms, iters, c->n_iters, &c->pred_iter) != DS_OK)
    st = ds_err_set(err, DS_ENOMEM, "analyze: out of memory");
out:
  free(ms);
  free(iters);
  return st;
}

/* One trace alone: t (taken, also on failure) under the name path. */
static ds_status load_one(const char *path, struct ds_trace *t,
                          const struct ds_compare_options *opt, struct ds_compare **out,
                          struct ds_err *err) {
  ds_status st = DS_OK;
  struct key *pk = NULL;
  struct rank0_rows r0 = {0};
  struct ds_compare *c = calloc(1, sizeof *c);
  const char *label = opt && opt->label ? opt->label : path;
  double pm[IM_COUNT];
  *out = NULL;
  if (!c || !(c->pred_path = strdup(path)) || !(c->label = strdup(label))) {
    ds_trace_free(t);
    st = ds_err_set(err, DS_ENOMEM, "analyze: out of memory");
    goto out;
  }
  c->pred = t;
  if (opt && opt->skip_measured > 0) {
    st = ds_err_set(err, DS_EUSAGE, "%s: one trace has no measured side to skip "
                    "iterations of (give two traces, or pick the iteration)", path);
    goto out;
  }
  if (t->n_rows == 0) {
    st = ds_err_set(err, DS_EINPUT, "%s: the trace has no rows", path);
    goto out;
  }
  if (sorted_keys(c->pred, &pk) != DS_OK || rank0_rows_of(c->pred, pk, &r0) != DS_OK) {
    st = ds_err_set(err, DS_ENOMEM, "analyze: out of memory");
    goto out;
  }
  size_t n = c->pred->n_rows;
  c->world_size = world_size(c->pred);
  c->first_iter = pk[0].iter;
  c->last_iter = c->pred_iter = pk[n - 1].iter;
  c->iter_choice = opt && opt->pred_iter >= 0 ? DS_ITER_GIVEN
                   : strcmp(c->pred->source, "real") == 0 ? DS_ITER_MEDIAN
                                                           : DS_ITER_LAST;
  if (c->iter_choice == DS_ITER_GIVEN) c->pred_iter = opt->pred_iter;
  DS_CHECK_GOTO(default_iter(c, &r0, pk, n, err), st, out);
  size_t a, b;
  DS_CHECK_GOTO(iter_range(pk, n, c->pred_iter, path, &a, &b, err), st, out);
  if (measure_pred(c, &r0, pk + a, b - a, a, pm) != DS_OK) {
    st = ds_err_set(err, DS_ENOMEM, "analyze: out of memory");
    goto out;
  }
  for (int i = 0; i < IM_COUNT; i++) add_metric(c, ds_metrics_name((enum ds_metric_id)i), pm[i], 0);
  /* what rank 0's lines are measured over where it is not iter_ms (an
   * asynchronous parameter server: metrics.h), as ddpsim's summary says */
  if (c->rank0_own_step) add_metric(c, "rank0_window_ms", c->rank0_window_ms, 0);
  if (summarize(c) != DS_OK) {
    st = ds_err_set(err, DS_ENOMEM, "analyze: out of memory");
    goto out;
  }
out:
  free(pk);
  free(r0.r);
  if (st != DS_OK) {
    ds_compare_free(c);
    return st;
  }
  *out = c;
  return DS_OK;
}

ds_status ds_compare_load_one(const char *path, const struct ds_compare_options *opt,
                              struct ds_compare **out, struct ds_err *err) {
  struct ds_trace *t = NULL;
  *out = NULL;
  const char *name = ds_csvread_input_name(path); /* "-": standard input */
  if (opt && opt->skip_measured > 0)
    return ds_err_set(err, DS_EUSAGE, "%s: one trace has no measured side to skip "
                      "iterations of (give two traces, or pick the iteration)", name);
  DS_CHECK(read_trace(path, &t, err));
  return load_one(name, t, opt, out, err);
}

ds_status ds_compare_from_trace(const char *name, struct ds_trace *trace,
                                const struct ds_compare_options *opt,
                                struct ds_compare **out, struct ds_err *err) {
  return load_one(name, trace, opt, out, err);
}

void ds_compare_free(struct ds_compare *c) {
  if (!c) return;
  free(c->pred_path);
  free(c->meas_path);
  free(c->label);
  ds_trace_free(c->pred);
  ds_trace_free(c->meas);
  free(c->meas_iters);
  free(c->left_out);
  free(c->ops);
  free(c->metrics);
  free(c);
}

const struct ds_metric *ds_compare_metric(const struct ds_compare *c,
                                          const char *name) {
  for (size_t i = 0; i < c->n_metrics; i++)
    if (strcmp(c->metrics[i].name, name) == 0) return &c->metrics[i];
  return NULL;
}
