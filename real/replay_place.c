/*
 * Where rank 0 puts each op on the measured trace (replay.h): the record
 * every rank sends it, each rank's clock on the trace's timeline (one
 * shift; a fitted drift too for a rank on another host than rank 0's),
 * each op's start and end.
 * Pure over the records gathered (no MPI, no device), so tests and the
 * fuzz harness (fuzz/readers.c) call it alone.
 */
#include <gsl/gsl_errno.h>
#include <gsl/gsl_multifit.h>
#include <gsl/gsl_statistics_double.h>
#include <math.h>
#include <stdlib.h>

#include "replay.h"

/* Record layout, in int64s; n_ops is the busiest rank's op count. */
size_t ds_replay_rec_len(size_t n_ops, int32_t iters) {
  return 1 + (size_t)iters + 2 * n_ops * (size_t)iters;
}
size_t ds_replay_rec_time(size_t n_ops, int32_t iters, int32_t k, size_t i) {
  return 1 + (size_t)iters + 2 * ((size_t)k * n_ops + i);
}

/* Each rank's clock is placed on the trace by its own map
 * (ds_replay_clocks, ds_replay_clock_at) and its iteration k at its own
 * begin of k through that map; op times are read on the rank's own clock
 * (CLOCK_MONOTONIC of its host), ns since that begin.
 *
 * Why a map of the rank's own clock keeps iterations in order: on one
 * rank, iteration k+1 begins after the barrier that follows the end of its
 * iteration k, so each rank's ops of k+1 are placed after its ops of k,
 * and the latest end of k+1 over the ranks is no earlier than that of k
 * (what ddpsim analyze checks, ds_trace_check_iter_ends): true for any map
 * that is the same in every iteration and never decreasing (a shift; a
 * shift and a rate below 1, rounded). Placing every rank's iteration k at
 * rank 0's begin of k (ddpreal before 4520938) moved the placement with
 * rank 0's delays: a rank 0 descheduled between the barrier and its begin
 * moved every other rank's iteration late by that delay, while their ops,
 * waiting for rank 0 in collectives, already held it; the iteration then
 * ended after the next one (bench/real_trace_order.sh).
 *
 * Which shift: every iteration's begins follow one barrier, so rank q's
 * begin less rank 0's, d_k, is the clocks' difference plus q's delay after
 * the barrier less rank 0's, a delay that is ~us and now and then a
 * descheduling (ms). The median over the kept iterations ignores those;
 * the first kept iteration alone (4520938) kept its delays in every
 * iteration: a rank descheduled 50 ms before its first kept begin had its
 * ops 50 ms early in every iteration, each iteration's max end - min start
 * (the p50 ddpreal prints) 50 ms long. Ranks on rank 0's host read its
 * clock: the median is all they get, as before.
 *
 * Two hosts' clocks run at different rates (ppm: quartz, and NTP slewing
 * CLOCK_MONOTONIC) and drift apart over the run, e.g. 20 ppm over 10 s is
 * 200 us, half of it at either end from a single median shift. For a rank
 * on another host d_k is fitted as a + r * x_k, x_k rank 0's begin less
 * its first kept one; the rank's clock reads y = ref + (1 + r) x at rank
 * 0's time x, ref its reading at x = 0, so y is placed at x = (y - ref) /
 * (1 + r) (ds_replay_clock_at).
 *
 * The fit: the noise in d_k is each rank's delay after the barrier, one-
 * sided on each rank and heavy (a descheduling now and then), so in the
 * difference it is heavy above when q was late and below when rank 0 was.
 * Least squares follows those (a burst of 1-3 ms delays in the last 10% of
 * a run tilts it by ~50 ppm, test_real_replay_drift); a fit to the lower
 * envelope would follow rank 0's. GSL's bisquare (gsl_multifit_robust,
 * reweighted from least squares) gives the ms delays weight 0 whichever
 * side they are on: they are hundreds of its MAD scale from a jitter of
 * us; only delays within ~4.7 scales keep some weight, which moves the
 * offset by a fraction of the jitter and the drift not at all unless they
 * grow over the run. Its weights are symmetric, the delays are not, but
 * the asymmetric part is what gets weight 0. Measured against a Theil-Sen
 * slope (median over the pairs half the run apart, on gsl_stats_median)
 * on the same hand-made runs (20 ppm, rank 1 descheduled 0.2-5 ms in 1 of
 * 10 iterations, rank 0 in 1 of 20): both within 0.05 ppm over 2000
 * iterations; with the 10% burst 20.02 against 20.2 ppm; over 12
 * iterations with the last 2 descheduled 50-100 ms, 17-22 ppm against up
 * to 222 ppm (the median of 6 slopes is the mean of two, one of them
 * spoiled); both fail alike when a burst covers 30% of the run (a level
 * shift that long looks like drift). The offset a is then the median of
 * d_k - r x_k, as the one shift is the median of d_k. A fit GSL reports
 * not converged keeps the one shift.
 *
 * Fewer than DS_REPLAY_FIT_MIN_ITERS (30) kept iterations keep the one
 * shift: on such runs drawn 1000 times (200 ms iterations, delays as
 * above), the fit ended more than 50 us off the truth in 0 runs at 30
 * iterations, 5 at 20, 41 of 2000 at 10 (test_real_replay_drift's
 * thirty_iterations_hold_in_1000_drawn_runs); and where the clocks do not
 * drift, 30 iterations cost ~1 us of fit noise over the one shift.
 * --iters defaults to 5: no fit; a short run drifts little. A fitted
 * drift past DS_REPLAY_MAX_DRIFT_PPM (500 ppm) is not a clock's: Linux's
 * adjtimex slews a clock by at most MAXFREQ, 500000 ns/s
 * (include/linux/timex.h), ntpd's and chrony's limit too, and two quartz
 * clocks differ by tens of ppm; such a fit is noise (delays that grow over
 * the run), so the one shift is kept. The trace header says which each
 * rank on another host got (replay.c).
 *
 * Not corrected: a drift that changes within the run (NTP changing its
 * slew, a clock stepped): the fit is its average over the run. */
