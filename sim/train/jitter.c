/*
 * Kernel jitter and sample quantiles (see jitter.h). The draws depend only
 * on (schedule, cv, seed): one generator per run, consumed in op order, so
 * the same inputs and seed give the same timeline on any machine and in
 * any worker process.
 */
#include "sim/train/jitter.h"

#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>
#include <gsl/gsl_sort.h>
#include <gsl/gsl_statistics_double.h>
#include <math.h>

ds_status ds_jitter_fill(const struct ds_schedule *sched, double cv, uint64_t seed,
                         double *scale) {
  gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
  if (!rng) return DS_ENOMEM;
  /* gsl_rng_set takes an unsigned long (64 bits on Linux); mt19937 treats
   * seed 0 as its default seed 4357. */
  gsl_rng_set(rng, (unsigned long)seed);
  double sigma2 = log1p(cv * cv);
  double sigma = sqrt(sigma2), mu = -sigma2 / 2;
  for (size_t i = 0; i < sched->n_ops; i++)
    scale[i] = sched->ops[i].stream == DS_STREAM_COMPUTE
                   ? gsl_ran_lognormal(rng, mu, sigma)
                   : 1.0;
  gsl_rng_free(rng);
  return DS_OK;
}

void ds_jitter_quantiles(double *x, size_t n, double *p50, double *p95, double *p99) {
  gsl_sort(x, 1, n);
  *p50 = gsl_stats_quantile_from_sorted_data(x, 1, n, 0.50);
  *p95 = gsl_stats_quantile_from_sorted_data(x, 1, n, 0.95);
  *p99 = gsl_stats_quantile_from_sorted_data(x, 1, n, 0.99);
}
