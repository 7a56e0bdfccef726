/*
 * Where ddpreal's trace puts each rank's ops (real/replay.c,
 * ds_replay_place), from hand-made gathered records: no MPI, no device.
 */
#include <criterion/criterion.h>
#include <stdint.h>
#include <string.h>

#include "real/replay.h"

/* Two ranks, one op each, three kept iterations. The barrier between
 * iterations releases both ranks at 0, 20 and 60 us of rank 0's clock;
 * rank 1 runs on another host whose clock reads 5 s more. Rank 0's op
 * runs 8 us, rank 1's is an all-reduce that ends 9 us after both are in
 * it. In iteration 1 rank 0 is descheduled for 30 us between the barrier
 * and its begin: it begins at 50 us, and rank 1's all-reduce waits for it,
 * ending 39 us after rank 1's begin (59 us). The real timeline, rank 0's
 * clock: iteration 0 ends at 9 us, iteration 1 at 59 us, iteration 2 at
 * 69 us. */
enum { WORLD = 2, ITERS = 3, MOST = 1 };
static const int64_t us = 1000, skew1 = 5000000000; /* rank 1's clock, ns ahead */

static void fill_with(int64_t *all, size_t len, const int64_t begin[WORLD][ITERS],
                      const int64_t op[WORLD][ITERS][2]) {
  for (size_t k = 0; k < WORLD * len; k++) all[k] = -1;
  for (int q = 0; q < WORLD; q++) {
    int64_t *rec = all + (size_t)q * len;
    rec[0] = 0;
    for (int k = 0; k < ITERS; k++) {
      rec[1 + k] = begin[q][k];
      size_t at = ds_replay_rec_time(MOST, ITERS, k, 0);
      rec[at] = op[q][k][0];
      rec[at + 1] = op[q][k][1];
    }
  }
}

static void fill(int64_t *all, size_t len) {
  static const int64_t begin[WORLD][ITERS] = {{0, 50 * us, 60 * us},
                                              {skew1, skew1 + 20 * us, skew1 + 60 * us}};
  static const int64_t op[WORLD][ITERS][2] = {{{0, 8 * us}, {0, 8 * us}, {0, 8 * us}},
                                              {{0, 9 * us}, {0, 39 * us}, {0, 9 * us}}};
  fill_with(all, len, begin, op);
}

/* Both ranks as on one host (host NULL) and as on two: with 3 iterations,
 * fewer than a drift fit needs, the same one shift per rank. */
static void shifts(const int64_t *all, size_t len, struct ds_replay_clock *shift) {
  static const int32_t host[WORLD] = {0, 1};
  struct ds_replay_clock two[WORLD];
  cr_assert_eq(ds_replay_clocks(all, len, WORLD, ITERS, NULL, shift), 0);
  cr_assert_eq(ds_replay_clocks(all, len, WORLD, ITERS, host, two), 0);
  for (int q = 0; q < WORLD; q++) {
    cr_assert_eq(shift[q].fit, DS_REPLAY_CLOCK_SAME_HOST);
    cr_assert_eq(shift[q].rate, 0);
    cr_assert_eq(two[q].fit, q ? DS_REPLAY_CLOCK_FEW_ITERS : DS_REPLAY_CLOCK_SAME_HOST);
    cr_assert_eq(two[q].shift_ns, shift[q].shift_ns);
    cr_assert_eq(two[q].rate, 0);
  }
}

/* Places every rank's op of every iteration and expects want's start and
 * end; last_end[k] gets iteration k's latest end over the ranks. */
static void expect_placed(const int64_t *all, size_t len, const struct ds_replay_clock *shift,
                          const int64_t want[WORLD][ITERS][2], int64_t last_end[ITERS]) {
  for (int k = 0; k < ITERS; k++) {
    last_end[k] = 0;
    for (int q = 0; q < WORLD; q++) {
      int64_t start = -1, end = -1;
      cr_assert_eq(ds_replay_place(all, len, shift, q, MOST, ITERS, k, 0, &start, &end), 0);
      cr_expect_eq(start, want[q][k][0], "rank %d iteration %d: start %lld ns, expected %lld",
                   q, k, (long long)start, (long long)want[q][k][0]);
      cr_expect_eq(end, want[q][k][1], "rank %d iteration %d: end %lld ns, expected %lld", q,
                   k, (long long)end, (long long)want[q][k][1]);
      if (end > last_end[k]) last_end[k] = end;
    }
  }
}

/* Each rank's ops go at its own clock's distance from its first kept
 * begin: rank 1's iteration 1 at 20 us (its begin), ending at 59 us, as it
 * ran; rank 0's at 50 us. Placing rank 1 at rank 0's begin (50 us), as
 * ddpreal did, ended its iteration 1 at 89 us, after iteration 2's 69 us,
 * and ddpsim analyze refused the trace. */
