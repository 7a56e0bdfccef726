/*
 * Tests for analysis/ from the review of traces/ and analysis/ (revana):
 * the metrics' sums of durations, the per-bucket and per-rank metrics, the
 * DDP logger's overlap without communication, and the timeline's lanes, on
 * hand-made ops whose answers are worked by hand.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "analysis/metrics.h"

/* One op of rank 0 on the compute stream. */
static struct ds_op compute_op(enum ds_op_kind kind) {
  struct ds_op o;
  memset(&o, 0, sizeof o);
  o.kind = kind;
  o.stream = DS_STREAM_COMPUTE;
  o.name = "a";
  o.layer = 0;
  o.bucket = -1;
  o.coll = -1;
  o.root = -1;
  o.algo = "";
  return o;
}

/* Finding 2: ten overlapping forward ops, each [0, 1e18] ns (the longest
 * time a trace holds), add up to 1e19 ns = 1e13 ms, past int64_t's 9.2e18:
 * fwd_ms is 1e13 (every partial sum k * 1e18 = k * 5^18 * 2^18 is a double
 * exactly), not a wrapped negative number. */
Test(analyze_checks, sums_of_long_overlapping_ops_do_not_overflow) {
  struct ds_op fwd = compute_op(DS_OP_FWD);
  struct ds_timed_op ops[10];
  for (int i = 0; i < 10; i++) ops[i] = (struct ds_timed_op){&fwd, 0, INT64_C(1000000000000000000)};
  struct ds_metrics m;
  cr_assert_eq(ds_metrics_measure(ops, 10, DS_METRICS_NO_PREVIOUS, &m), DS_OK);
  cr_assert_eq(m.v[DS_METRIC_fwd_ms], 1e13, "fwd_ms %.17g", m.v[DS_METRIC_fwd_ms]);
  cr_assert_eq(m.v[DS_METRIC_iter_ms], 1e12, "iter_ms %.17g", m.v[DS_METRIC_iter_ms]);
  cr_assert_eq(m.v[DS_METRIC_gpu_busy_ms], 1e12);
}
