/*
 * The summary of a run: its timing fields measured on the simulated
 * timeline (by analysis/metrics.c, the definitions `ddpsim analyze` applies
 * to a trace too), the quantities derived from a row, what the text and
 * the CSV/JSON forms share, and the choice of form. The forms themselves:
 * report_text.c, report_csv_json.c.
 */
#include "sim/cli/report.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/textout.h"
#include "base/units.h"
#include "analysis/metrics.h"
#include "sim/cli/report_impl.h"
#include "sim/coll/coll.h"

static void fill_timing(struct ds_summary *s, const struct ds_metrics *m) {
  s->iter_ms = m->v[DS_METRIC_iter_ms];
  s->fwd_ms = m->v[DS_METRIC_fwd_ms];
  s->bwd_ms = m->v[DS_METRIC_bwd_ms];
  s->step_ms = m->v[DS_METRIC_step_ms];
  s->comm_ms = m->v[DS_METRIC_comm_ms];
  s->exposed_comm_ms = m->v[DS_METRIC_exposed_comm_ms];
  s->overlap_pct = m->v[DS_METRIC_overlap_pct];
  s->gpu_busy_ms = m->v[DS_METRIC_gpu_busy_ms];
  s->host_exposed_ms = m->v[DS_METRIC_host_exposed_ms];
  s->rank0_own_step = m->rank0_own_step;
  s->rank0_window_ms = m->rank0_window_ms;
}

/* The metrics of ops[0 .. n) (taken: freed here; ops[n .. n + n_other)
 * are other iterations', ds_metrics_measure_among) into s's timing
 * fields: the one finish of both the full and the shared schedule's
 * measures. */
static ds_status measure_fill(struct ds_timed_op *ops, size_t n, size_t n_other,
                              int64_t prev_end_ns, int64_t prev_rank0_end_ns,
                              struct ds_summary *s) {
  struct ds_metrics m;
  ds_status st = ds_metrics_measure_among(ops, n, ops + n, n_other, prev_end_ns,
                                          prev_rank0_end_ns, &m);
  free(ops);
  DS_CHECK(st);
  fill_timing(s, &m);
  return DS_OK;
}

ds_status ds_report_measure(const struct ds_schedule *sched, size_t first, size_t n,
                            const int64_t *op_start, const int64_t *op_end,
                            struct ds_summary *s) {
  /* ds_metrics_last_end and ds_metrics_rank0_last_end of ops[0 .. first) */
  int64_t prev = DS_METRICS_NO_PREVIOUS, prev_r0 = DS_METRICS_NO_PREVIOUS;
  for (size_t i = 0; i < first; i++) {
    if (op_end[i] > prev) prev = op_end[i];
    if (sched->ops[i].rank == 0 && op_end[i] > prev_r0) prev_r0 = op_end[i];
  }
  return ds_report_measure_iter(sched->ops + first, n, op_start + first, op_end + first, prev,
                                prev_r0, s);
}

ds_status ds_report_measure_iter(const struct ds_op *op, size_t n, const int64_t *op_start,
                                 const int64_t *op_end, int64_t prev_end_ns,
                                 int64_t prev_rank0_end_ns, struct ds_summary *s) {
  return ds_report_measure_iter_among(op, n, op_start, op_end, NULL, 0, prev_end_ns,
                                      prev_rank0_end_ns, s);
}

ds_status ds_report_measure_iter_among(const struct ds_op *op, size_t n, const int64_t *op_start,
                                       const int64_t *op_end, const struct ds_ps_op_time *other,
                                       size_t n_other, int64_t prev_end_ns,
                                       int64_t prev_rank0_end_ns, struct ds_summary *s) {
  if (!other) n_other = 0;
  struct ds_timed_op *ops = malloc((n + n_other + 1) * sizeof *ops);
  if (!ops) return DS_ENOMEM;
  for (size_t i = 0; i < n; i++) ops[i] = (struct ds_timed_op){&op[i], op_start[i], op_end[i]};
  for (size_t i = 0; i < n_other; i++)
    ops[n + i] = (struct ds_timed_op){&op[other[i].op], other[i].start_ns, other[i].end_ns};
  return measure_fill(ops, n, n_other, prev_end_ns, prev_rank0_end_ns, s);
}

