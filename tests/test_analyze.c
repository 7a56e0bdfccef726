/*
 * `ddpsim analyze` and analysis/ on hand-built traces whose answers are
 * worked by hand: overlap metrics of a comparison and of one trace alone,
 * the mean and spread over measured iterations, the join's refusals, one
 * trace's formats and the Chrome JSON's events. Every trace here is one
 * rank's backward op b and all-reduce a (bucket 0), times in us:
 *
 *   hidden   b [0, 100)  a [20, 80)    comm 60, exposed 0,  overlap 100 %
 *   exposed  b [0, 100)  a [100, 160)  comm 60, exposed 60, overlap 0 %
 *   half     b [0, 100)  a [70, 130)   comm 60, exposed 30, overlap 50 %
 *
 * DDP logger overlap = backward end - first all-reduce start: 80, 0 (the
 * span is empty), 30 us. The binary under test is $DDPSIM_BIN as in
 * tests/test_cli.c. One trace alone (`ddpsim analyze TRACE.csv`) gets the
 * same numbers as its side of a comparison, from the same traces. The
 * command on recorded traces: test_analyze_cmd.c; the metrics on hand-made
 * ops and a run's own trace: test_analyze_metrics.c.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/support.h"
#include "analysis/compare.h"
#include "traces/trace.h"

#define EPS 1e-9

/* The two-op schedule: backward (id 0) and bucket 0's all-reduce (id 1). */
struct us_times {
  int64_t b0, b1, a0, a1;
};

static const struct us_times HIDDEN = {0, 100, 20, 80};
static const struct us_times EXPOSED = {0, 100, 100, 160};
static const struct us_times HALF = {0, 100, 70, 130};

/* Writes a trace of n iterations of the two ops; iteration i is times[i]
 * shifted by i * 1000 us. bytes: the all-reduce's; with_ar 0 leaves it out. */
static void write_trace(const char *path, const char *source,
                        const struct us_times *times, int n, double bytes,
                        int with_ar) {
  struct ds_schedule *s = NULL;
  cr_assert_eq(ds_schedule_new(1, &s), DS_OK);
  struct ds_op b = {.id = 0, .stream = DS_STREAM_COMPUTE, .kind = DS_OP_BWD,
                    .name = "fc", .layer = 0, .bucket = -1, .coll = -1, .root = -1,
                    .algo = ""};
  struct ds_op a = {.id = 1, .stream = DS_STREAM_COMM, .kind = DS_OP_ALLREDUCE,
                    .name = "bucket0", .layer = -1, .bucket = 0, .coll = 0,
                    .root = -1, .algo = "ring", .bytes = bytes};
  cr_assert_eq(ds_schedule_add(s, &b, NULL, 0, NULL), DS_OK);
  cr_assert_eq(ds_schedule_add(s, &a, NULL, 0, NULL), DS_OK);
  struct ds_trace *t = NULL;
  cr_assert_eq(ds_trace_new(source, &t), DS_OK);
  for (int i = 0; i < n; i++) {
    int64_t base = (int64_t)i * 1000000;
    struct ds_trace_row rb = {s, 0, i, base + times[i].b0 * 1000, base + times[i].b1 * 1000};
    struct ds_trace_row ra = {s, 1, i, base + times[i].a0 * 1000, base + times[i].a1 * 1000};
    cr_assert_eq(ds_trace_add(t, &rb), DS_OK);
    if (with_ar) cr_assert_eq(ds_trace_add(t, &ra), DS_OK);
  }
  struct ds_err err = {0};
  cr_assert_eq(ds_trace_write_csv(path, t, NULL, &err), DS_OK, "%s", err.msg);
  ds_trace_free(t);
  ds_schedule_free(s);
}

static struct ds_compare *compare(const struct us_times *pred, int np,
                                  const struct us_times *meas, int nm) {
  char p[128], m[128];
  ds_test_analyze_tmpname(p, sizeof p, "p");
  ds_test_analyze_tmpname(m, sizeof m, "m");
  write_trace(p, "sim", pred, np, 4096, 1);
  write_trace(m, "real", meas, nm, 4096, 1);
  struct ds_compare *c = NULL;
  struct ds_err err = {0};
  struct ds_compare_options opt = {.pred_iter = -1};
  cr_assert_eq(ds_compare_load(p, m, &opt, &c, &err), DS_OK, "%s", err.msg);
  unlink(p);
  unlink(m);
  return c;
}

