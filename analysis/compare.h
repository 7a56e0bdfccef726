/*
 * Predicted against measured: joins two traces of one schedule op by op and
 * computes the metrics `ddpsim analyze` reports (docs/analysis.md defines
 * every one). One trace alone (ds_compare_load_one) gets the same metrics
 * of one of its iterations, with no measured side.
 *
 * Iterations. The predicted side stands for one iteration: its last one
 * (ddpsim's steady iteration, whose ids are the schedule's) unless
 * pred_iter says otherwise. A measured iteration joins when it holds
 * exactly that iteration's ops, joined on (rank, id) with equal stream,
 * kind, name and bytes. Without skip_measured (-1), the measured trace's
 * leading iterations that do not are left out (left_out: a ddpsim trace's
 * iteration 0, or 0 and 1 under --static-graph, run other buckets than the
 * steady schedule a replay holds), and every later one must join; with
 * skip_measured = N the first N are skipped and every later one must join.
 * Anything else is a trace of another schedule and is refused (DS_EINPUT)
 * naming both files and the first op that differs (of the first measured
 * iteration tried, when none joins). Times are taken from each iteration's own start (its
 * earliest op start over all ranks), and a measured value is the mean over
 * the measured iterations.
 *
 * One trace alone: the measured side is absent (meas == NULL, no measured
 * iterations, every meas field 0, no error distributions), and `pred` is
 * that trace, whether ddpsim's or ddpreal's. Its iteration is the one given,
 * else a ddpsim trace's last (the reported one) and a ddpreal trace's of
 * median iteration time.
 *
 * Ownership: a ds_compare owns its traces and everything it computed; the
 * paths and the label are copied.
 */
#ifndef DS_COMPARE_H
#define DS_COMPARE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "traces/trace.h"

#ifdef __cplusplus
extern "C" {
#endif

struct ds_compare_options {
  int32_t pred_iter;     /* predicted iteration to compare (one trace: its
                          * iteration); -1: the default (see above) */
  int32_t skip_measured; /* measured iterations to ignore at the start; -1:
                          * leave out the leading ones of another schedule */
  const char *label;     /* one trace: its name in the report and the plot
                          * title (borrowed); NULL: the path */
};

/* How a lone trace's iteration was chosen. */
enum ds_iter_choice {
  DS_ITER_GIVEN,  /* pred_iter */
  DS_ITER_LAST,   /* a ddpsim trace's last, the one its summary reports */
  DS_ITER_MEDIAN  /* a ddpreal trace's of median iteration time (the lower
                   * median, the first such on ties) */
};

/* One op of the compared iteration, times in ms from the iteration start. */
struct ds_compare_op {
  const struct ds_op *op; /* the predicted op (borrowed from the trace) */
  double pred_start_ms, pred_dur_ms;
  double meas_start_ms, meas_dur_ms; /* means over the measured iterations */
  double meas_dur_sd_ms;             /* sample stddev over them; 0 with one */
};

/* One reported number on both sides (ms unless the name says otherwise). */
struct ds_metric {
  char name[40];
  double pred, meas;
};

/* Distribution of one error over ops (GSL: mean, median, p95, max). */
struct ds_dist {
  size_t n;
  double mean, median, p95, max;
};

struct ds_compare {
  char *pred_path, *meas_path; /* meas_path NULL with one trace */
  char *label;                 /* one trace: options' label, else its path */
  struct ds_trace *pred, *meas; /* meas NULL: one trace alone */
  int32_t world_size;
  int32_t pred_iter;
  int32_t *meas_iters;      /* the measured iterations compared, ascending */
  int32_t *left_out;        /* leading measured iterations of another schedule */
  size_t n_left_out;
  int32_t n_skipped;        /* measured iterations skipped (skip_measured) */
  size_t n_meas_iters;
  int32_t plot_meas_iter;   /* the measured iteration of median time */
  double meas_iter_median_ms; /* ... its time (the lower median) */
  struct ds_compare_op *ops; /* sorted by (rank, id) */
  size_t n_ops;
  struct ds_metric *metrics;
  size_t n_metrics;
  double meas_iter_sd_ms;   /* run-to-run stddev of the iteration time */
  /* rank 0's window of the predicted iteration (analysis/metrics.h): its
   * own step, rank0_window_ms long, where rank0_own_step */
  int rank0_own_step;
  double rank0_window_ms;
  struct ds_dist dur_abs_ms;  /* |pred - meas| duration per op */
  struct ds_dist dur_rel;     /* |pred - meas| / meas, ops with meas > 0 */
  struct ds_dist start_abs_ms;/* |pred - meas| start from iteration start */
  struct ds_dist spread_sd_ms;/* per-op stddev over measured iterations */
  struct ds_dist spread_cv;   /* per-op stddev / mean, ops with mean > 0 */
  size_t n_within_spread;     /* ops whose |duration error| <= stddev */
  size_t top[5];              /* indices into ops, largest |duration error| */
  size_t n_top;
  /* One trace alone: how pred_iter was chosen, and the trace's iterations
   * (first..last, n of them). */
  enum ds_iter_choice iter_choice;
  int32_t first_iter, last_iter;
  size_t n_iters;
};

/* Reads both traces, joins and measures; "-" is standard input, named so in
 * the report and messages (base/csvread.h). Errors name the file (unreadable,
 * malformed, or the two traces of different schedules: DS_EINPUT, exit 2;
 * a measured trace (source real) first and a predicted one second, the two
 * swapped: DS_EUSAGE, exit 2; two of one source are compared as given).
 * *out is owned by the caller (ds_compare_free). */
ds_status ds_compare_load(const char *pred_path, const char *meas_path,
                          const struct ds_compare_options *opt,
                          struct ds_compare **out, struct ds_err *err);

/* One trace alone: reads it and measures one iteration (pred_iter, else
 * its default; options' skip_measured must be 0). The metrics' meas values
 * are 0. Errors as ds_compare_load's. *out is owned by the caller. */
ds_status ds_compare_load_one(const char *path, const struct ds_compare_options *opt,
                              struct ds_compare **out, struct ds_err *err);
/* As ds_compare_load_one, for a trace in memory (taken, also on failure;
 * self-contained: ds_trace_detach), called name in the report and errors. */
ds_status ds_compare_from_trace(const char *name, struct ds_trace *trace,
                                const struct ds_compare_options *opt,
                                struct ds_compare **out, struct ds_err *err);
void ds_compare_free(struct ds_compare *c);

/* The metric named name, or NULL. */
const struct ds_metric *ds_compare_metric(const struct ds_compare *c,
                                          const char *name);

enum ds_compare_format { DS_COMPARE_TEXT, DS_COMPARE_CSV, DS_COMPARE_JSON };

/* Prints the comparison (print.c). CSV: one row per metric (metric,
 * predicted,measured,abs_error,rel_error), or with per_op the per-op table
 * instead; text and JSON add the per-op rows to the report with per_op.
 * One trace alone: the same with only its values (CSV metric,value). */
void ds_compare_print(FILE *fp, const struct ds_compare *c,
                      enum ds_compare_format fmt, int per_op);

/* How c's iteration was chosen, for a report or a title (one trace alone):
 * "the last of 0..1", "median iteration time of 10, 0..9" (print.c). */
void ds__compare_iter_note(const struct ds_compare *c, char *buf, size_t cap);

#ifdef __cplusplus
}
#endif

#endif /* DS_COMPARE_H */