ds_status ds_report_times_new(const struct ds_shared_schedule *s, int full,
                              struct ds_report_times *t) {
  memset(t, 0, sizeof *t);
  t->s = s;
  size_t nt = s->tmpl->n_ops, slots = 0;
  t->slot_at = malloc((s->n_blocks + 1) * sizeof *t->slot_at);
  if (!t->slot_at) return DS_ENOMEM;
  for (size_t b = 0; b < s->n_blocks; b++) {
    t->slot_at[b] = slots;
    slots += (size_t)s->blocks[b].n_ranks;
  }
  t->slot_at[s->n_blocks] = slots;
  t->r0_start = malloc((nt + 1) * sizeof *t->r0_start);
  t->r0_end = malloc((nt + 1) * sizeof *t->r0_end);
  t->r0_slowed_ns = malloc((nt + 1) * sizeof *t->r0_slowed_ns);
  t->first_start = malloc((slots + 1) * sizeof *t->first_start);
  t->last_end = malloc((slots + 1) * sizeof *t->last_end);
  if (full) {
    t->start = malloc((s->n_ops + 1) * sizeof *t->start);
    t->end = malloc((s->n_ops + 1) * sizeof *t->end);
  }
  if (!t->r0_start || !t->r0_end || !t->r0_slowed_ns || !t->first_start || !t->last_end ||
      (full && (!t->start || !t->end))) {
    ds_report_times_release(t);
    return DS_ENOMEM;
  }
  ds_report_times_reset(t);
  return DS_OK;
}

void ds_report_times_reset(struct ds_report_times *t) {
  size_t slots = t->slot_at[t->s->n_blocks];
  for (size_t i = 0; i < t->s->tmpl->n_ops; i++) {
    t->r0_start[i] = t->r0_end[i] = -1;
    t->r0_slowed_ns[i] = 0;
  }
  for (size_t i = 0; i < slots; i++) {
    t->first_start[i] = INT64_MAX;
    t->last_end[i] = INT64_MIN;
  }
  for (size_t i = 0; t->start && i < t->s->n_ops; i++) t->start[i] = t->end[i] = -1;
}

void ds_report_times_release(struct ds_report_times *t) {
  free(t->r0_start);
  free(t->r0_end);
  free(t->r0_slowed_ns);
  free(t->slot_at);
  free(t->first_start);
  free(t->last_end);
  free(t->start);
  free(t->end);
  memset(t, 0, sizeof *t);
}

void ds_report_times_record(void *ctx, size_t block, int32_t rank, uint32_t op,
                            int64_t start_ns, int64_t end_ns) {
  struct ds_report_times *t = ctx;
  const struct ds_sched_block *bl = &t->s->blocks[block];
  size_t slot = t->slot_at[block] + (size_t)(rank - bl->first_rank);
  if (start_ns < t->first_start[slot]) t->first_start[slot] = start_ns;
  if (end_ns > t->last_end[slot]) t->last_end[slot] = end_ns;
  if (rank == 0) {
    t->r0_start[op] = start_ns;
    t->r0_end[op] = end_ns;
  }
  if (t->start) {
    size_t i = ds_shared_index(t->s, block, rank, op);
    t->start[i] = start_ns;
    t->end[i] = end_ns;
  }
}

ds_status ds_report_measure_shared(const struct ds_report_times *t, size_t b0, size_t b1,
                                   struct ds_summary *s) {
  const struct ds_shared_schedule *sh = t->s;
  /* The metrics read rank 0's ops whole and of every other op only its
   * start and end (the iteration's span): those come as one op of no rank
   * spanning every (block, rank)'s first start to last end. */
  static const struct ds_op span_op = {.rank = -1, .name = "", .layer = -1, .bucket = -1,
                                       .coll = -1, .root = -1, .algo = ""};
  size_t n = 1;
  for (size_t b = b0; b < b1; b++) n += sh->blocks[b].first_rank == 0 ? sh->blocks[b].n_ops : 0;
  struct ds_timed_op *ops = malloc(n * sizeof *ops);
  if (!ops) return DS_ENOMEM;
  n = 0;
  int64_t first = INT64_MAX, last = INT64_MIN, slowed = 0;
  int64_t prev = DS_METRICS_NO_PREVIOUS, prev_r0 = DS_METRICS_NO_PREVIOUS;
  for (size_t b = b0; b < b1; b++) {
    const struct ds_sched_block *bl = &sh->blocks[b];
    for (uint32_t k = 0; bl->first_rank == 0 && k < bl->n_ops; k++) {
      uint32_t op = bl->first_op + k;
      ops[n++] = (struct ds_timed_op){&sh->tmpl->ops[op], t->r0_start[op], t->r0_end[op]};
      slowed += t->r0_slowed_ns[op];
    }
    for (size_t i = t->slot_at[b]; i < t->slot_at[b + 1]; i++) {
      if (t->first_start[i] < first) first = t->first_start[i];
      if (t->last_end[i] > last) last = t->last_end[i];
    }
  }
  if (first <= last) ops[n++] = (struct ds_timed_op){&span_op, first, last};
  s->interference_ms = (double)slowed / DS_UNITS_NS_PER_MS;
  for (size_t i = 0; i < t->slot_at[b0]; i++)
    if (t->last_end[i] > prev) prev = t->last_end[i];
  /* rank 0's slot of a block is the block's first when it starts at rank 0 */
  for (size_t b = 0; b < b0; b++)
    if (sh->blocks[b].first_rank == 0 && t->last_end[t->slot_at[b]] > prev_r0)
      prev_r0 = t->last_end[t->slot_at[b]];
  return measure_fill(ops, n, 0, prev, prev_r0, s);
}