static void expect(const struct ds_compare *c, const char *name, double pred,
                   double meas) {
  const struct ds_metric *m = ds_compare_metric(c, name);
  cr_assert(m != NULL, "no metric %s", name);
  cr_assert(fabs(m->pred - pred) < EPS, "%s predicted %.9f, expected %.9f", name,
            m->pred, pred);
  cr_assert(fabs(m->meas - meas) < EPS, "%s measured %.9f, expected %.9f", name,
            m->meas, meas);
}

Test(analyze, fully_hidden_allreduce_has_no_exposed_time) {
  struct ds_compare *c = compare(&HIDDEN, 1, &HIDDEN, 1);
  expect(c, "comm_ms", 0.060, 0.060);
  expect(c, "exposed_comm_ms", 0, 0);
  expect(c, "overlap_pct", 100, 100);
  /* DDP logger: backward end 100 - all-reduce start 20 = 80 us, the whole
   * 60 us all-reduce span under it. */
  expect(c, "ddp_overlap_ms", 0.080, 0.080);
  expect(c, "ddp_bwd_comm_ms", 0.060, 0.060);
  expect(c, "ddp_overlap_pct", 100, 100);
  expect(c, "iter_ms", 0.100, 0.100);
  ds_compare_free(c);
}

Test(analyze, fully_exposed_allreduce_is_all_exposed) {
  struct ds_compare *c = compare(&EXPOSED, 1, &EXPOSED, 1);
  expect(c, "exposed_comm_ms", 0.060, 0.060); /* = comm_ms */
  expect(c, "comm_ms", 0.060, 0.060);
  expect(c, "overlap_pct", 0, 0);
  expect(c, "ddp_overlap_ms", 0, 0); /* starts when backward ends */
  expect(c, "iter_ms", 0.160, 0.160);
  ds_compare_free(c);
}

Test(analyze, half_overlapped_allreduce_exposes_half) {
  /* Predicted hidden, measured half: the errors are the differences. */
  struct ds_compare *c = compare(&HIDDEN, 1, &HALF, 1);
  expect(c, "exposed_comm_ms", 0, 0.030);
  expect(c, "overlap_pct", 100, 50);
  expect(c, "ddp_overlap_ms", 0.080, 0.030); /* 100 - 70 us */
  expect(c, "ddp_overlap_pct", 100, 50);
  expect(c, "bucket0_start_ms", 0.020, 0.070);
  expect(c, "bucket0_dur_ms", 0.060, 0.060);
  /* Start errors: b 0, a 50 us; duration errors 0. */
  cr_assert(fabs(c->start_abs_ms.max - 0.050) < EPS);
  cr_assert(fabs(c->start_abs_ms.mean - 0.025) < EPS);
  cr_assert(fabs(c->dur_abs_ms.max) < EPS);
  ds_compare_free(c);
}

Test(analyze, measured_values_are_means_with_their_spread) {
  /* Backward 100 us then 110 us: mean 105, sample stddev sqrt(50) us;
   * predicted 100: duration error -5 us, relative 5/105. */
  struct us_times meas[] = {{0, 100, 20, 80}, {0, 110, 20, 80}};
  struct ds_compare *c = compare(&HIDDEN, 1, meas, 2);
  cr_assert_eq(c->n_meas_iters, 2);
  expect(c, "bwd_ms", 0.100, 0.105);
  expect(c, "iter_ms", 0.100, 0.105);
  cr_assert_eq(c->n_top, 2);
  const struct ds_compare_op *top = &c->ops[c->top[0]];
  cr_assert_eq(top->op->id, 0);
  cr_assert(fabs(top->meas_dur_sd_ms - sqrt(50) / 1e3) < EPS);
  cr_assert(fabs(c->dur_abs_ms.max - 0.005) < EPS);
  cr_assert(fabs(c->dur_rel.max - 5.0 / 105) < EPS);
  cr_assert_eq(c->n_within_spread, 2); /* 5 <= 7.07 us, and 0 <= 0 */
  ds_compare_free(c);
}

