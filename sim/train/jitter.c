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
#include <stdlib.h>

/* The generator and the lognormal's parameters of one fill. */
struct draws {
  gsl_rng *rng;
  double mu, sigma;
};

static ds_status draws_new(struct draws *d, double cv, uint64_t seed) {
  d->rng = gsl_rng_alloc(gsl_rng_mt19937);
  if (!d->rng) return DS_ENOMEM;
  /* gsl_rng_set takes an unsigned long, but GSL's mt19937 (rng/mt.c,
   * mt_set) keeps only its low 32 bits (mt[0] = s & 0xffffffff) and
   * replaces 0 by its default seed 4357: the options refuse 0 and seeds
   * past 2^32 - 1 (DS_SEED_MAX, sim/cli/options.h), which would repeat
   * another seed's draws. */
  gsl_rng_set(d->rng, (unsigned long)seed);
  double sigma2 = log1p(cv * cv);
  d->sigma = sqrt(sigma2);
  d->mu = -sigma2 / 2;
  return DS_OK;
}

static double draw(struct draws *d, const struct ds_op *op) {
  return op->stream == DS_STREAM_COMPUTE ? gsl_ran_lognormal(d->rng, d->mu, d->sigma) : 1.0;
}

ds_status ds_jitter_fill(const struct ds_schedule *sched, double cv, uint64_t seed,
                         double *scale) {
  struct draws d;
  DS_CHECK(draws_new(&d, cv, seed));
  for (size_t i = 0; i < sched->n_ops; i++) scale[i] = draw(&d, &sched->ops[i]);
  gsl_rng_free(d.rng);
  return DS_OK;
}

struct ds_jitter {
  struct draws d;
};

ds_status ds_jitter_new(double cv, uint64_t seed, struct ds_jitter **out) {
  struct ds_jitter *j = malloc(sizeof *j);
  *out = NULL;
  if (!j) return DS_ENOMEM;
  if (draws_new(&j->d, cv, seed) != DS_OK) {
    free(j);
    return DS_ENOMEM;
  }
  *out = j;
  return DS_OK;
}

double ds_jitter_next(struct ds_jitter *j, const struct ds_op *op) { return draw(&j->d, op); }

void ds_jitter_free(struct ds_jitter *j) {
  if (!j) return;
  gsl_rng_free(j->d.rng);
  free(j);
}

ds_status ds_jitter_fill_shared(const struct ds_shared_schedule *sched, double cv,
                                uint64_t seed, double *scale) {
  struct draws d;
  DS_CHECK(draws_new(&d, cv, seed));
  size_t i = 0; /* full-schedule order: blocks, their ranks, the slice */
  for (size_t b = 0; b < sched->n_blocks; b++) {
    const struct ds_sched_block *bl = &sched->blocks[b];
    for (int32_t j = 0; j < bl->n_ranks; j++)
      for (uint32_t k = 0; k < bl->n_ops; k++)
        scale[i++] = draw(&d, &sched->tmpl->ops[bl->first_op + k]);
  }
  gsl_rng_free(d.rng);
  return DS_OK;
}

void ds_jitter_quantiles(double *x, size_t n, double *p50, double *p95, double *p99) {
  gsl_sort(x, 1, n);
  *p50 = gsl_stats_quantile_from_sorted_data(x, 1, n, 0.50);
  *p95 = gsl_stats_quantile_from_sorted_data(x, 1, n, 0.95);
  *p99 = gsl_stats_quantile_from_sorted_data(x, 1, n, 0.99);
}

double ds_straggler_op_factor(const double *rank_factor, int32_t rank, const struct ds_op *o) {
  return rank_factor && o->stream == DS_STREAM_COMPUTE ? rank_factor[rank] : 1.0;
}
