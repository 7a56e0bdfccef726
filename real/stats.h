/*
 * Summary statistics of measured times (GSL): quantiles over iterations.
 */
#ifndef DS_REAL_STATS_H
#define DS_REAL_STATS_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

struct ds_quantiles {
  double p50, p95, p99, min, max;
};

/* Sorts x[0..n) in place and returns its quantiles (linear interpolation
 * between order statistics, gsl_stats_quantile_from_sorted_data); all zero
 * when n is 0. */
struct ds_quantiles ds_quantiles_of(double *x, size_t n);

#ifdef __cplusplus
}
#endif

#endif /* DS_REAL_STATS_H */