Test(analyze, the_predicted_iteration_is_the_last_by_default) {
  /* Predicted iteration 0 exposed, iteration 1 hidden: iteration 1 counts. */
  struct us_times pred[] = {EXPOSED, HIDDEN};
  struct ds_compare *c = compare(pred, 2, &HIDDEN, 1);
  cr_assert_eq(c->pred_iter, 1);
  expect(c, "exposed_comm_ms", 0, 0);
  ds_compare_free(c);
}

static void cli_refusal(double meas_bytes, int with_ar, const char *want) {
  char p[128], m[128], args[512];
  ds_test_analyze_tmpname(p, sizeof p, "rp");
  ds_test_analyze_tmpname(m, sizeof m, "rm");
  write_trace(p, "sim", &HIDDEN, 1, 4096, 1);
  write_trace(m, "real", &HIDDEN, 1, meas_bytes, with_ar);
  snprintf(args, sizeof args, "%s %s", p, m);
  struct ds_test_result r = ds_test_analyze(NULL, args);
  cr_assert_eq(r.status, 2, "stderr: %s", r.err);
  cr_assert(strstr(r.err, p) && strstr(r.err, m), "files not named: %s", r.err);
  cr_assert(strstr(r.err, want), "expected \"%s\" in: %s", want, r.err);
  cr_assert_str_empty(r.out);
  ds_test_release(&r);
  unlink(p);
  unlink(m);
}

Test(analyze, traces_of_different_schedules_are_refused) {
  cli_refusal(8192, 1, "op 1 (rank 0, comm allreduce \"bucket0\", 4096 bytes)");
}

Test(analyze, a_missing_op_is_refused_by_name) {
  cli_refusal(4096, 0, "op 1 (rank 0, comm allreduce \"bucket0\", 4096 bytes) of "
                       "predicted iteration 0 is missing from measured iteration 0");
}

Test(analyze, a_measurement_first_and_a_prediction_second_are_refused_as_swapped) {
  /* The swapped pair would print every error with its sign inverted and
   * exit 0; it is refused with the command in the right order. Two traces
   * of one source (two predictions, two replays) are compared as given. */
  char p[128], m[128], args[512], want[512];
  ds_test_analyze_tmpname(p, sizeof p, "sp");
  ds_test_analyze_tmpname(m, sizeof m, "sm");
  write_trace(p, "sim", &HIDDEN, 1, 4096, 1);
  write_trace(m, "real", &HALF, 1, 4096, 1);
  snprintf(args, sizeof args, "%s %s --format csv", m, p);
  struct ds_test_result r = ds_test_analyze(NULL, args);
  cr_assert_eq(r.status, 2, "stderr: %s", r.err);
  cr_assert_str_empty(r.out);
  snprintf(want, sizeof want, "%s is a measured trace (source real) and %s a predicted "
           "one (source sim), given in the wrong order", m, p);
  cr_assert(strstr(r.err, want), "expected \"%s\" in: %s", want, r.err);
  snprintf(want, sizeof want, "`ddpsim analyze %s %s`", p, m);
  cr_assert(strstr(r.err, want), "expected \"%s\" in: %s", want, r.err);
  ds_test_release(&r);
  const char *same[] = {"sim", "real"};
  for (int i = 0; i < 2; i++) {
    write_trace(p, same[i], &HIDDEN, 1, 4096, 1);
    write_trace(m, same[i], &HALF, 1, 4096, 1);
    snprintf(args, sizeof args, "%s %s --format csv", m, p);
    r = ds_test_analyze(NULL, args); /* HALF first: exposed 0.03 ms against 0 */
    cr_assert_eq(r.status, 0, "%s: stderr: %s", same[i], r.err);
    cr_assert(strstr(r.out, "\nexposed_comm_ms,0.030000,0.000000,0.030000,"), "%s: %s",
              same[i], r.out);
    ds_test_release(&r);
  }
  unlink(p);
  unlink(m);
}

