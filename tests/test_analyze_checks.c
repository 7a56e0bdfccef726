/*
 * Tests for analysis/ from the review of traces/ and analysis/ (revana):
 * the metrics' sums of durations, the per-bucket and per-rank metrics, the
 * DDP logger's overlap without communication, and the timeline's lanes, on
 * hand-made ops whose answers are worked by hand.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analysis/compare.h"
#include "analysis/metrics.h"

#define HEADER                                                             \
  "id,rank,stream,kind,name,layer,bucket,coll,root,algo,bytes,flops,dur_us," \
  "deps,source,iter,start_us,end_us\n"

/* Writes the trace text to a fresh file and analyzes it alone (its last
 * iteration); the file is removed. */
static struct ds_compare *analyze_text(const char *text) {
  char path[] = "/tmp/ds_test_analyze_checks_XXXXXX";
  int fd = mkstemp(path);
  cr_assert_geq(fd, 0);
  FILE *fp = fdopen(fd, "w");
  cr_assert_not_null(fp);
  cr_assert_eq(fputs(text, fp) >= 0, 1);
  cr_assert_eq(fclose(fp), 0);
  struct ds_compare_options opt = {-1, 0, NULL};
  struct ds_compare *c = NULL;
  struct ds_err err = {0};
  ds_status st = ds_compare_load_one(path, &opt, &c, &err);
  unlink(path);
  cr_assert_eq(st, DS_OK, "analyze failed (%d): %s", st, err.msg);
  return c;
}

/* The metric's (predicted) value; it must exist. */
static double metric(const struct ds_compare *c, const char *name) {
  const struct ds_metric *m = ds_compare_metric(c, name);
  cr_assert_not_null(m, "no metric %s", name);
  return m->pred;
}

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
  cr_assert_eq(ds_metrics_measure(ops, 10, DS_METRICS_NO_PREVIOUS,
                                  DS_METRICS_NO_PREVIOUS, &m), DS_OK);
  cr_assert_eq(m.v[DS_METRIC_fwd_ms], 1e13, "fwd_ms %.17g", m.v[DS_METRIC_fwd_ms]);
  cr_assert_eq(m.v[DS_METRIC_iter_ms], 1e12, "iter_ms %.17g", m.v[DS_METRIC_iter_ms]);
  cr_assert_eq(m.v[DS_METRIC_gpu_busy_ms], 1e12);
}

/* Finding 3: bucket numbers are labels, not array sizes: buckets 3, 2 and
 * 1 (none 0) each get their rows (backward [0, 10] us, then each bucket's
 * all-reduce 10 us long), in bucket order whatever the file's order. */
Test(analyze_checks, any_bucket_number_gets_its_metrics) {
  /* the readers refuse a bucket at or above the row count (trace.c
   * check_dense in trace_read.c), so the largest here is 3 in 4 rows, listed out of
   * order and with bucket 0 missing */
  struct ds_compare *c = analyze_text(
      "# ddpsim-trace v2\n" HEADER
      "0,0,compute,bwd,b,0,-1,-1,-1,,0,0,10,,sim,0,0.000,10.000\n"
      "1,0,comm,allreduce,x,-1,2,0,-1,,4,0,10,0,sim,0,20.000,30.000\n"
      "2,0,comm,allreduce,y,-1,3,1,-1,,4,0,10,0,sim,0,10.000,20.000\n"
      "3,0,comm,allreduce,z,-1,1,2,-1,,4,0,10,0,sim,0,30.000,40.000\n"
      "# end: 4 rows\n");
  cr_assert_float_eq(metric(c, "bucket3_start_ms"), 0.010, 1e-12);
  cr_assert_float_eq(metric(c, "bucket2_start_ms"), 0.020, 1e-12);
  cr_assert_float_eq(metric(c, "bucket1_start_ms"), 0.030, 1e-12);
  cr_assert_float_eq(metric(c, "bucket1_dur_ms"), 0.010, 1e-12);
  cr_assert_null(ds_compare_metric(c, "bucket0_start_ms"));
  /* in bucket order, after the iteration metrics */
  const struct ds_metric *m1 = ds_compare_metric(c, "bucket1_start_ms");
  const struct ds_metric *m3 = ds_compare_metric(c, "bucket3_start_ms");
  cr_assert_lt(m1, m3);
  ds_compare_free(c);
}

/* Finding 6 (the per-rank sums in one pass): three ranks, ops listed rank by
 * rank, each rank r a compute op of (r + 1) * 10 us and an all-reduce of
 * 5 us, plus a host op that counts in neither: rank r's compute is
 * (r + 1) * 0.010 ms, its comm 0.005 ms, and the rows come in rank order. */