static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

int64_t ds_replay_clock_at(const struct ds_replay_clock *c, int64_t own_ns) {
  int64_t at = own_ns - c->shift_ns;
  if (c->rate != 0)
    at -= llround((double)(own_ns - c->ref_ns) * (c->rate / (1 + c->rate)));
  return at;
}

/* The drift of d (ns, less its median) against x (rank 0's ns since its
 * first kept begin) over n iterations, in ppm, by GSL's bisquare fit, in
 * s and us (so the slope is ppm and both columns are of order 1): 0, or
 * -1 out of memory, or 1 when the fit failed (did not converge, or no
 * finite slope). The GSL error handler is off meanwhile: its default
 * aborts, and gsl_multifit_robust reports a fit that did not converge
 * through it. */
static int drift_of(const double *x, const double *d, size_t n, double *ppm) {
  gsl_error_handler_t *was = gsl_set_error_handler_off();
  gsl_matrix *X = gsl_matrix_alloc(n, 2), *cov = gsl_matrix_alloc(2, 2);
  gsl_vector *y = gsl_vector_alloc(n), *c = gsl_vector_alloc(2);
  gsl_multifit_robust_workspace *w =
      gsl_multifit_robust_alloc(gsl_multifit_robust_bisquare, n, 2);
  int rc = -1;
  if (X && cov && y && c && w) {
    for (size_t k = 0; k < n; k++) {
      gsl_matrix_set(X, k, 0, 1);
      gsl_matrix_set(X, k, 1, x[k] / 1e9);
      gsl_vector_set(y, k, d[k] / 1e3);
    }
    int st = gsl_multifit_robust(X, y, c, cov, w);
    *ppm = gsl_vector_get(c, 1);
    rc = st == GSL_SUCCESS && isfinite(*ppm) ? 0 : st == GSL_ENOMEM ? -1 : 1;
  }
  gsl_multifit_robust_free(w);
  gsl_vector_free(c);
  gsl_vector_free(y);
  gsl_matrix_free(cov);
  gsl_matrix_free(X);
  gsl_set_error_handler(was);
  return rc;
}

