/*
 * Where rank 0 puts each op on the measured trace (replay.h): the record
 * every rank sends it, one clock shift per rank, each op's start and end.
 * Pure over the records gathered (no MPI, no device), so tests and the
 * fuzz harness (fuzz/readers.c) call it alone.
 */
#include <stdlib.h>

#include "replay.h"

/* Record layout, in int64s; n_ops is the busiest rank's op count. */
size_t ds_replay_rec_len(size_t n_ops, int32_t iters) {
  return 1 + (size_t)iters + 2 * n_ops * (size_t)iters;
}
size_t ds_replay_rec_time(size_t n_ops, int32_t iters, int32_t k, size_t i) {
  return 1 + (size_t)iters + 2 * ((size_t)k * n_ops + i);
}

/* Each rank's clock is placed on the trace by one shift (ds_replay_shifts)
 * and its iteration k at its own begin of k less that shift; op times
 * are read on the rank's own clock (CLOCK_MONOTONIC of its host).
 *
 * Why a single shift per rank keeps iterations in order: on one rank,
 * iteration k+1 begins after the barrier that follows the end of its
 * iteration k, so each rank's ops of k+1 are placed after its ops of k,
 * and the latest end of k+1 over the ranks is no earlier than that of k
 * (what ddpsim analyze checks, ds_trace_check_iter_ends): true for any
 * shift that is the same in every iteration. Placing every rank's
 * iteration k at rank 0's begin of k (ddpreal before 4520938) moved the
 * shift with rank 0's delays: a rank 0 descheduled between the barrier
 * and its begin moved every other rank's iteration late by that delay,
 * while their ops, waiting for rank 0 in collectives, already held it;
 * the iteration then ended after the next one (bench/real_trace_order.sh).
 *
 * Which shift: every iteration's begins follow one barrier, so rank q's
 * begin less rank 0's is the clocks' difference plus q's delay after the
 * barrier less rank 0's, a delay that is ~us and now and then a
 * descheduling (ms). The median over the kept iterations ignores those;
 * the first kept iteration alone (4520938) kept its delays in every
 * iteration: a rank descheduled 50 ms before its first kept begin had its
 * ops 50 ms early in every iteration, each iteration's max end - min start
 * (the p50 ddpreal prints) 50 ms long. What it does not correct: two
 * hosts' clocks that run at different rates (ppm: NTP slews
 * CLOCK_MONOTONIC) drift apart over the run, e.g. 10 ppm over 10 s is
 * 100 us, half of it at either end from the median; ranks on one host
 * share one clock and do not drift. */
static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

int ds_replay_shifts(const int64_t *all, size_t len, int32_t world, int32_t iters,
                     int64_t *shift) {
  int64_t *d = malloc((iters > 0 ? (size_t)iters : 1) * sizeof *d);
  if (!d) return -1;
  int64_t base = INT64_MAX;
  for (int32_t q = 0; q < world; q++) {
    const int64_t *rec = all + (size_t)q * len;
    for (int32_t k = 0; k < iters; k++) d[k] = rec[1 + k] - all[1 + k];
    qsort(d, (size_t)iters, sizeof *d, cmp_i64);
    shift[q] = iters > 0 ? d[(iters - 1) / 2] : 0;
    /* the earliest placed begin of iteration 0 goes at 0 */
    if (iters > 0 && rec[1] - shift[q] < base) base = rec[1] - shift[q];
  }
  for (int32_t q = 0; q < world; q++) shift[q] += iters > 0 ? base : 0;
  free(d);
  return 0;
}

int ds_replay_place(const int64_t *all, size_t len, const int64_t *shift, int32_t rank,
                    size_t most, int32_t iters, int32_t k, size_t own, int64_t *start,
                    int64_t *end) {
  const int64_t *rec = all + (size_t)rank * len;
  size_t at = ds_replay_rec_time(most, iters, k, own);
  int64_t s = rec[at], e = rec[at + 1];
  if (s < 0 || e < s) return -1;
  int64_t offset = rec[1 + (size_t)k] - shift[rank];
  *start = offset + s;
  *end = offset + e;
  return 0;
}
