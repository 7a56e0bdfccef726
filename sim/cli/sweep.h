/*
 * Sweeps (docs/sweeps.md): running the configurations of a cross product,
 * in this process or in worker processes, and what is said about the
 * whole sweep (the best configuration, the scaling of a world-size sweep,
 * the columns that say which configuration a row is, the points a plot or
 * a measured comparison sees; the plot itself is sweep_plot.h).
 */
#ifndef DS_SWEEP_H
#define DS_SWEEP_H

#include <stdint.h>
#include <stdio.h>

#include "base/config.h"
#include "base/status.h"
#include "sim/cli/options.h"
#include "sim/cli/report.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One configuration's summary as plain data that owns what it points to:
 * sum's strings point into the buffers below (ds_row_own sets them), and
 * sum.bucket_bytes is bucket_bytes. The names fit: their loaders refuse a
 * name of DS_NAME_CAP bytes or more (base/config.h). */
struct ds_row {
  struct ds_summary sum;
  char strategy[16], model[DS_NAME_CAP], topology[DS_NAME_CAP], gpu[DS_NAME_CAP], dtype[8];
  char net_model[16], coll_model[16], coll_algo[32], ddp_options[128];
  double *bucket_bytes; /* owned, [sum.n_buckets] */
};

/* Copies sum's strings into r's buffers and points sum at them; r->sum
 * must already hold the summary. Each string must fit its buffer (the
 * loaders bound the names; the others are the program's own words):
 * asserted, never cut. */
void ds_row_own(struct ds_row *r);

/* Frees r's bucket sizes (r may be NULL). */
void ds_row_release(struct ds_row *r);

/* Computes configuration i into row (zeroed on entry) and makes it owned
 * (ds_row_own, bucket_bytes malloc'ed); returns a status with err set. Called once per configuration, in a worker process when
 * jobs > 1. */
typedef ds_status (*ds_sweep_fn)(void *ctx, int64_t i, struct ds_row *row,
                                 struct ds_err *err);

/* Computes rows[0 .. n) with fn: in this process when jobs == 1 or n == 1,
 * else in up to jobs forked worker processes at a time (jobs 0: the online
 * cores), one per configuration, each returning its row through a pipe.
 * rows[i] is configuration i whatever the completion order. On failure the
 * error is that of the lowest failing configuration, and no new worker is
 * started. With show_progress set, a progress line goes to stderr when it is a
 * terminal (0: for work done on behalf of rows already counted). */
ds_status ds_sweep_run(int64_t n, int32_t jobs, ds_sweep_fn fn, void *ctx,
                       struct ds_row *rows, int show_progress, struct ds_err *err);

/* Which sweep variable varies, when exactly one does; -1 otherwise. */
int ds_sweep_single_var(const struct ds_options *o);

/* Fills the sweep-identity fields of s (report.h: has_sweep_ids and the
 * option values) from configuration c of the run whose options are all. */
void ds_sweep_set_ids(const struct ds_options *all, const struct ds_options *c,
                      struct ds_summary *s);

/* One row of a sweep of one option, as plots and comparisons see it. */
struct ds_sweep_point {
  double x;               /* the option's value; --comm-hook: index of the hook */
  double iter_ms;
  double exposed_comm_ms;
  char label[24];         /* the value as text ("25", "powersgd:4") */
  int over_memory;        /* its peak memory exceeds the GPU's: never the best */
};

/* The points of rows[0 .. n), configuration i's for row i, along the one
 * swept option of o (ds_sweep_single_var >= 0). */
void ds_sweep_points(const struct ds_options *o, const struct ds_summary *rows, int32_t n,
                     struct ds_sweep_point *out);

/* Whether the best of a sweep of var is judged per trained sample (world
 * size, batch, no_sync: more work per iteration) rather than by iteration
 * time; then the cost of a point is iter_ms / x, proportional to the time
 * per sample when only var varies. */
int ds_sweep_per_sample(enum ds_sweep_var var);

/* The iteration time a sweep ranks, plots and compares by: with --samples
 * N > 1 the median over the seeds (iter_p50_ms), not the first seed's noisy
 * one (iter_ms); and the throughput at that time. */
double ds_sweep_rank_ms(const struct ds_summary *r);
double ds_sweep_rank_samples_per_s(const struct ds_summary *r);

/* The row the closing line calls best (least iteration time for a bucket
 * sweep, least time per sample otherwise) among the rows whose peak memory
 * fits in the GPU's (ds_report_fits_memory); -1 when none fits. */
int32_t ds_sweep_best_row(const struct ds_options *o, const struct ds_summary *rows,
                          int32_t n);

/* Sets every row's has_scaling (1 when --world-size took several values)
 * and scaling_efficiency_pct (report.h): 100 x its samples/s per rank over
 * that of the baseline, the first row of the smallest world size among the
 * rows of the same strategy and the same values of every other swept
 * option, never a ratio across strategies; NAN (absent) for a strategy
 * that does not use the world size (single) or a baseline without
 * throughput. Throughput as ds_sweep_rank_samples_per_s (the median with
 * --samples). rows[i] is configuration i of o. DS_ENOMEM. */
ds_status ds_sweep_fill_scaling(const struct ds_options *o, struct ds_summary *rows, int32_t n,
                                struct ds_err *err);

/* The text closing line of a sweep of n > 1 rows: for a sweep of the
 * bucket cap alone, the best cap; otherwise the best configuration by time
 * per sample; how many lie within 1% of it; only rows that fit in the
 * GPU's memory ranked (none best when none fits); and for a sweep of the
 * world size alone each size's scaling efficiency over the smallest's
 * (ds_sweep_fill_scaling's, which must have filled rows). */
void ds_sweep_print_best(FILE *out, const struct ds_options *o,
                         const struct ds_summary *rows, int32_t n);

/* One warning per row whose peak memory exceeds the GPU's ("warning:
 * batch=1024: 82.33 GiB per GPU exceeds the A100-SXM4-80GB's 80.00 GiB of
 * memory; the largest batch per GPU that fits: N (X GiB)", or "no batch
 * fits: ..." when not even batch 1 does: ds_summary's fit_batch), and a
 * note per row above 94.8 % of it, where the measurement (up to 5.5 %
 * above the peak: report.h's DS_REPORT_PEAK_UNDER_MEASURED) may not fit
 * ("note: 77.20 GiB per GPU is 96.5 % of ...: it may not fit; the largest
 * batch per GPU within that margin: N (X GiB)"), naming its configuration
 * when there are several; gpu is the GPU's printable name. */
void ds_sweep_print_memory_warnings(FILE *out, const struct ds_options *o,
                                    const struct ds_summary *rows, int32_t n,
                                    const char *gpu);

#ifdef __cplusplus
}
#endif

#endif /* DS_SWEEP_H */