static int count(const char *text, const char *needle) {
  int n = 0;
  for (const char *p = text; (p = strstr(p, needle)); p += strlen(needle)) n++;
  return n;
}

Test(analyze, chrome_json_has_one_complete_event_per_row) {
  char p[128], m[128], out[128], args[512];
  ds_test_analyze_tmpname(p, sizeof p, "cp");
  ds_test_analyze_tmpname(m, sizeof m, "cm");
  snprintf(out, sizeof out, "/tmp/ddpsim-analyze-%d-chrome.json", (int)getpid());
  struct us_times pred[] = {EXPOSED, HIDDEN}, meas[] = {HALF, HALF, HALF};
  write_trace(p, "sim", pred, 2, 4096, 1);
  write_trace(m, "real", meas, 3, 4096, 1);
  snprintf(args, sizeof args, "%s %s --chrome %s", p, m, out);
  struct ds_test_result r = ds_test_analyze(NULL, args);
  cr_assert_eq(r.status, 0, "stderr: %s", r.err);
  char *json = ds_test_slurp(out);
  cr_assert(strncmp(json, "{\"displayTimeUnit\": \"ms\", \"traceEvents\": [", 42) == 0);
  cr_assert_eq(count(json, "\"ph\": \"X\""), 2 * 2 + 3 * 2); /* rows of both */
  /* Balanced brackets outside strings, and nothing after the object. */
  int depth = 0, in_str = 0, min_depth = 0;
  size_t len = strlen(json);
  for (size_t i = 0; i < len; i++) {
    char ch = json[i];
    if (in_str) {
      if (ch == '\\') i++;
      else if (ch == '"') in_str = 0;
    } else if (ch == '"') in_str = 1;
    else if (ch == '{' || ch == '[') depth++;
    else if (ch == '}' || ch == ']') {
      depth--;
      if (depth == 0 && i + 2 < len) min_depth = -1; /* closed before the end */
    }
    if (depth < min_depth) min_depth = depth;
  }
  cr_assert_eq(depth, 0);
  cr_assert_eq(min_depth, 0);
  cr_assert_eq(in_str, 0);
  /* Measured all-reduce of iteration 2 at 2000 + 70 us for 60 us, pid 1. */
  cr_assert(strstr(json, "\"ts\": 2070.000, \"dur\": 60.000, \"pid\": 1, \"tid\": 1"),
            "%s", json);
  cr_assert(strstr(json, "\"measured rank 0\"") && strstr(json, "\"predicted rank 0\""));
  free(json);
  ds_test_release(&r);
  unlink(p);
  unlink(m);
  unlink(out);
}

/* ---- one trace alone ------------------------------------------------------ */

/* ds_compare_load_one of a trace written from times[0..n). */
static struct ds_compare *one(const char *source, const struct us_times *times, int n,
                              int32_t iter) {
  char p[128];
  ds_test_analyze_tmpname(p, sizeof p, "one");
  write_trace(p, source, times, n, 4096, 1);
  struct ds_compare *c = NULL;
  struct ds_err err = {0};
  struct ds_compare_options opt = {.pred_iter = iter};
  cr_assert_eq(ds_compare_load_one(p, &opt, &c, &err), DS_OK, "%s", err.msg);
  unlink(p);
  return c;
}

