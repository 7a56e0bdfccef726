/*
 * Measured points beside a predicted sweep (`--measured FILE.csv`,
 * docs/sweeps.md): reading a table of measured iteration times along the
 * one swept option, and the prediction's error at each measured point with
 * whether the predicted optimum is the measured one.
 */
#ifndef DS_SWEEP_MEASURED_H
#define DS_SWEEP_MEASURED_H

#include <stdint.h>
#include <stdio.h>

#include "base/status.h"
#include "sim/cli/options.h"
#include "sim/cli/sweep.h"

#ifdef __cplusplus
extern "C" {
#endif

struct ds_measured_point {
  double x;               /* the swept option's value; --comm-hook: the hook's index */
  double iter_ms;         /* 0.001 to 1e9 (1 us to 1e6 s) */
  double exposed_comm_ms; /* NAN where not given; at most iter_ms */
  int64_t line;           /* the file line the row began on */
};

struct ds_measured {
  struct ds_measured_point *p; /* owned, in file order */
  int32_t n, cap;
  int has_exposed;             /* the file has an exposed_comm_ms column */
};

/* Reads o->measured: CSV (RFC 4180, libcsv), `#` and blank lines skipped,
 * a header row naming the swept option's column (ds_options_var_column:
 * bucket_mb, world_size, ...), iter_ms and optionally exposed_comm_ms
 * (other columns ignored, so ddpsim's own --format csv output is one),
 * then one row per measured run; a --comm-hook value must be one of the
 * swept hooks. o sweeps exactly one option. Errors are DS_EINPUT naming
 * FILE:LINE (and :FIELD and the column for a bad value). */
ds_status ds_measured_load(const struct ds_options *o, struct ds_measured *out,
                           struct ds_err *err);

void ds_measured_release(struct ds_measured *m);

/* Where a measured x lies on the predicted curve. */
enum ds_measured_where {
  DS_MEASURED_EXACT,        /* a predicted configuration has this value */
  DS_MEASURED_INTERPOLATED, /* between two predicted values: linear in x */
  DS_MEASURED_OUTSIDE       /* outside the predicted values: no prediction */
};

struct ds_measured_error {
  enum ds_measured_where where;
  double predicted_ms, predicted_exposed_ms; /* NAN when outside */
  double err_ms, err_rel;                     /* predicted - measured, and / measured */
};

/* The comparison of n_pred predicted points (a sweep, in any order) with
 * m's points. */
struct ds_measured_cmp {
  struct ds_measured_error *e; /* owned, [m->n] */
  int32_t n_compared;          /* points not outside */
  double mean_abs_ms, max_abs_ms, mean_abs_rel, max_abs_rel;
  int32_t pred_best;           /* index into the predicted points */
  int32_t meas_best;           /* index into m's points, outside ones too (same criterion) */
  int32_t pred_best_measured;  /* the measured point the prediction ranks best of the
                                  compared ones; -1 when none is compared */
  int match;                   /* pred_best_measured's x is meas_best's */
};

/* Fills cmp: predictions at each measured x (exact within a relative
 * 1e-9, else linear between the neighbouring predicted values, which for
 * --comm-hook, whose values are names, never happens); "best" is the least
 * cost, iter_ms, or iter_ms / x when per_sample (ds_sweep_per_sample). */
ds_status ds_measured_compare(const struct ds_sweep_point *pred, int32_t n_pred,
                              int per_sample, const struct ds_measured *m,
                              struct ds_measured_cmp *cmp, struct ds_err *err);

void ds_measured_cmp_release(struct ds_measured_cmp *cmp);

/* Prints the comparison after a sweep's text report: a table of the
 * measured points with the prediction's absolute and relative error, the
 * mean and largest errors, and whether the optima match. */
void ds_measured_print(FILE *out, const struct ds_options *o, const struct ds_sweep_point *pred,
                       int32_t n_pred, const struct ds_measured *m,
                       const struct ds_measured_cmp *cmp);

/* The whole of the above for a run: the points of rows[0 .. n)
 * (configuration i's in row i) compared with m and printed. */
ds_status ds_measured_report(FILE *out, const struct ds_options *o,
                             const struct ds_summary *rows, int32_t n,
                             const struct ds_measured *m, struct ds_err *err);

#ifdef __cplusplus
}
#endif

#endif /* DS_SWEEP_MEASURED_H */
