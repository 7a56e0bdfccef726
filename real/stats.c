/*
 * Quantiles of measured times with GSL. With few samples (the default five
 * iterations) p95 and p99 interpolate between the two largest values, which
 * is what GSL's definition gives; the summary prints the sample count so
 * that nobody reads more into p99 than is there.
 */
#include "stats.h"

#include <gsl/gsl_sort.h>
#include <gsl/gsl_statistics_double.h>

struct ds_quantiles ds_quantiles_of(double *x, size_t n) {
  struct ds_quantiles q = {0, 0, 0, 0, 0};
  if (n == 0) return q;
  gsl_sort(x, 1, n);
  q.p50 = gsl_stats_quantile_from_sorted_data(x, 1, n, 0.50);
  q.p95 = gsl_stats_quantile_from_sorted_data(x, 1, n, 0.95);
  q.p99 = gsl_stats_quantile_from_sorted_data(x, 1, n, 0.99);
  q.min = x[0];
  q.max = x[n - 1];
  return q;
}