Test(analyze_one, a_lone_trace_has_the_metrics_of_its_iteration) {
  /* HALF: b [0, 100), a [70, 130): iteration 130 us, backward 100, comm 60
   * of which 30 after backward (exposed), overlap 50 %; the logger's
   * overlap 100 - 70 = 30 us of the 60 us comm span; bucket 0 from 70 us
   * for 60 us; no measured side, so every meas value is 0. */
  struct ds_compare *c = one("sim", &HALF, 1, -1);
  cr_assert_null(c->meas);
  cr_assert_eq(c->n_meas_iters, 0);
  cr_assert_eq(c->n_top, 0);
  cr_assert_eq(c->pred_iter, 0);
  expect(c, "iter_ms", 0.130, 0);
  expect(c, "bwd_ms", 0.100, 0);
  expect(c, "comm_ms", 0.060, 0);
  expect(c, "exposed_comm_ms", 0.030, 0);
  expect(c, "overlap_pct", 50, 0);
  expect(c, "ddp_bwd_compute_ms", 0.100, 0);
  expect(c, "ddp_bwd_comm_ms", 0.060, 0);
  expect(c, "ddp_overlap_ms", 0.030, 0);
  expect(c, "ddp_overlap_pct", 50, 0);
  expect(c, "bucket0_start_ms", 0.070, 0);
  expect(c, "bucket0_dur_ms", 0.060, 0);
  expect(c, "rank0_compute_ms", 0.100, 0);
  expect(c, "rank0_comm_ms", 0.060, 0);
  ds_compare_free(c);
}

Test(analyze_one, a_sim_trace_reports_its_last_iteration) {
  /* ddpsim's iteration 0 is the pre-rebuild one: the last is reported. */
  struct us_times t[] = {EXPOSED, HIDDEN};
  struct ds_compare *c = one("sim", t, 2, -1);
  cr_assert_eq(c->pred_iter, 1);
  cr_assert_eq(c->iter_choice, DS_ITER_LAST);
  cr_assert_eq(c->n_iters, 2);
  expect(c, "exposed_comm_ms", 0, 0);
  ds_compare_free(c);
  c = one("sim", t, 2, 0); /* asked for: iteration 0, all exposed */
  cr_assert_eq(c->iter_choice, DS_ITER_GIVEN);
  expect(c, "exposed_comm_ms", 0.060, 0);
  ds_compare_free(c);
}

Test(analyze_one, a_real_trace_reports_its_median_iteration) {
  /* Iteration times 160, 100, 130, 145 us: sorted 100 130 145 160, the
   * lower median 130 us is iteration 2 (HALF, exposed 30 us). */
  struct us_times t[] = {EXPOSED, HIDDEN, HALF, {0, 100, 85, 145}};
  struct ds_compare *c = one("real", t, 4, -1);
  cr_assert_eq(c->iter_choice, DS_ITER_MEDIAN);
  cr_assert_eq(c->pred_iter, 2);
  cr_assert_eq(c->first_iter, 0);
  cr_assert_eq(c->last_iter, 3);
  expect(c, "iter_ms", 0.130, 0);
  expect(c, "exposed_comm_ms", 0.030, 0);
  ds_compare_free(c);
}

/* Two replays compared: the first trace's iteration is chosen by the rule
 * it has alone (its median one, iteration 2 here), not its last (3, which
 * it was), so `analyze A B` and `analyze A` describe the same iteration of
 * A. A prediction first keeps its last. */
Test(analyze_one, a_real_first_trace_of_two_gives_its_median_iteration_too) {
  char a[128], b[128];
  ds_test_analyze_tmpname(a, sizeof a, "realA");
  ds_test_analyze_tmpname(b, sizeof b, "realB");
  struct us_times t[] = {EXPOSED, HIDDEN, HALF, {0, 100, 85, 145}};
  write_trace(a, "real", t, 4, 4096, 1);
  write_trace(b, "real", t, 2, 4096, 1);
  struct ds_compare *c = NULL, *alone = NULL;
  struct ds_err err = {0};
  struct ds_compare_options opt = {.pred_iter = -1, .skip_measured = -1};
  cr_assert_eq(ds_compare_load(a, b, &opt, &c, &err), DS_OK, "%s", err.msg);
  cr_assert_eq(ds_compare_load_one(a, &opt, &alone, &err), DS_OK, "%s", err.msg);
  cr_assert_eq(c->iter_choice, DS_ITER_MEDIAN);
  cr_assert_eq(c->pred_iter, 2);
  cr_assert_eq(c->pred_iter, alone->pred_iter);
  cr_assert(fabs(ds_compare_metric(c, "iter_ms")->pred - 0.130) < EPS);
  ds_compare_free(c);
  ds_compare_free(alone);
  write_trace(a, "sim", t, 4, 4096, 1);
  cr_assert_eq(ds_compare_load(a, b, &opt, &c, &err), DS_OK, "%s", err.msg);
  cr_assert_eq(c->iter_choice, DS_ITER_LAST);
  cr_assert_eq(c->pred_iter, 3);
  ds_compare_free(c);
  unlink(a);
  unlink(b);
}