Test(real_replay, each_rank_is_placed_by_its_own_begins) {
  size_t len = ds_replay_rec_len(MOST, ITERS);
  cr_assert_eq(len, 1 + ITERS + 2 * MOST * ITERS);
  int64_t all[WORLD * (1 + ITERS + 2 * MOST * ITERS)];
  fill(all, len);
  struct ds_replay_clock shift[WORLD];
  shifts(all, len, shift);
  static const int64_t want[WORLD][ITERS][2] = {
      {{0, 8 * us}, {50 * us, 58 * us}, {60 * us, 68 * us}},
      {{0, 9 * us}, {20 * us, 59 * us}, {60 * us, 69 * us}}};
  int64_t last_end[ITERS];
  expect_placed(all, len, shift, want, last_end);
  /* what ddpsim analyze checks (traces/trace_keys.c): iterations end in order */
  for (int k = 1; k < ITERS; k++)
    cr_assert_geq(last_end[k], last_end[k - 1], "iteration %d ends at %lld ns, before "
                  "iteration %d (%lld ns)", k, (long long)last_end[k], k - 1,
                  (long long)last_end[k - 1]);
}

/* A record without a time for the op (-1), or with an end before its
 * start, is refused and nothing is written. */
Test(real_replay, a_missing_or_reversed_time_is_refused) {
  size_t len = ds_replay_rec_len(MOST, ITERS);
  int64_t all[WORLD * (1 + ITERS + 2 * MOST * ITERS)];
  fill(all, len);
  struct ds_replay_clock shift[WORLD];
  shifts(all, len, shift);
  size_t at = ds_replay_rec_time(MOST, ITERS, 2, 0);
  all[len + at] = -1;
  int64_t start = 7, end = 7;
  cr_assert_eq(ds_replay_place(all, len, shift, 1, MOST, ITERS, 2, 0, &start, &end), -1);
  cr_assert_eq(start, 7);
  cr_assert_eq(end, 7);
  all[len + at] = 10 * us; /* its end is 9 us */
  cr_assert_eq(ds_replay_place(all, len, shift, 1, MOST, ITERS, 2, 0, &start, &end), -1);
  cr_assert_eq(end, 7);
}

/* The first kept iteration is no different: rank 1 is descheduled 30 us
 * between the barrier and its begin of iteration 0, and both ranks' ops
 * are all-reduces that end 9 us after both are in. Real timeline, rank
 * 0's clock: the barriers release at 0, 50 and 70 us; iteration 0 runs
 * 0-39 us on rank 0 (waiting for rank 1) and 30-39 us on rank 1,
 * iterations 1 and 2 run 50-59 and 70-79 us on both. Placing each rank by
 * its own first kept begin (4520938) put rank 1's later iterations 30 us
 * early (iteration 1 at 20-29 us), so each was 39 us from its first start
 * to its last end, not 9; the median of the begins' differences over the
 * iterations (30 us, 0, 0 past the clocks' 5 s) is the clocks'. */
Test(real_replay, a_rank_late_in_the_first_kept_iteration_is_not_late_in_the_others) {
  static const int64_t begin[WORLD][ITERS] = {{0, 50 * us, 70 * us},
                                              {skew1 + 30 * us, skew1 + 50 * us,
                                               skew1 + 70 * us}};
  static const int64_t op[WORLD][ITERS][2] = {{{0, 39 * us}, {0, 9 * us}, {0, 9 * us}},
                                              {{0, 9 * us}, {0, 9 * us}, {0, 9 * us}}};
  static const int64_t want[WORLD][ITERS][2] = {
      {{0, 39 * us}, {50 * us, 59 * us}, {70 * us, 79 * us}},
      {{30 * us, 39 * us}, {50 * us, 59 * us}, {70 * us, 79 * us}}};
  size_t len = ds_replay_rec_len(MOST, ITERS);
  int64_t all[WORLD * (1 + ITERS + 2 * MOST * ITERS)];
  fill_with(all, len, begin, op);
  struct ds_replay_clock shift[WORLD];
  shifts(all, len, shift);
  int64_t last_end[ITERS];
  expect_placed(all, len, shift, want, last_end);
}

/* Rank 0 late in the first kept iteration: no op is placed before 0 (the
 * earliest placed begin of iteration 0 is 0), here rank 1's, 30 us before
 * rank 0's. */
Test(real_replay, the_earliest_first_begin_is_at_0) {
  static const int64_t begin[WORLD][ITERS] = {{30 * us, 50 * us, 70 * us},
                                              {skew1, skew1 + 50 * us, skew1 + 70 * us}};
  static const int64_t op[WORLD][ITERS][2] = {{{0, 9 * us}, {0, 9 * us}, {0, 9 * us}},
                                              {{0, 39 * us}, {0, 9 * us}, {0, 9 * us}}};
  size_t len = ds_replay_rec_len(MOST, ITERS);
  int64_t all[WORLD * (1 + ITERS + 2 * MOST * ITERS)];
  fill_with(all, len, begin, op);
  struct ds_replay_clock shift[WORLD];
  shifts(all, len, shift);
  int64_t start0 = -1, end0 = -1, start1 = -1, end1 = -1;
  cr_assert_eq(ds_replay_place(all, len, shift, 0, MOST, ITERS, 0, 0, &start0, &end0), 0);
  cr_assert_eq(ds_replay_place(all, len, shift, 1, MOST, ITERS, 0, 0, &start1, &end1), 0);
  cr_expect_eq(start1, 0, "rank 1 starts at %lld ns", (long long)start1);
  cr_expect_eq(start0, 30 * us, "rank 0 starts at %lld ns", (long long)start0);
  cr_expect_eq(end0, end1, "both end at 39 us: %lld and %lld ns", (long long)end0,
               (long long)end1);
}