/* --calib's GPU (report.h calib_gpu_fit): the calib_gpu column's value and
 * the text's words for it. */
const struct ds__report_calib_gpu_name ds__report_calib_gpu_names[] = {
    [DS_CALIB_GPU_SAME] = {"this_gpu", "measured on this GPU"},
    [DS_CALIB_GPU_OTHER] = {"other_gpu", "another GPU's, standing in for this one's"},
    [DS_CALIB_GPU_UNNAMED] = {"not_named", "names no GPU: applied as this GPU's"}};

/* A double as the fewest of 15 to 17 significant digits that read back
 * as the same number (base/textout.h), for a "%.*g": an option's value as
 * the run used it, never rounded to another run's. */
int ds__report_exact_digits(double x) { return ds_textout_exact_digits(x); }

double ds_report_rank0_window_ms(const struct ds_summary *r) {
  return r->rank0_own_step ? r->rank0_window_ms : r->iter_ms;
}

double ds_report_waiting_ms(const struct ds_summary *r) {
  double rest = ds_report_rank0_window_ms(r) - r->gpu_busy_ms - r->exposed_comm_ms -
                r->host_exposed_ms;
  return rest > 0 ? rest : 0;
}

void ds_report_add_nccl_call(struct ds_summary *s, const char *algo) {
  enum ds_ar_algo a;
  enum ds_proto p;
  if (ds_allreduce_algo_parse(algo, &a, &p) != DS_OK || p >= DS_PROTO_COUNT) return;
  struct ds_summary_nccl_run *last = s->n_nccl_runs > 0 ? &s->nccl_runs[s->n_nccl_runs - 1] : NULL;
  if (last && last->algo == a && last->proto == p && s->nccl_calls_unlisted == 0) {
    last->calls++;
  } else if (s->n_nccl_runs < DS_SUMMARY_MAX_NCCL_RUNS && s->nccl_calls_unlisted == 0) {
    s->nccl_runs[s->n_nccl_runs++] = (struct ds_summary_nccl_run){
        .algo = (uint8_t)a, .proto = (uint8_t)p, .calls = 1};
  } else {
    s->nccl_calls_unlisted++;
  }
}

int ds_report_host_bound(const struct ds_summary *s) {
  return s->host_exposed_ms >= 0.1 * ds_report_rank0_window_ms(s) && s->host_exposed_ms > 0;
}

int32_t ds_summary_micro_steps(const struct ds_summary *s) {
  return (s->no_sync > 1 ? s->no_sync : 1) * (s->grad_accum > 1 ? s->grad_accum : 1);
}

double ds_report_peak_mem_gib(const struct ds_summary *s) {
  double m = s->peak_mem_gib;
  if (s->peak_mem_gib_gpu0 > m) m = s->peak_mem_gib_gpu0;
  if (s->peak_mem_gib_other > m) m = s->peak_mem_gib_other;
  return m;
}

int ds_report_fits_memory(const struct ds_summary *s) {
  return ds_report_peak_mem_gib(s) <= s->gpu_mem_gib;
}

int ds_report_fits_memory_with_margin(const struct ds_summary *s) {
  return ds_report_peak_mem_gib(s) / (1 - DS_REPORT_PEAK_UNDER_MEASURED) <= s->gpu_mem_gib;
}

int ds_report_print(FILE *fp, enum ds_format fmt, const struct ds_summary *rows, int32_t n) {
  switch (fmt) {
  case DS_FORMAT_CSV: return ds__report_print_csv(fp, rows, n);
  case DS_FORMAT_JSON: return ds__report_print_json(fp, rows, n);
  default:
    ds__report_print_text(fp, rows, n);
    return ferror(fp) ? EOF : 0;
  }
}