int ds_replay_clocks(const int64_t *all, size_t len, int32_t world, int32_t iters,
                     const int32_t *host, struct ds_replay_clock *clock) {
  size_t n = iters > 0 ? (size_t)iters : 0, cap = n ? n : 1;
  int64_t *sorted = malloc(cap * sizeof *sorted);
  double *x = malloc(cap * sizeof *x), *d = malloc(cap * sizeof *d);
  double *scratch = malloc(cap * sizeof *scratch);
  int rc = -1;
  if (!sorted || !x || !d || !scratch) goto out;
  for (size_t k = 0; k < n; k++) x[k] = (double)(all[1 + k] - all[1]);
  int64_t base = INT64_MAX;
  for (int32_t q = 0; q < world; q++) {
    const int64_t *rec = all + (size_t)q * len;
    struct ds_replay_clock *c = &clock[q];
    *c = (struct ds_replay_clock){0, 0, 0, 0, DS_REPLAY_CLOCK_SAME_HOST};
    if (!n) continue;
    for (size_t k = 0; k < n; k++) sorted[k] = rec[1 + k] - all[1 + k];
    qsort(sorted, n, sizeof *sorted, cmp_i64);
    int64_t median = sorted[(n - 1) / 2];
    c->shift_ns = median;
    if (host && host[q] != host[0]) {
      if (n < DS_REPLAY_FIT_MIN_ITERS) {
        c->fit = DS_REPLAY_CLOCK_FEW_ITERS;
      } else {
        /* less the median first: the clocks' difference (since boot) is
         * past what a double holds to the ns */
        for (size_t k = 0; k < n; k++) d[k] = (double)(rec[1 + k] - all[1 + k] - median);
        double ppm = 0;
        int fit = drift_of(x, d, n, &ppm);
        if (fit < 0) goto out;
        c->fitted_ppm = fit == 0 ? ppm : 0;
        if (fit > 0) {
          c->fit = DS_REPLAY_CLOCK_NO_FIT;
        } else if (fabs(ppm) > DS_REPLAY_MAX_DRIFT_PPM) {
          c->fit = DS_REPLAY_CLOCK_IMPLAUSIBLE;
        } else {
          double r = ppm * 1e-6;
          for (size_t k = 0; k < n; k++) scratch[k] = d[k] - r * x[k];
          c->shift_ns = median + llround(gsl_stats_median(scratch, 1, n));
          c->ref_ns = all[1] + c->shift_ns;
          c->rate = r;
          c->fit = DS_REPLAY_CLOCK_FITTED;
        }
      }
    }
    /* the earliest placed begin of iteration 0 goes at 0 */
    int64_t first = ds_replay_clock_at(c, rec[1]);
    if (first < base) base = first;
  }
  for (int32_t q = 0; q < world && n; q++) clock[q].shift_ns += base;
  rc = 0;
out:
  free(sorted);
  free(x);
  free(d);
  free(scratch);
  return rc;
}

int ds_replay_place(const int64_t *all, size_t len, const struct ds_replay_clock *clock,
                    int32_t rank, size_t most, int32_t iters, int32_t k, size_t own,
                    int64_t *start, int64_t *end) {
  const int64_t *rec = all + (size_t)rank * len;
  size_t at = ds_replay_rec_time(most, iters, k, own);
  int64_t s = rec[at], e = rec[at + 1];
  if (s < 0 || e < s) return -1;
  int64_t begin = rec[1 + (size_t)k];
  *start = ds_replay_clock_at(&clock[rank], begin + s);
  *end = ds_replay_clock_at(&clock[rank], begin + e);
  return 0;
}