Test(analyze_checks, per_rank_sums_in_one_pass) {
  struct ds_compare *c = analyze_text(
      "# ddpsim-trace v2\n" HEADER
      "0,0,compute,bwd,b,0,-1,-1,-1,,0,0,10,,sim,0,0.000,10.000\n"
      "1,0,comm,allreduce,x,-1,0,0,-1,,4,0,5,0,sim,0,30.000,35.000\n"
      "2,0,host,fwd,launch,0,-1,-1,-1,,0,0,7,,sim,0,0.000,7.000\n"
      "0,1,compute,bwd,b,0,-1,-1,-1,,0,0,20,,sim,0,0.000,20.000\n"
      "1,1,comm,allreduce,x,-1,0,0,-1,,4,0,5,0,sim,0,30.000,35.000\n"
      "0,2,compute,bwd,b,0,-1,-1,-1,,0,0,30,,sim,0,0.000,30.000\n"
      "1,2,comm,allreduce,x,-1,0,0,-1,,4,0,5,0,sim,0,30.000,35.000\n"
      "# end: 7 rows\n");
  char name[40];
  const struct ds_metric *prev = NULL;
  for (int r = 0; r < 3; r++) {
    snprintf(name, sizeof name, "rank%d_compute_ms", r);
    cr_assert_float_eq(metric(c, name), (r + 1) * 0.010, 1e-12, "%s", name);
    const struct ds_metric *m = ds_compare_metric(c, name);
    cr_assert(prev == NULL || m > prev, "rank order");
    prev = m;
    snprintf(name, sizeof name, "rank%d_comm_ms", r);
    cr_assert_float_eq(metric(c, name), 0.005, 1e-12, "%s", name);
  }
  cr_assert_null(ds_compare_metric(c, "rank3_compute_ms"));
  ds_compare_free(c);
}

/* Finding 7: the DDP logger's overlap share is undefined (NaN, printed n/a)
 * without communication or without a bucket collective: one rank's
 * backward alone (--strategy single: comm_ms 0), and a backward with a
 * broadcast of buffers (bucket -1, 60 us of communication but no gradient
 * bucket: DataParallel's kind). Before, both read 0. */
Test(analyze_checks, ddp_overlap_pct_is_undefined_without_bucket_communication) {
  struct ds_op bwd = compute_op(DS_OP_BWD);
  struct ds_timed_op alone[1] = {{&bwd, 0, 100000}};
  struct ds_metrics m;
  cr_assert_eq(ds_metrics_measure(alone, 1, DS_METRICS_NO_PREVIOUS,
                                  DS_METRICS_NO_PREVIOUS, &m), DS_OK);
  cr_assert(isnan(m.v[DS_METRIC_ddp_overlap_pct]), "single: %g", m.v[DS_METRIC_ddp_overlap_pct]);
  struct ds_op bcast = compute_op(DS_OP_BROADCAST);
  bcast.stream = DS_STREAM_COMM;
  bcast.coll = 0;
  struct ds_timed_op with_bcast[2] = {{&bwd, 0, 100000}, {&bcast, 20000, 80000}};
  cr_assert_eq(ds_metrics_measure(with_bcast, 2, DS_METRICS_NO_PREVIOUS,
                                  DS_METRICS_NO_PREVIOUS, &m), DS_OK);
  cr_assert_float_eq(m.v[DS_METRIC_comm_ms], 0.060, 1e-12);
  cr_assert(isnan(m.v[DS_METRIC_ddp_overlap_pct]), "no bucket: %g",
            m.v[DS_METRIC_ddp_overlap_pct]);
}

/* Finding 8f (four scratch arrays, not five): the GPU's union takes the
 * compute and communication intervals together, at most n of them; with
 * every op one or the other and none overlapping (compute [0, 10], comm
 * [10, 30], compute [30, 40], comm [40, 45] us) it holds all four, and
 * under ASan a smaller array would be caught. comm 25 us, all exposed;
 * gpu_busy (compute only) 20 us. */
Test(analyze_checks, the_gpu_union_fits_every_op) {
  struct ds_op fwd = compute_op(DS_OP_FWD);
  struct ds_op ar = compute_op(DS_OP_ALLREDUCE);
  ar.stream = DS_STREAM_COMM;
  ar.bucket = 0;
  ar.coll = 0;
  struct ds_timed_op ops[4] = {
      {&fwd, 0, 10000}, {&ar, 10000, 30000}, {&fwd, 30000, 40000}, {&ar, 40000, 45000}};
  struct ds_metrics m;
  cr_assert_eq(ds_metrics_measure(ops, 4, DS_METRICS_NO_PREVIOUS,
                                  DS_METRICS_NO_PREVIOUS, &m), DS_OK);
  cr_assert_float_eq(m.v[DS_METRIC_comm_ms], 0.025, 1e-12);
  cr_assert_float_eq(m.v[DS_METRIC_exposed_comm_ms], 0.025, 1e-12);
  cr_assert_float_eq(m.v[DS_METRIC_gpu_busy_ms], 0.020, 1e-12);
  cr_assert_float_eq(m.v[DS_METRIC_iter_ms], 0.045, 1e-12);
}