Test(analyze_one, formats_print_its_values) {
  char p[128], args[512];
  ds_test_analyze_tmpname(p, sizeof p, "fmt");
  struct us_times t[] = {EXPOSED, HIDDEN, HALF};
  write_trace(p, "real", t, 3, 4096, 1); /* median: HALF, iteration 2 */
  snprintf(args, sizeof args, "%s --format csv", p);
  struct ds_test_result r = ds_test_analyze(NULL, args);
  cr_assert_eq(r.status, 0, "stderr: %s", r.err);
  const char *head = "metric,value\niter_ms,0.130000\nfwd_ms,0.000000\nbwd_ms,0.100000\n";
  cr_assert(strncmp(r.out, head, strlen(head)) == 0, "%s", r.out);
  cr_assert(strstr(r.out, "\nexposed_comm_ms,0.030000\noverlap_pct,50.000000\n"), "%s", r.out);
  cr_assert(strstr(r.out, "\nbucket0_start_ms,0.070000\nbucket0_dur_ms,0.060000\n"), "%s",
            r.out);
  ds_test_release(&r);
  snprintf(args, sizeof args, "%s --format csv --per-op", p);
  r = ds_test_analyze(NULL, args);
  cr_assert_str_eq(r.out, "rank,id,stream,kind,name,bucket,start_ms,dur_ms\n"
                          "0,0,compute,bwd,fc,-1,0.000000,0.100000\n"
                          "0,1,comm,allreduce,bucket0,0,0.070000,0.060000\n");
  ds_test_release(&r);
  snprintf(args, sizeof args, "%s --format json", p);
  r = ds_test_analyze(NULL, args);
  cr_assert(strstr(r.out, "\"source\": \"real\", \"iteration\": 2, \"chosen\": \"median\", "
                          "\"iterations\": {\"first\": 0, \"last\": 2, \"count\": 3}}"),
            "%s", r.out);
  cr_assert(strstr(r.out, "{\"metric\": \"exposed_comm_ms\", \"value\": 0.030000},"), "%s",
            r.out);
  ds_test_release(&r);
  snprintf(args, sizeof args, "%s --iter 0", p); /* text: iteration 0, exposed */
  r = ds_test_analyze(NULL, args);
  cr_assert(strstr(r.out, "(real): iteration 0 (as given; iterations 0..2)\n"), "%s", r.out);
  cr_assert(strstr(r.out, "\nexposed_comm_ms                0.0600\n"), "%s", r.out);
  ds_test_release(&r);
  unlink(p);
}

/* An undefined metric prints as the formats' empty value: "n/a" in text,
 * empty in CSV, null in JSON (it printed "nan" in CSV and broke JSON). */
Test(analyze_one, an_undefined_metric_prints_as_n_a_empty_and_null) {
  char p[128], args[512];
  ds_test_analyze_tmpname(p, sizeof p, "nocomm");
  struct us_times t[] = {{0, 100, 50, 50}};
  write_trace(p, "sim", t, 1, 4096, 1);
  const char *fmt[][2] = {{"text", "\nddp_overlap_pct                   n/a\n"},
                          {"csv", "\nddp_overlap_pct,\n"},
                          {"json", "{\"metric\": \"ddp_overlap_pct\", \"value\": null}"}};
  for (size_t i = 0; i < 3; i++) {
    snprintf(args, sizeof args, "%s --format %s", p, fmt[i][0]);
    struct ds_test_result r = ds_test_analyze(NULL, args);
    cr_assert_eq(r.status, 0, "stderr: %s", r.err);
    cr_assert(strstr(r.out, fmt[i][1]), "%s: %s", fmt[i][0], r.out);
    ds_test_release(&r);
  }
  unlink(p);
}
