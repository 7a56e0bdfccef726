/*
 * `ddpsim analyze` and analysis/: overlap metrics on hand-built traces whose
 * answers are worked by hand, the DDP-logger overlap on the same, the mean
 * and spread over measured iterations, the join's refusals, the output
 * formats, determinism, the Chrome JSON and the plot. Every trace here is
 * one rank's backward op b and all-reduce a (bucket 0), times in us:
 *
 *   hidden   b [0, 100)  a [20, 80)    comm 60, exposed 0,  overlap 100 %
 *   exposed  b [0, 100)  a [100, 160)  comm 60, exposed 60, overlap 0 %
 *   half     b [0, 100)  a [70, 130)   comm 60, exposed 30, overlap 50 %
 *
 * DDP logger overlap = backward end - first all-reduce start: 80, 0 (the
 * span is empty), 30 us. The binary under test is $DDPSIM_BIN as in
 * tests/test_cli.c. One trace alone (`ddpsim analyze TRACE.csv`) gets the
 * same numbers as its side of a comparison, from the same traces.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/options_help.h"
#include "tests/support.h"
#include "analysis/analyze.h"
#include "analysis/compare.h"
#include "analysis/metrics.h"
#include "analysis/overlap.h"
#include "sim/cli/report.h"
#include "traces/trace.h"

#define H100 "bench/results/gpu-2026-11-23-h100/"
#define EPS 1e-9

/* `env ddpsim analyze args`. */
static struct ds_test_result run(const char *env, const char *args) {
  char cmd[8192];
  snprintf(cmd, sizeof cmd, "analyze %s", args);
  return ds_test_run(env ? env : "", ds_test_ddpsim(), cmd);
}

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

static void tmpname(char *buf, size_t n, const char *tag) {
  snprintf(buf, n, "/tmp/ddpsim-analyze-%d-%s.csv", (int)getpid(), tag);
}

static struct ds_compare *compare(const struct us_times *pred, int np,
                                  const struct us_times *meas, int nm) {
  char p[128], m[128];
  tmpname(p, sizeof p, "p");
  tmpname(m, sizeof m, "m");
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

Test(analyze, overlap_functions_agree_with_the_simulator_summary) {
  /* sim/cli/report.c's ds_report_measure over the same half-overlapped ops. */
  struct ds_schedule *s = NULL;
  cr_assert_eq(ds_schedule_new(1, &s), DS_OK);
  struct ds_op b = {.id = 0, .stream = DS_STREAM_COMPUTE, .kind = DS_OP_BWD,
                    .name = "fc", .bucket = -1, .coll = -1, .root = -1};
  struct ds_op a = {.id = 1, .stream = DS_STREAM_COMM, .kind = DS_OP_ALLREDUCE,
                    .name = "bucket0", .bucket = 0, .coll = 0, .root = -1};
  struct ds_op b2 = b;
  b2.id = 2;
  cr_assert_eq(ds_schedule_add(s, &b, NULL, 0, NULL), DS_OK);
  cr_assert_eq(ds_schedule_add(s, &a, NULL, 0, NULL), DS_OK);
  cr_assert_eq(ds_schedule_add(s, &b2, NULL, 0, NULL), DS_OK);
  int64_t start[] = {0, 70000, 120000}, end[] = {100000, 130000, 125000};
  struct ds_summary sum = {0};
  ds_report_measure(s, 0, 3, start, end, &sum);
  struct ds_interval comm[] = {{70000, 130000}};
  struct ds_interval comp[] = {{120000, 125000}, {0, 100000}};
  size_t nc = ds_overlap_merge(comp, 2);
  int64_t e = ds_overlap_uncovered_ns(comm, 1, comp, nc);
  cr_assert_eq(e, 25000); /* 30 us after backward, less 5 us of b2 */
  cr_assert(fabs(sum.exposed_comm_ms - (double)e / 1e6) < EPS);
  cr_assert(fabs(sum.comm_ms - (double)ds_overlap_total_ns(comm, 1) / 1e6) < EPS);
  ds_schedule_free(s);
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
  tmpname(p, sizeof p, "rp");
  tmpname(m, sizeof m, "rm");
  write_trace(p, "sim", &HIDDEN, 1, 4096, 1);
  write_trace(m, "real", &HIDDEN, 1, meas_bytes, with_ar);
  snprintf(args, sizeof args, "%s %s", p, m);
  struct ds_test_result r = run(NULL, args);
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
  tmpname(p, sizeof p, "sp");
  tmpname(m, sizeof m, "sm");
  write_trace(p, "sim", &HIDDEN, 1, 4096, 1);
  write_trace(m, "real", &HALF, 1, 4096, 1);
  snprintf(args, sizeof args, "%s %s --format csv", m, p);
  struct ds_test_result r = run(NULL, args);
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
    r = run(NULL, args); /* HALF first: exposed 0.03 ms against 0 */
    cr_assert_eq(r.status, 0, "%s: stderr: %s", same[i], r.err);
    cr_assert(strstr(r.out, "\nexposed_comm_ms,0.030000,0.000000,0.030000,"), "%s: %s",
              same[i], r.out);
    ds_test_release(&r);
  }
  unlink(p);
  unlink(m);
}

Test(analyze, an_unreadable_trace_exits_2_naming_it) {
  struct ds_test_result r = run(NULL, H100 "p1.csv /nonexistent/measured.csv");
  cr_assert_eq(r.status, 2, "stderr: %s", r.err);
  cr_assert(strstr(r.err, "/nonexistent/measured.csv"), "%s", r.err);
  ds_test_release(&r);
  r = run(NULL, H100 "p1.csv " H100 "s1.csv"); /* a schedule, not a trace */
  cr_assert_eq(r.status, 2, "stderr: %s", r.err);
  cr_assert(strstr(r.err, "s1.csv"), "%s", r.err);
  ds_test_release(&r);
}

Test(analyze, bad_usage_exits_2) {
  const char *bad[] = {"", H100 "p1.csv " H100 "t1-spin.csv " H100 "t2-spin.csv",
                       H100 "p1.csv " H100 "t1-spin.csv --format xml",
                       H100 "p1.csv " H100 "t1-spin.csv --plot out.jpg",
                       H100 "p1.csv " H100 "t1-spin.csv --pred-iter 7",
                       H100 "p1.csv " H100 "t1-spin.csv --bogus 1"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    struct ds_test_result r = run(NULL, bad[i]);
    cr_assert_eq(r.status, 2, "%s: status %d, stderr %s", bad[i], r.status, r.err);
    cr_assert(strstr(r.err, "ddpsim: "), "%s", r.err);
    ds_test_release(&r);
  }
}

/* The seam the subcmd fuzz reader drives (fuzz/readers.c): the flags,
 * --plot's extension included, are validated as ds_analyze_main validates
 * them, and no trace is read (these do not exist). */
Test(analyze, check_args_validates_the_flags_without_reading_a_trace) {
  struct ds_err err = {0};
  char *gif[] = {"analyze", "missing.csv", "--plot", "t.gif", NULL};
  cr_assert_eq(ds_analyze_check_args(4, gif, &err), DS_EUSAGE);
  cr_assert(strstr(err.msg, "option --plot: expected a file name ending in .png or .svg"),
            "%s", err.msg);
  char *iter[] = {"analyze", "p.csv", "m.csv", "--iter", "2", NULL};
  cr_assert_eq(ds_analyze_check_args(5, iter, &err), DS_EUSAGE);
  cr_assert(strstr(err.msg, "option --iter is for one trace"), "%s", err.msg);
  char *good[] = {"analyze", "missing.csv", "--iter", "2", "--plot", "t.svg", NULL};
  cr_assert_eq(ds_analyze_check_args(6, good, &err), DS_OK, "%s", err.msg);
}

/* A flag given last, with nothing after it: one that takes a value is
 * missing it (options_help.c, from the flags the parser knows and the
 * ones its --help shows, which must agree); one analyze does not know is
 * unknown (the subcmd fuzz reader found `ddpsim analyze p.csv --per_op`
 * refused as "option --per_op needs a value"). */
Test(analyze, a_flag_given_last_is_missing_its_value_or_unknown) {
  const char *help_words[] = {"analyze", "--help"}, *lead[] = {"analyze", "p.csv"};
  char *help = ds_test_main_text(ds_analyze_main, help_words, 2);
  ds_test_options_agree(ds_analyze_options(), help, ds_analyze_check_args, lead, 2);
  free(help);
  struct ds_err err = {0};
  char *typo[] = {"analyze", "p.csv", "--per_op", NULL};
  cr_assert_eq(ds_analyze_check_args(3, typo, &err), DS_EUSAGE);
  cr_assert_str_eq(err.msg, "unknown option \"--per_op\" (see ddpsim analyze --help)");
  char *per_op[] = {"analyze", "p.csv", "--per-op", NULL};
  cr_assert_eq(ds_analyze_check_args(3, per_op, &err), DS_OK, "%s", err.msg);
}

Test(analyze, h100_pair_matches_the_recorded_p50s) {
  /* bench/results/gpu-2026-11-23-h100/README.md: prediction 9.573 ms, spin
   * replay p50 9.928 ms (the mean here, over the same 10 iterations). */
  struct ds_test_result r = run(NULL, H100 "p1.csv " H100 "t1-spin.csv --format csv");
  cr_assert_eq(r.status, 0, "stderr: %s", r.err);
  cr_assert(strncmp(r.out, "metric,predicted,measured,abs_error,rel_error\n", 46) == 0,
            "%s", r.out);
  cr_assert(strstr(r.out, "\niter_ms,9.573268,9.927405,"), "%s", r.out);
  cr_assert(strstr(r.out, "\nbucket4_start_ms,"), "%s", r.out);
  cr_assert(strstr(r.out, "\nop_dur_error_median,,,"), "%s", r.out);
  ds_test_release(&r);
}

/* A percentage's error is in points: no relative error for the `_pct`
 * metrics in any format (it printed overlap_pct 58.19 vs 1.81 as
 * "+3122.9 %"); the ms metrics keep theirs. */
Test(analyze, pct_metrics_have_no_relative_error) {
  const char *args = H100 "p1.csv " H100 "t1-spin.csv";
  char a[256];
  snprintf(a, sizeof a, "%s --format csv", args);
  struct ds_test_result r = run(NULL, a);
  cr_assert_eq(r.status, 0, "stderr: %s", r.err);
  int pct = 0;
  for (const char *p = r.out; (p = strstr(p, "_pct,")); p++) {
    const char *eol = strchr(p, '\n');
    cr_assert(eol && eol[-1] == ',', "a _pct row with a rel_error: %.80s", p);
    pct++;
  }
  cr_assert_geq(pct, 2, "%s", r.out);
  const char *iter = strstr(r.out, "\niter_ms,9.573268,9.927405,");
  cr_assert(iter && strchr(iter + 1, '\n')[-1] != ',', "iter_ms keeps its rel_error: %s", r.out);
  ds_test_release(&r);
  snprintf(a, sizeof a, "%s --format json", args);
  r = run(NULL, a);
  cr_assert_eq(r.status, 0, "stderr: %s", r.err);
  for (const char *p = r.out; (p = strstr(p, "_pct\"")); p++) {
    const char *end = strchr(p, '}');
    cr_assert(end && strstr(p, "\"rel_error\": null") && strstr(p, "\"rel_error\": null") < end,
              "%.160s", p);
  }
  ds_test_release(&r);
  r = run(NULL, args);
  cr_assert_eq(r.status, 0, "stderr: %s", r.err);
  const char *line = strstr(r.out, "\noverlap_pct ");
  cr_assert(line, "%s", r.out);
  const char *eol = strchr(line + 1, '\n');
  cr_assert(eol - line > 4 && strncmp(eol - 3, "n/a", 3) == 0, "%.100s", line + 1);
  ds_test_release(&r);
}

/* --per-op's text tables name each op's stream: a host launch and its
 * kernel share a name (CSV and JSON had the column already). */
Test(analyze, per_op_text_names_the_stream) {
  const char *args[] = {H100 "p1.csv " H100 "t1-spin.csv --per-op", H100 "p1.csv --per-op"};
  for (int i = 0; i < 2; i++) {
    struct ds_test_result r = run(NULL, args[i]);
    cr_assert_eq(r.status, 0, "stderr: %s", r.err);
    const char *t = strstr(r.out, "per op (ms from the iteration start)\n");
    cr_assert(t, "%s", r.out);
    cr_assert(strstr(t, "  rank    op id stream  kind  "), "%.200s", t);
    cr_assert(strstr(t, " compute fwd  "), "%.400s", t);
    ds_test_release(&r);
  }
  /* and so does the largest-errors table every comparison prints */
  struct ds_test_result r = run(NULL, H100 "p1.csv " H100 "t1-spin.csv");
  cr_assert_eq(r.status, 0, "stderr: %s", r.err);
  const char *t = strstr(r.out, "largest duration errors\n");
  cr_assert(t, "%s", r.out);
  cr_assert(strstr(t, "   op id  rank stream  kind  "), "%.200s", t);
  cr_assert(strstr(t, " comm    allreduce  bucket"), "%.400s", t);
  ds_test_release(&r);
}

Test(analyze, a_trace_against_itself_has_no_error) {
  /* ddpsim's own trace: iteration 0 is the pre-rebuild one, skipped. */
  struct ds_test_result r = run(NULL, H100 "p2.csv " H100 "p2.csv --skip-measured 1 --format json");
  cr_assert_eq(r.status, 0, "stderr: %s", r.err);
  cr_assert(strstr(r.out, "\"dur_abs_ms\": {\"n\": 450, \"mean\": 0.000000, \"median\": "
                          "0.000000, \"p95\": 0.000000, \"max\": 0.000000}"), "%s", r.out);
  cr_assert(strstr(r.out, "\"start_abs_ms\": {\"n\": 450, \"mean\": 0.000000"), "%s", r.out);
  ds_test_release(&r);
  /* Without options: iteration 0 (one bucket, before the rebuild) is
   * another schedule than predicted iteration 1 and is left out, said so;
   * iteration 1 joins, with no error. */
  r = run(NULL, H100 "p2.csv " H100 "p2.csv");
  cr_assert_eq(r.status, 0, "stderr: %s", r.err);
  cr_assert(strstr(r.out, "(sim): 1 iteration (1..1); metrics and op times: the mean over them\n"), "%s", r.out);
  cr_assert(strstr(r.out, "\nleft out   measured iteration 0: not predicted iteration 1's "
                          "schedule"), "%s", r.out);
  cr_assert(strstr(r.out, "\niter_ms ") && strstr(r.out, "+0.0000"), "%s", r.out);
  ds_test_release(&r);
  r = run(NULL, H100 "p2.csv " H100 "p2.csv --format json");
  cr_assert(strstr(r.out, "\"iterations\": [1], \"left_out\": [0], \"skipped\": 0"), "%s",
            r.out);
  cr_assert(strstr(r.out, "\"dur_abs_ms\": {\"n\": 450, \"mean\": 0.000000"), "%s", r.out);
  ds_test_release(&r);
  /* Predicted iteration 0 against the same trace: measured iteration 0
   * joins, so iteration 1 (another schedule after a joined one) is refused:
   * only leading iterations are left out. */
  r = run(NULL, H100 "p2.csv " H100 "p2.csv --pred-iter 0");
  cr_assert_eq(r.status, 2, "stderr: %s", r.err);
  cr_assert(strstr(r.err, "are not traces of one schedule") &&
            strstr(r.err, "measured iteration 1"), "%s", r.err);
  ds_test_release(&r);
}

Test(analyze, static_graph_runs_two_iterations_before_the_rebuild) {
  /* --static-graph rebuilds before iteration 2 (docs/architecture.md, DDP):
   * a trace of 4 iterations against itself joins 2 and 3, leaves out 0, 1. */
  char t[256], cmd[512];
  tmpname(t, sizeof t, "sg");
  snprintf(cmd, sizeof cmd, "--topo 4gpu --static-graph --iters 4 --trace %s", t);
  struct ds_test_result r = ds_test_run("", ds_test_ddpsim(), cmd);
  cr_assert_eq(r.status, 0, "%s", r.err);
  ds_test_release(&r);
  snprintf(cmd, sizeof cmd, "%s %s", t, t);
  r = run(NULL, cmd);
  cr_assert_eq(r.status, 0, "stderr: %s", r.err);
  cr_assert(strstr(r.out, "predicted  ") && strstr(r.out, "(sim): iteration 3\n"), "%s", r.out);
  cr_assert(strstr(r.out, "(sim): 2 iterations (2..3); metrics and op times: the mean over them\n"), "%s", r.out);
  cr_assert(strstr(r.out, "\nleft out   measured iterations 0, 1: "), "%s", r.out);
  ds_test_release(&r);
  unlink(t);
}

Test(analyze, per_op_csv_has_one_row_per_joined_op) {
  struct ds_test_result r = run(NULL, H100 "p2.csv " H100 "t2-spin.csv --format csv --per-op");
  cr_assert_eq(r.status, 0, "stderr: %s", r.err);
  int lines = 0;
  for (const char *p = r.out; *p; p++) lines += *p == '\n';
  cr_assert_eq(lines, 1 + 450, "%d lines", lines);
  cr_assert(strncmp(r.out, "rank,id,stream,kind,name,bucket,", 32) == 0);
  ds_test_release(&r);
}

Test(analyze, same_inputs_give_identical_output) {
  const char *args[] = {H100 "p2.csv " H100 "t2-gemm.csv",
                        H100 "p2.csv " H100 "t2-gemm.csv --format json --per-op"};
  for (size_t i = 0; i < 2; i++) {
    struct ds_test_result a = run(NULL, args[i]), b = run(NULL, args[i]);
    cr_assert_eq(a.status, 0, "stderr: %s", a.err);
    cr_assert_str_eq(a.out, b.out);
    cr_assert(strlen(a.out) > 1000);
    ds_test_release(&a);
    ds_test_release(&b);
  }
}

static int count(const char *text, const char *needle) {
  int n = 0;
  for (const char *p = text; (p = strstr(p, needle)); p += strlen(needle)) n++;
  return n;
}

Test(analyze, chrome_json_has_one_complete_event_per_row) {
  char p[128], m[128], out[128], args[512];
  tmpname(p, sizeof p, "cp");
  tmpname(m, sizeof m, "cm");
  snprintf(out, sizeof out, "/tmp/ddpsim-analyze-%d-chrome.json", (int)getpid());
  struct us_times pred[] = {EXPOSED, HIDDEN}, meas[] = {HALF, HALF, HALF};
  write_trace(p, "sim", pred, 2, 4096, 1);
  write_trace(m, "real", meas, 3, 4096, 1);
  snprintf(args, sizeof args, "%s %s --chrome %s", p, m, out);
  struct ds_test_result r = run(NULL, args);
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

Test(analyze, plot_writes_a_png) {
  ds_test_require_gnuplot();
  char dir[] = "/tmp/ddpsim-plot-test-XXXXXX", args[1024], png[256];
  cr_assert(mkdtemp(dir) != NULL);
  snprintf(png, sizeof png, "%s/timeline.png", dir);
  snprintf(args, sizeof args, H100 "p2.csv " H100 "t2-spin.csv --plot %s", png);
  struct ds_test_result r = run(NULL, args);
  cr_assert_eq(r.status, 0, "stderr: %s", r.err);
  FILE *fp = fopen(png, "rb");
  cr_assert(fp != NULL);
  unsigned char sig[8] = {0};
  cr_assert_eq(fread(sig, 1, 8, fp), 8);
  fclose(fp);
  cr_assert(memcmp(sig, "\x89PNG\r\n\x1a\n", 8) == 0);
  DIR *d = opendir(dir);
  int entries = 0;
  for (struct dirent *e; (e = readdir(d));) entries += e->d_name[0] != '.';
  closedir(d);
  cr_assert_eq(entries, 1, "temporary files left in %s", dir);
  ds_test_release(&r);
  unlink(png);
  rmdir(dir);
}

Test(analyze, a_missing_gnuplot_is_a_clear_error) {
  char args[512], png[128];
  snprintf(png, sizeof png, "/tmp/ddpsim-analyze-%d-none.png", (int)getpid());
  snprintf(args, sizeof args, H100 "p1.csv " H100 "t1-spin.csv --plot %s", png);
  struct ds_test_result r = run("DDPSIM_GNUPLOT=/nonexistent/gnuplot", args);
  cr_assert_eq(r.status, 1, "stderr: %s", r.err);
  cr_assert(strstr(r.err, "gnuplot"), "%s", r.err);
  cr_assert(access(png, F_OK) != 0, "%s was written", png);
  ds_test_release(&r);
  r = run("PATH=/nonexistent", args); /* no gnuplot on PATH */
  cr_assert_eq(r.status, 1, "stderr: %s", r.err);
  cr_assert(strstr(r.err, "gnuplot not found on PATH"), "%s", r.err);
  ds_test_release(&r);
}

/* ---- one trace alone ------------------------------------------------------ */

/* ds_compare_load_one of a trace written from times[0..n). */
static struct ds_compare *one(const char *source, const struct us_times *times, int n,
                              int32_t iter) {
  char p[128];
  tmpname(p, sizeof p, "one");
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
  tmpname(a, sizeof a, "realA");
  tmpname(b, sizeof b, "realB");
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
  tmpname(p, sizeof p, "fmt");
  struct us_times t[] = {EXPOSED, HIDDEN, HALF};
  write_trace(p, "real", t, 3, 4096, 1); /* median: HALF, iteration 2 */
  snprintf(args, sizeof args, "%s --format csv", p);
  struct ds_test_result r = run(NULL, args);
  cr_assert_eq(r.status, 0, "stderr: %s", r.err);
  const char *head = "metric,value\niter_ms,0.130000\nfwd_ms,0.000000\nbwd_ms,0.100000\n";
  cr_assert(strncmp(r.out, head, strlen(head)) == 0, "%s", r.out);
  cr_assert(strstr(r.out, "\nexposed_comm_ms,0.030000\noverlap_pct,50.000000\n"), "%s", r.out);
  cr_assert(strstr(r.out, "\nbucket0_start_ms,0.070000\nbucket0_dur_ms,0.060000\n"), "%s",
            r.out);
  ds_test_release(&r);
  snprintf(args, sizeof args, "%s --format csv --per-op", p);
  r = run(NULL, args);
  cr_assert_str_eq(r.out, "rank,id,stream,kind,name,bucket,start_ms,dur_ms\n"
                          "0,0,compute,bwd,fc,-1,0.000000,0.100000\n"
                          "0,1,comm,allreduce,bucket0,0,0.070000,0.060000\n");
  ds_test_release(&r);
  snprintf(args, sizeof args, "%s --format json", p);
  r = run(NULL, args);
  cr_assert(strstr(r.out, "\"source\": \"real\", \"iteration\": 2, \"chosen\": \"median\", "
                          "\"iterations\": {\"first\": 0, \"last\": 2, \"count\": 3}}"),
            "%s", r.out);
  cr_assert(strstr(r.out, "{\"metric\": \"exposed_comm_ms\", \"value\": 0.030000},"), "%s",
            r.out);
  ds_test_release(&r);
  snprintf(args, sizeof args, "%s --iter 0", p); /* text: iteration 0, exposed */
  r = run(NULL, args);
  cr_assert(strstr(r.out, "(real): iteration 0 (as given; iterations 0..2)\n"), "%s", r.out);
  cr_assert(strstr(r.out, "\nexposed_comm_ms                0.0600\n"), "%s", r.out);
  ds_test_release(&r);
  unlink(p);
}

Test(analyze_one, matches_its_side_of_a_comparison) {
  /* p2.csv alone: its numbers are the predicted column of p2 against
   * itself; t2-spin.csv's iteration 9 alone: the measured column with only
   * iteration 9 measured. */
  struct ds_test_result a = run(NULL, H100 "p2.csv --format csv");
  struct ds_test_result b = run(NULL, H100 "p2.csv " H100 "p2.csv --skip-measured 1 --format csv");
  cr_assert_eq(a.status, 0, "stderr: %s", a.err);
  cr_assert_eq(b.status, 0, "stderr: %s", b.err);
  int rows = 0;
  for (const char *pa = strchr(a.out, '\n') + 1, *pb = strchr(b.out, '\n') + 1; *pa;
       pa = strchr(pa, '\n') + 1, pb = strchr(pb, '\n') + 1, rows++) {
    size_t name = strcspn(pa, ",");
    cr_assert(strncmp(pa, pb, name + 1) == 0, "row %d: %.40s / %.40s", rows, pa, pb);
    cr_assert(strncmp(pa + name + 1, pb + name + 1, strcspn(pa + name + 1, "\n")) == 0,
              "row %d: %.60s / %.60s", rows, pa, pb);
  }
  cr_assert_eq(rows, 27); /* 13 per iteration, 5 buckets x 2, 2 ranks x 2 */
  ds_test_release(&a);
  ds_test_release(&b);
  a = run(NULL, H100 "t2-spin.csv --iter 9 --format csv");
  b = run(NULL, H100 "p2.csv " H100 "t2-spin.csv --skip-measured 9 --format csv");
  cr_assert(strstr(a.out, "\niter_ms,"), "%s", a.out);
  char want[64];
  const char *line = strstr(b.out, "\niter_ms,") + 1;  /* iter_ms,pred,meas,... */
  const char *meas = strchr(strchr(line, ',') + 1, ',') + 1;
  snprintf(want, sizeof want, "\niter_ms,%.*s\n", (int)strcspn(meas, ","), meas);
  cr_assert(strstr(a.out, want), "want %s in %s", want, a.out);
  ds_test_release(&a);
  ds_test_release(&b);
}

Test(analyze_one, bad_usage_exits_2_naming_what_was_expected) {
  const struct {
    const char *args, *msg;
  } bad[] = {
      {H100 "p1.csv --skip-measured 1", "option --skip-measured needs two traces"},
      {H100 "p1.csv --pred-iter 1", "with one trace, --iter N picks its iteration"},
      {H100 "p1.csv " H100 "t1-spin.csv --iter 1", "option --iter is for one trace"},
      {H100 "p1.csv --iter 7", "no rows of iteration 7 (the trace has iterations 0..1)"},
      {H100 "p1.csv --iter x", "option --iter: expected an integer >= 0"},
      {H100 "s1.csv", "s1.csv"}, /* a schedule, not a trace */
      {"/nonexistent/trace.csv", "/nonexistent/trace.csv"},
      {H100 "p1.csv --plot out.jpg", "expected a file name ending in .png or .svg"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    struct ds_test_result r = run(NULL, bad[i].args);
    cr_assert_eq(r.status, 2, "%s: status %d, stderr %s", bad[i].args, r.status, r.err);
    cr_assert(strstr(r.err, bad[i].msg), "%s: want \"%s\" in %s", bad[i].args, bad[i].msg,
              r.err);
    cr_assert_str_empty(r.out);
    ds_test_release(&r);
  }
}

/* Data rows of a trace file: lines neither '#' comments nor the header. */
static int trace_rows(const char *path) {
  char *text = ds_test_slurp(path);
  int n = -1; /* the header */
  for (const char *p = text; *p; p = strchr(p, '\n') + 1) n += *p != '#';
  free(text);
  return n;
}

/* --chrome - has standard output alone (the JSON was followed by the text
 * report): the JSON whole, the report on standard error. */
Test(analyze_one, chrome_on_stdout_is_the_json_alone) {
  struct ds_test_result plain = run(NULL, H100 "p2.csv");
  struct ds_test_result r = run(NULL, H100 "p2.csv --chrome -");
  cr_assert_eq(r.status, 0, "stderr: %s", r.err);
  cr_assert(strncmp(r.out, "{\"displayTimeUnit\"", 18) == 0, "%.40s", r.out);
  size_t n = strlen(r.out);
  cr_assert(n > 3 && strcmp(r.out + n - 3, "]}\n") == 0, "stdout ends \"%s\"",
            r.out + (n > 40 ? n - 40 : 0));
  cr_assert_str_eq(r.err, plain.out);
  ds_test_release(&r);
  ds_test_release(&plain);
}

Test(analyze_one, chrome_has_only_the_traces_own_processes) {
  char dir[] = "/tmp/ddpsim-one-chrome-XXXXXX", out[256], args[512];
  cr_assert(mkdtemp(dir) != NULL);
  snprintf(out, sizeof out, "%s/one.json", dir);
  const char *traces[] = {H100 "p2.csv", H100 "t2-spin.csv"};
  for (int k = 0; k < 2; k++) {
    snprintf(args, sizeof args, "%s --chrome %s", traces[k], out);
    struct ds_test_result r = run(NULL, args);
    cr_assert_eq(r.status, 0, "stderr: %s", r.err);
    char *json = ds_test_slurp(out);
    /* Every row of every iteration, on pids 0 and 1 (2 ranks) only, named
     * by the trace's source. */
    cr_assert_eq(count(json, "\"ph\": \"X\""), trace_rows(traces[k]));
    cr_assert_eq(count(json, "\"ph\": \"X\""),
                 count(json, "\"pid\": 0, \"tid\"") + count(json, "\"pid\": 1, \"tid\"") -
                     2 * (2 + DS_STREAM_COUNT), /* each pid's metadata */
                 "%s", traces[k]);
    cr_assert(!strstr(json, "\"pid\": 2,"), "%s", traces[k]);
    const char *own = k ? "\"measured rank 1\"" : "\"predicted rank 1\"";
    const char *other = k ? "predicted rank" : "measured rank";
    cr_assert(strstr(json, own) && !strstr(json, other), "%s", traces[k]);
    free(json);
    ds_test_release(&r);
  }
  unlink(out);
  cr_assert_eq(rmdir(dir), 0, "nothing but the file in %s", dir);
}

/* Runs analyze with --plot DIR/one.EXT and checks the picture's start and
 * that nothing else is left in DIR. */
static void one_plot(const char *trace, const char *ext, const char *magic) {
  char dir[] = "/tmp/ddpsim-one-plot-XXXXXX", img[256], args[512];
  cr_assert(mkdtemp(dir) != NULL);
  snprintf(img, sizeof img, "%s/one.%s", dir, ext);
  snprintf(args, sizeof args, "%s --plot %s", trace, img);
  struct ds_test_result r = run(NULL, args);
  cr_assert_eq(r.status, 0, "stderr: %s", r.err);
  cr_assert(strstr(r.out, "trace      "), "the report follows the plot: %s", r.out);
  ds_test_assert_image(img, magic, strlen(magic));
  ds_test_release(&r);
  unlink(img);
  cr_assert_eq(rmdir(dir), 0, "temporary files left in %s", dir);
}

Test(analyze_one, plot_draws_a_png_and_an_svg) {
  ds_test_require_gnuplot();
  one_plot(H100 "p2.csv", "png", "\x89PNG\r\n\x1a\n");
  one_plot(H100 "t2-spin.csv", "svg", "<?xml");
}

Test(analyze_one, a_failed_plot_leaves_no_file_and_no_report) {
  char dir[] = "/tmp/ddpsim-one-fail-XXXXXX", args[512];
  cr_assert(mkdtemp(dir) != NULL);
  snprintf(args, sizeof args, H100 "p2.csv --plot %s/one.png --chrome %s/one.json", dir, dir);
  struct ds_test_result r = run("DDPSIM_GNUPLOT=/nonexistent/gnuplot", args);
  cr_assert_eq(r.status, 1, "stderr: %s", r.err);
  cr_assert(strstr(r.err, "gnuplot"), "%s", r.err);
  cr_assert_str_empty(r.out);
  ds_test_release(&r);
  cr_assert_eq(rmdir(dir), 0, "a file was left in %s", dir);
}

/* The value of metric name in `ddpsim analyze TRACE --format csv`'s
 * metric,value table. */
static double analyze_value(const char *csv, const char *name) {
  char key[64];
  snprintf(key, sizeof key, "\n%s,", name);
  const char *p = strstr(csv, key);
  cr_assert(p, "no metric %s in:\n%s", name, csv);
  return strtod(p + strlen(key), NULL);
}

/* Runs `ddpsim ARGS --trace T --format csv`, then `ddpsim analyze T`, and
 * checks that every timing field of the summary is analyze's value of the
 * same name (one definition, analysis/metrics.c): to the summary's
 * printed precision (6 decimals of a ms: its nanosecond; overlap 3
 * decimals of a percent). Returns the summary's overlap_pct. */
static double summary_equals_analyze(const char *args) {
  char trace[256], cmd[1024];
  tmpname(trace, sizeof trace, "own");
  snprintf(cmd, sizeof cmd, "%s --trace %s --format csv", args, trace);
  struct ds_test_result sim = ds_test_run("", ds_test_ddpsim(), cmd);
  cr_assert_eq(sim.status, 0, "ddpsim %s: %s", cmd, sim.err);
  struct ds_test_result an = run(NULL, trace);
  cr_assert_eq(an.status, 0, "analyze %s: %s", trace, an.err);
  ds_test_release(&an);
  snprintf(cmd, sizeof cmd, "%s --format csv", trace);
  an = run(NULL, cmd);
  cr_assert_eq(an.status, 0, "analyze %s: %s", cmd, an.err);
  static const char *const ms[] = {"iter_ms",         "fwd_ms",      "bwd_ms",
                                   "step_ms",         "comm_ms",     "exposed_comm_ms",
                                   "gpu_busy_ms",     "host_exposed_ms"};
  for (size_t i = 0; i < sizeof ms / sizeof ms[0]; i++) {
    double s = ds_test_csv_num(sim.out, ms[i], 0), a = analyze_value(an.out, ms[i]);
    cr_assert(fabs(s - a) <= 0.5e-6, "%s: %s summary %.6f, analyze %.9f", args, ms[i], s, a);
  }
  double so = ds_test_csv_num(sim.out, "overlap_pct", 0);
  double ao = analyze_value(an.out, "overlap_pct");
  cr_assert(fabs(so - ao) <= 0.5e-3, "%s: overlap_pct summary %.3f, analyze %.6f", args, so,
            ao);
  cr_assert(ds_test_csv_num(sim.out, "iter_ms", 0) > 0);
  /* the parts of rank 0's iteration are disjoint: they fit in it */
  double parts = ds_test_csv_num(sim.out, "gpu_busy_ms", 0) +
                 ds_test_csv_num(sim.out, "exposed_comm_ms", 0) +
                 ds_test_csv_num(sim.out, "host_exposed_ms", 0);
  cr_assert(parts <= ds_test_csv_num(sim.out, "iter_ms", 0) + 2e-6, "%s: parts %.6f", args,
            parts);
  ds_test_release(&sim);
  ds_test_release(&an);
  unlink(trace);
  return so;
}

Test(analyze, a_runs_own_trace_analyzes_to_its_summary_for_every_strategy) {
  /* Every strategy on the 4-GPU A100 box, ResNet-50; dp on 2 ranks is the
   * issue #16 case (analyze said 44 % overlap where the summary said 0:
   * replicate's host time was counted as compute). DDP's rebuilt iteration
   * and dp's period (the previous iteration's step on GPU 0 ends after the
   * others started the next) are both the last iteration's. */
  summary_equals_analyze("--topo 4gpu --strategy single");
  cr_assert_eq(summary_equals_analyze("--topo 4gpu --strategy dp --world-size 2"), 0);
  summary_equals_analyze("--topo 4gpu --strategy dp");
  double ov = summary_equals_analyze("--topo 4gpu --strategy ddp");
  cr_assert(ov > 50, "%g", ov);
  /* --no-overlap: only finalize_backward's copies back of the first
   * buckets run beside the later all-reduces, so less than half of what
   * the overlapped run hides (on 4gpu's 12 NCCL channels the all-reduces
   * take 1.05 ms, 0.41 of it beside the copies back: 39 %, against 97 %) */
  double nov = summary_equals_analyze("--topo 4gpu --strategy ddp --no-overlap");
  cr_assert(nov > 0 && nov < ov / 2, "%g against %g", nov, ov);
  summary_equals_analyze("--topo 4gpu --strategy ddp --static-graph");
  summary_equals_analyze("--topo 2node-ib --strategy ddp --model bert-base");
  summary_equals_analyze("--topo 4gpu --strategy ps --ps-mode sync");
  summary_equals_analyze("--topo 4gpu --strategy ps --ps-mode async --straggler 1:1.5");
}

/* One rank: host launch h [0, 20) (a forward kind on the host stream), its
 * forward kernel f [20, 100), an all-reduce a [0, 50) on the comm stream. */
static ds_status host_op_metrics(struct ds_metrics *m) {
  static const struct ds_op ops[] = {
      {.id = 0, .stream = DS_STREAM_HOST, .kind = DS_OP_FWD, .name = "h", .bucket = -1},
      {.id = 1, .stream = DS_STREAM_COMPUTE, .kind = DS_OP_FWD, .name = "f", .bucket = -1},
      {.id = 2, .stream = DS_STREAM_COMM, .kind = DS_OP_ALLREDUCE, .name = "a", .bucket = 0},
  };
  struct ds_timed_op t[] = {{&ops[0], 0, 20000}, {&ops[1], 20000, 100000},
                            {&ops[2], 0, 50000}};
  return ds_metrics_measure(t, 3, DS_METRICS_NO_PREVIOUS, m);
}

Test(analyze, host_stream_ops_are_neither_compute_nor_communication) {
  /* Expected, because a host op only delays the kernels it launches:
   * forward = f alone, 80 us (not 100 with h); the all-reduce's first
   * 20 us run under no kernel, so exposed = 20 us, overlap 60 % (h counted
   * as compute would hide all of it: 0 and 100 %). */
  struct ds_metrics m;
  cr_assert_eq(host_op_metrics(&m), DS_OK);
  cr_assert(fabs(m.v[DS_METRIC_fwd_ms] - 0.080) < EPS);
  cr_assert(fabs(m.v[DS_METRIC_comm_ms] - 0.050) < EPS);
  cr_assert(fabs(m.v[DS_METRIC_exposed_comm_ms] - 0.020) < EPS);
  cr_assert(fabs(m.v[DS_METRIC_overlap_pct] - 60.0) < EPS);
  cr_assert(fabs(m.v[DS_METRIC_iter_ms] - 0.100) < EPS);
  cr_assert_eq(ds_metrics_class(&(struct ds_op){.stream = DS_STREAM_HOST}), DS_METRICS_HOST);
  cr_assert_eq(ds_metrics_class(&(struct ds_op){.stream = DS_STREAM_COPY}),
               DS_METRICS_COMPUTE);
}

Test(analyze, the_iteration_splits_into_gpu_busy_exposed_comm_host_exposed_and_idle) {
  /* Rank 0: host h1 [0, 10) us, kernel f [10, 30), all-reduce a [25, 40),
   * host h2 [35, 50), kernel b [50, 60); rank 1's kernel runs to 70; the
   * previous iteration ended at 5. Worked by hand: iteration 70 - 5 = 65;
   * GPU busy f + b = 30; exposed communication a after f, [30, 40) = 10;
   * host exposed h1 from the start, [5, 10), and h2 after a, [40, 50):
   * 15 (20 if h1 were not clipped to the iteration, or h2 counted under
   * the all-reduce); idle, waiting on rank 1, [60, 70) = 65 - 30 - 10 - 15. */
  static const struct ds_op ops[] = {
      {.rank = 0, .stream = DS_STREAM_HOST, .kind = DS_OP_FWD, .name = "h1", .bucket = -1},
      {.rank = 0, .stream = DS_STREAM_COMPUTE, .kind = DS_OP_FWD, .name = "f", .bucket = -1},
      {.rank = 0, .stream = DS_STREAM_COMM, .kind = DS_OP_ALLREDUCE, .name = "a", .bucket = 0},
      {.rank = 0, .stream = DS_STREAM_HOST, .kind = DS_OP_BWD, .name = "h2", .bucket = -1},
      {.rank = 0, .stream = DS_STREAM_COMPUTE, .kind = DS_OP_BWD, .name = "b", .bucket = -1},
      {.rank = 1, .stream = DS_STREAM_COMPUTE, .kind = DS_OP_FWD, .name = "g", .bucket = -1},
  };
  struct ds_timed_op t[] = {{&ops[0], 0, 10000},     {&ops[1], 10000, 30000},
                            {&ops[2], 25000, 40000}, {&ops[3], 35000, 50000},
                            {&ops[4], 50000, 60000}, {&ops[5], 0, 70000}};
  struct ds_metrics m;
  cr_assert_eq(ds_metrics_measure(t, 6, 5000, &m), DS_OK);
  cr_assert(fabs(m.v[DS_METRIC_iter_ms] - 0.065) < EPS);
  cr_assert(fabs(m.v[DS_METRIC_gpu_busy_ms] - 0.030) < EPS, "%g", m.v[DS_METRIC_gpu_busy_ms]);
  cr_assert(fabs(m.v[DS_METRIC_exposed_comm_ms] - 0.010) < EPS);
  cr_assert(fabs(m.v[DS_METRIC_host_exposed_ms] - 0.015) < EPS, "%g",
            m.v[DS_METRIC_host_exposed_ms]);
  /* the host ops a kernel covers expose nothing (host_op_metrics: h under a) */
  cr_assert_eq(host_op_metrics(&m), DS_OK);
  cr_assert(fabs(m.v[DS_METRIC_host_exposed_ms]) < EPS);
  cr_assert(fabs(m.v[DS_METRIC_gpu_busy_ms] - 0.080) < EPS);
}

Test(analyze, the_ddp_logger_metrics_time_the_buckets_not_the_buffers_broadcast) {
  /* Rank 0: DDP's broadcast of buffers b [0, 10) us before the forward
   * (bucket -1), the backward kernel k [20, 100), bucket 0's all-reduce a
   * [50, 120). PyTorch's logger times the buckets: comm = 120 - 50 = 70 us,
   * overlap = 100 - 50 = 50 us (from the broadcast: 120 and 100). */
  static const struct ds_op ops[] = {
      {.stream = DS_STREAM_COMM, .kind = DS_OP_BROADCAST, .name = "b", .bucket = -1},
      {.stream = DS_STREAM_COMPUTE, .kind = DS_OP_BWD, .name = "k", .bucket = -1},
      {.stream = DS_STREAM_COMM, .kind = DS_OP_ALLREDUCE, .name = "a", .bucket = 0},
  };
  struct ds_timed_op t[] = {{&ops[0], 0, 10000}, {&ops[1], 20000, 100000},
                            {&ops[2], 50000, 120000}};
  struct ds_metrics m;
  cr_assert_eq(ds_metrics_measure(t, 3, DS_METRICS_NO_PREVIOUS, &m), DS_OK);
  cr_assert(fabs(m.v[DS_METRIC_ddp_bwd_comm_ms] - 0.070) < EPS, "%g",
            m.v[DS_METRIC_ddp_bwd_comm_ms]);
  cr_assert(fabs(m.v[DS_METRIC_ddp_overlap_ms] - 0.050) < EPS, "%g",
            m.v[DS_METRIC_ddp_overlap_ms]);
  cr_assert(fabs(m.v[DS_METRIC_ddp_overlap_pct] - 100.0 * 50 / 70) < 1e-9);
  /* the broadcast still counts as communication */
  cr_assert(fabs(m.v[DS_METRIC_comm_ms] - 0.080) < EPS);
}

Test(analyze, no_communication_time_leaves_the_ddp_overlap_share_undefined) {
  /* One rank: the backward kernel k [20, 100) us, buckets 0 and 1's
   * all-reduces a0 at 50 and a1 at 90, each taking no time (NCCL's one-rank
   * in-place all-reduce does nothing). The logger's times stay (comm span
   * 40 us, overlap 100 - 50 = 50 us), but no communication time is there
   * to hide: comm_ms 0 and ddp_overlap_pct undefined (NaN, printed n/a),
   * where it read 100. */
  static const struct ds_op ops[] = {
      {.stream = DS_STREAM_COMPUTE, .kind = DS_OP_BWD, .name = "k", .bucket = -1},
      {.stream = DS_STREAM_COMM, .kind = DS_OP_ALLREDUCE, .name = "a0", .bucket = 0},
      {.stream = DS_STREAM_COMM, .kind = DS_OP_ALLREDUCE, .name = "a1", .bucket = 1},
  };
  struct ds_timed_op t[] = {{&ops[0], 20000, 100000}, {&ops[1], 50000, 50000},
                            {&ops[2], 90000, 90000}};
  struct ds_metrics m;
  cr_assert_eq(ds_metrics_measure(t, 3, DS_METRICS_NO_PREVIOUS, &m), DS_OK);
  cr_assert(fabs(m.v[DS_METRIC_comm_ms]) < EPS, "%g", m.v[DS_METRIC_comm_ms]);
  cr_assert(fabs(m.v[DS_METRIC_ddp_bwd_comm_ms] - 0.040) < EPS, "%g",
            m.v[DS_METRIC_ddp_bwd_comm_ms]);
  cr_assert(fabs(m.v[DS_METRIC_ddp_overlap_ms] - 0.050) < EPS, "%g",
            m.v[DS_METRIC_ddp_overlap_ms]);
  cr_assert(isnan(m.v[DS_METRIC_ddp_overlap_pct]), "%g", m.v[DS_METRIC_ddp_overlap_pct]);
  cr_assert(fabs(m.v[DS_METRIC_overlap_pct]) < EPS);
}

/* An undefined metric prints as the formats' empty value: "n/a" in text,
 * empty in CSV, null in JSON (it printed "nan" in CSV and broke JSON). */
Test(analyze_one, an_undefined_metric_prints_as_n_a_empty_and_null) {
  char p[128], args[512];
  tmpname(p, sizeof p, "nocomm");
  struct us_times t[] = {{0, 100, 50, 50}};
  write_trace(p, "sim", t, 1, 4096, 1);
  const char *fmt[][2] = {{"text", "\nddp_overlap_pct                   n/a\n"},
                          {"csv", "\nddp_overlap_pct,\n"},
                          {"json", "{\"metric\": \"ddp_overlap_pct\", \"value\": null}"}};
  for (size_t i = 0; i < 3; i++) {
    snprintf(args, sizeof args, "%s --format %s", p, fmt[i][0]);
    struct ds_test_result r = run(NULL, args);
    cr_assert_eq(r.status, 0, "stderr: %s", r.err);
    cr_assert(strstr(r.out, fmt[i][1]), "%s: %s", fmt[i][0], r.out);
    ds_test_release(&r);
  }
  unlink(p);
}

Test(analyze, the_ddp_logger_times_the_synchronised_micro_step_and_not_a_servers_pushes) {
  /* Rank 0 under no_sync 2: forward f1 [0, 10) us, backward b1 [10, 30),
   * forward f2 [30, 40), backward b2 [40, 70) with bucket 0's all-reduce a
   * [50, 80). The logger times the synchronised micro-step: backward 70 -
   * 40 = 30 us, not 70 - 10. A parameter server's push (its bucket the
   * server) is no bucket's collective. */
  static const struct ds_op ops[] = {
      {.stream = DS_STREAM_COMPUTE, .kind = DS_OP_FWD, .name = "f1", .bucket = -1},
      {.stream = DS_STREAM_COMPUTE, .kind = DS_OP_BWD, .name = "b1", .bucket = -1},
      {.stream = DS_STREAM_COMPUTE, .kind = DS_OP_FWD, .name = "f2", .bucket = -1},
      {.stream = DS_STREAM_COMPUTE, .kind = DS_OP_BWD, .name = "b2", .bucket = -1},
      {.stream = DS_STREAM_COMM, .kind = DS_OP_ALLREDUCE, .name = "a", .bucket = 0},
  };
  struct ds_timed_op t[] = {{&ops[0], 0, 10000},     {&ops[1], 10000, 30000},
                            {&ops[2], 30000, 40000}, {&ops[3], 40000, 70000},
                            {&ops[4], 50000, 80000}};
  struct ds_metrics m;
  cr_assert_eq(ds_metrics_measure(t, 5, DS_METRICS_NO_PREVIOUS, &m), DS_OK);
  cr_assert(fabs(m.v[DS_METRIC_ddp_bwd_compute_ms] - 0.030) < EPS, "%g",
            m.v[DS_METRIC_ddp_bwd_compute_ms]);
  cr_assert(fabs(m.v[DS_METRIC_ddp_overlap_ms] - 0.020) < EPS);
  cr_assert_eq(ds_metrics_bucket(&ops[4]), 0);
  struct ds_op push = {.stream = DS_STREAM_COMM, .kind = DS_OP_PUSH, .bucket = 1};
  cr_assert_eq(ds_metrics_bucket(&push), -1);
}

/* `ddpsim analyze --format csv` of a run's own trace: runs `ddpsim ARGS
 * --trace T` (T a fresh temporary named by tag), analyzes T, removes it. */
static struct ds_test_result analyze_own_run(const char *tag, const char *args) {
  char trace[256], cmd[1024];
  tmpname(trace, sizeof trace, tag);
  snprintf(cmd, sizeof cmd, "%s --trace %s", args, trace);
  struct ds_test_result sim = ds_test_run("", ds_test_ddpsim(), cmd);
  cr_assert_eq(sim.status, 0, "ddpsim %s: %s", cmd, sim.err);
  ds_test_release(&sim);
  snprintf(cmd, sizeof cmd, "%s --format csv", trace);
  struct ds_test_result an = run(NULL, cmd);
  cr_assert_eq(an.status, 0, "analyze %s: %s", cmd, an.err);
  unlink(trace);
  return an;
}

Test(analyze, the_ddp_loggers_backward_ends_before_finalize_backward_copies_back) {
  /* Rank 0: the backward kernel k [0, 50) us, bucket 0's all-reduce a
   * [40, 70), finalize_backward's copy back bucket0.to_grad [70, 75) and a
   * comm hook's decompression on the copy stream [70, 72). PyTorch's logger
   * records backward_compute_end in the autograd callback, before finalize
   * waits: compute 50, comm 30, overlap 50 - 40 = 10 us, 33.3 % (with the
   * copy back: 75, 35, 100 %). */
  static const struct ds_op ops[] = {
      {.stream = DS_STREAM_COMPUTE, .kind = DS_OP_BWD, .name = "k", .bucket = -1},
      {.stream = DS_STREAM_COMM, .kind = DS_OP_ALLREDUCE, .name = "bucket0", .bucket = 0},
      {.stream = DS_STREAM_COMPUTE, .kind = DS_OP_BWD, .name = "bucket0.to_grad", .bucket = 0},
      {.stream = DS_STREAM_COPY, .kind = DS_OP_BWD, .name = "bucket0.decompress", .bucket = 0},
  };
  struct ds_timed_op t[] = {{&ops[0], 0, 50000},
                            {&ops[1], 40000, 70000},
                            {&ops[2], 70000, 75000},
                            {&ops[3], 70000, 72000}};
  struct ds_metrics m;
  cr_assert_eq(ds_metrics_measure(t, 4, DS_METRICS_NO_PREVIOUS, &m), DS_OK);
  cr_assert(fabs(m.v[DS_METRIC_ddp_bwd_compute_ms] - 0.050) < EPS, "%g",
            m.v[DS_METRIC_ddp_bwd_compute_ms]);
  cr_assert(fabs(m.v[DS_METRIC_ddp_overlap_ms] - 0.010) < EPS, "%g",
            m.v[DS_METRIC_ddp_overlap_ms]);
  cr_assert(fabs(m.v[DS_METRIC_ddp_overlap_pct] - 100.0 / 3) < 1e-9);
  /* the summary's backward still holds the reducer's copies */
  cr_assert(fabs(m.v[DS_METRIC_bwd_ms] - 0.057) < EPS);
}

Test(analyze, the_ddp_logger_and_bucket_rows_time_the_last_of_grad_accums_micro_steps) {
  /* Rank 0 under --grad-accum 2, each micro-step synchronised: forward f1
   * [0, 10) us, backward b1 [10, 30), bucket 0's all-reduce a1 [20, 35),
   * forward f2 [40, 50), backward b2 [50, 80), all-reduce a2 [60, 90). The
   * logger times one backward, the last: compute 80 - 50 = 30 us, comm
   * 90 - 60 = 30, overlap 80 - 60 = 20 (from a1: 70 and 60). */
  static const struct ds_op ops[] = {
      {.stream = DS_STREAM_COMPUTE, .kind = DS_OP_FWD, .name = "f1", .bucket = -1},
      {.stream = DS_STREAM_COMPUTE, .kind = DS_OP_BWD, .name = "b1", .bucket = -1},
      {.stream = DS_STREAM_COMM, .kind = DS_OP_ALLREDUCE, .name = "a1", .bucket = 0},
      {.stream = DS_STREAM_COMPUTE, .kind = DS_OP_FWD, .name = "f2", .bucket = -1},
      {.stream = DS_STREAM_COMPUTE, .kind = DS_OP_BWD, .name = "b2", .bucket = -1},
      {.stream = DS_STREAM_COMM, .kind = DS_OP_ALLREDUCE, .name = "a2", .bucket = 0},
  };
  struct ds_timed_op t[] = {{&ops[0], 0, 10000},     {&ops[1], 10000, 30000},
                            {&ops[2], 20000, 35000}, {&ops[3], 40000, 50000},
                            {&ops[4], 50000, 80000}, {&ops[5], 60000, 90000}};
  struct ds_metrics m;
  cr_assert_eq(ds_metrics_measure(t, 6, DS_METRICS_NO_PREVIOUS, &m), DS_OK);
  cr_assert(fabs(m.v[DS_METRIC_ddp_bwd_compute_ms] - 0.030) < EPS);
  cr_assert(fabs(m.v[DS_METRIC_ddp_bwd_comm_ms] - 0.030) < EPS, "%g",
            m.v[DS_METRIC_ddp_bwd_comm_ms]);
  cr_assert(fabs(m.v[DS_METRIC_ddp_overlap_ms] - 0.020) < EPS, "%g",
            m.v[DS_METRIC_ddp_overlap_ms]);
  /* and a real run's bucket rows: as long as without accumulation (the
   * micro-steps are alike), not spanning both micro-steps */
  double dur[2];
  for (int k = 0; k < 2; k++) {
    struct ds_test_result an =
        analyze_own_run("ga", k ? "--topo 4gpu --batch 8 --grad-accum 2" : "--topo 4gpu --batch 8");
    dur[k] = analyze_value(an.out, "bucket0_dur_ms");
    ds_test_release(&an);
  }
  cr_assert(fabs(dur[1] - dur[0]) < 0.01 * dur[0], "%g vs %g", dur[1], dur[0]);
}

Test(analyze, a_bucket_of_several_collectives_is_one_row) {
  /* PowerSGD's hook runs three collectives per bucket: analyze gives each
   * bucket's start and span once (it printed each key three times). */
  struct ds_test_result an = analyze_own_run("psgd", "--topo 4gpu --comm-hook powersgd:4");
  int rows = 0;
  for (int b = 0; b < 64; b++) {
    char key[40];
    snprintf(key, sizeof key, "\nbucket%d_start_ms,", b);
    const char *at = strstr(an.out, key);
    if (!at) continue;
    rows++;
    cr_assert_null(strstr(at + 1, key), "bucket %d twice:\n%s", b, an.out);
    snprintf(key, sizeof key, "\nbucket%d_dur_ms,", b);
    cr_assert(strstr(an.out, key), "%s", an.out);
  }
  cr_assert_gt(rows, 1, "%s", an.out);
  ds_test_release(&an);
}

Test(analyze, an_iteration_starting_before_the_previous_ends_is_timed_by_its_period) {
  /* The one op f [20, 100) us; the previous iteration ended at 50 us (dp:
   * GPU 0's step) or at 10 us (a replay's barrier before f): 50 and 80 us. */
  static const struct ds_op f = {.stream = DS_STREAM_COMPUTE, .kind = DS_OP_FWD,
                                 .name = "f", .bucket = -1};
  struct ds_timed_op t = {&f, 20000, 100000};
  struct ds_metrics m;
  cr_assert_eq(ds_metrics_measure(&t, 1, 50000, &m), DS_OK);
  cr_assert(fabs(m.v[DS_METRIC_iter_ms] - 0.050) < EPS);
  cr_assert_eq(m.t0_ns, 20000);
  cr_assert_eq(ds_metrics_measure(&t, 1, 10000, &m), DS_OK);
  cr_assert(fabs(m.v[DS_METRIC_iter_ms] - 0.080) < EPS);
  cr_assert_eq(ds_metrics_last_end(&t, 1), 100000);
  cr_assert_eq(ds_metrics_last_end(&t, 0), DS_METRICS_NO_PREVIOUS);
}

Test(analyze, a_parameter_servers_update_and_local_copies_are_gpu_work) {
  /* ps puts a server's update, a step of the server's index (bucket), on
   * the host stream of its GPU, and a worker's push to the server on its
   * own GPU is a device-local copy (root = its rank): both are that GPU's
   * work (analysis/metrics.c), as DDP's copies are. A rank's own optimizer
   * launches (bucket -1) stay host time; a push to another GPU is
   * communication. Rank 0 by hand: forward f [0, 40) us, local push p [40,
   * 50), update u [60, 90) (waiting on the others' pushes [50, 60)),
   * local pull q [90, 100), remote pull r [90, 120): GPU busy f + p + u +
   * q = 90 us; communication r alone, 30 us, exposed after q, 20 us; step
   * u, 30 us; no host exposed (u was 30 of it, and p, q communication). */
  cr_assert_eq(ds_metrics_class(&(struct ds_op){.stream = DS_STREAM_HOST, .kind = DS_OP_STEP,
                                                .bucket = 0}),
               DS_METRICS_COMPUTE);
  cr_assert_eq(ds_metrics_class(&(struct ds_op){.stream = DS_STREAM_HOST, .kind = DS_OP_STEP,
                                                .bucket = -1}),
               DS_METRICS_HOST);
  cr_assert_eq(ds_metrics_class(&(struct ds_op){.rank = 1, .stream = DS_STREAM_COMM,
                                                .kind = DS_OP_PUSH, .root = 1}),
               DS_METRICS_COMPUTE);
  cr_assert_eq(ds_metrics_class(&(struct ds_op){.rank = 1, .stream = DS_STREAM_COMM,
                                                .kind = DS_OP_PULL, .root = 0}),
               DS_METRICS_COMM);
  static const struct ds_op ops[] = {
      {.rank = 0, .stream = DS_STREAM_COMPUTE, .kind = DS_OP_FWD, .name = "f", .bucket = -1,
       .root = -1},
      {.rank = 0, .stream = DS_STREAM_COMM, .kind = DS_OP_PUSH, .name = "p", .bucket = 0},
      {.rank = 0, .stream = DS_STREAM_HOST, .kind = DS_OP_STEP, .name = "u", .bucket = 0,
       .root = -1},
      {.rank = 0, .stream = DS_STREAM_COMM, .kind = DS_OP_PULL, .name = "q", .bucket = 0},
      {.rank = 0, .stream = DS_STREAM_COMM, .kind = DS_OP_PULL, .name = "r", .bucket = 1,
       .root = 1},
  };
  struct ds_timed_op t[] = {{&ops[0], 0, 40000},
                            {&ops[1], 40000, 50000},
                            {&ops[2], 60000, 90000},
                            {&ops[3], 90000, 100000},
                            {&ops[4], 90000, 120000}};
  struct ds_metrics m;
  cr_assert_eq(ds_metrics_measure(t, 5, DS_METRICS_NO_PREVIOUS, &m), DS_OK);
  cr_assert(fabs(m.v[DS_METRIC_iter_ms] - 0.120) < EPS);
  cr_assert(fabs(m.v[DS_METRIC_gpu_busy_ms] - 0.090) < EPS, "%g", m.v[DS_METRIC_gpu_busy_ms]);
  cr_assert(fabs(m.v[DS_METRIC_comm_ms] - 0.030) < EPS, "%g", m.v[DS_METRIC_comm_ms]);
  cr_assert(fabs(m.v[DS_METRIC_exposed_comm_ms] - 0.020) < EPS);
  cr_assert(fabs(m.v[DS_METRIC_step_ms] - 0.030) < EPS);
  cr_assert(fabs(m.v[DS_METRIC_host_exposed_ms]) < EPS);
}

Test(analyze, the_ddp_logger_counts_the_loss_as_backward) {
  /* DDP's forward calls prepare_for_backward as it returns, which starts
   * the logger's backward compute timer (reducer.cpp); the loss, computed
   * outside the module, runs after it. Rank 0 under no_sync 2: f1 [0, 10),
   * loss l1 [10, 14), b1 [14, 30), f2 [30, 40), loss l2 [40, 44), b2
   * [44, 70): the synchronised micro-step's backward compute is 70 - 40 =
   * 30 us (26 from its first backward op); the first micro-step's loss is
   * not in it. */
  static const struct ds_op ops[] = {
      {.stream = DS_STREAM_COMPUTE, .kind = DS_OP_FWD, .name = "f1", .bucket = -1},
      {.stream = DS_STREAM_COMPUTE, .kind = DS_OP_LOSS, .name = "loss", .bucket = -1},
      {.stream = DS_STREAM_COMPUTE, .kind = DS_OP_BWD, .name = "b1", .bucket = -1},
      {.stream = DS_STREAM_COMPUTE, .kind = DS_OP_FWD, .name = "f2", .bucket = -1},
      {.stream = DS_STREAM_COMPUTE, .kind = DS_OP_LOSS, .name = "loss", .bucket = -1},
      {.stream = DS_STREAM_COMPUTE, .kind = DS_OP_BWD, .name = "b2", .bucket = -1},
  };
  struct ds_timed_op t[] = {{&ops[0], 0, 10000},     {&ops[1], 10000, 14000},
                            {&ops[2], 14000, 30000}, {&ops[3], 30000, 40000},
                            {&ops[4], 40000, 44000}, {&ops[5], 44000, 70000}};
  struct ds_metrics m;
  cr_assert_eq(ds_metrics_measure(t, 6, DS_METRICS_NO_PREVIOUS, &m), DS_OK);
  cr_assert(fabs(m.v[DS_METRIC_ddp_bwd_compute_ms] - 0.030) < EPS, "%g",
            m.v[DS_METRIC_ddp_bwd_compute_ms]);
}

/* "--flag=value" as ddpsim itself reads it (base/cli.h
 * ds_cli_split_values): the same output as "--flag value"; --per-op takes
 * no value; the joined form counts towards the repeat check. */
Test(analyze, a_long_flag_takes_its_value_after_an_equals_sign) {
  struct ds_test_result apart = run(NULL, H100 "p1.csv " H100 "t1-spin.csv --format csv");
  struct ds_test_result joined = run(NULL, H100 "p1.csv " H100 "t1-spin.csv --format=csv");
  cr_assert_eq(apart.status, 0, "%s", apart.err);
  cr_assert_eq(joined.status, 0, "%s", joined.err);
  cr_assert_str_eq(joined.out, apart.out);
  ds_test_release(&apart);
  ds_test_release(&joined);
  struct ds_err err = {0};
  char *per_op[] = {"analyze", "p.csv", "--per-op=1", NULL};
  cr_assert_eq(ds_analyze_check_args(3, per_op, &err), DS_EUSAGE);
  cr_assert_str_eq(err.msg, "option --per-op takes no value");
  char *twice[] = {"analyze", "p.csv", "--format=csv", "--format", "json", NULL};
  cr_assert_eq(ds_analyze_check_args(5, twice, &err), DS_EUSAGE);
  cr_assert_str_eq(err.msg, "option --format given twice");
  char *empty[] = {"analyze", "p.csv", "--format=", NULL};
  cr_assert_eq(ds_analyze_check_args(3, empty, &err), DS_EUSAGE);
  cr_assert_str_eq(err.msg, "option --format: expected a value, got an empty string");
}

/* The measured column is the mean over the measured iterations, and the
 * text says so; ddpreal's p50 and --plot's iteration are the (lower)
 * median one, printed beside it. Expected, because each of t1-spin's 10
 * iterations, measured alone (--iter), has its own iter_ms: their mean,
 * and the 5th smallest with its iteration, are the line's numbers. */
Test(analyze, the_measured_iteration_time_says_mean_and_median) {
  double ms[10], sorted[10], sum = 0;
  for (int i = 0; i < 10; i++) {
    char args[160];
    snprintf(args, sizeof args, H100 "t1-spin.csv --iter %d --format csv", i);
    struct ds_test_result r = run(NULL, args);
    cr_assert_eq(r.status, 0, "stderr: %s", r.err);
    const char *v = strstr(r.out, "\niter_ms,");
    cr_assert_not_null(v, "%s", r.out);
    ms[i] = sorted[i] = strtod(v + strlen("\niter_ms,"), NULL);
    sum += ms[i];
    ds_test_release(&r);
  }
  for (int i = 1; i < 10; i++) /* insertion sort: the lower median is sorted[4] */
    for (int j = i; j > 0 && sorted[j - 1] > sorted[j]; j--) {
      double t = sorted[j];
      sorted[j] = sorted[j - 1];
      sorted[j - 1] = t;
    }
  int at = 0;
  while (ms[at] != sorted[4]) at++;
  struct ds_test_result r = run(NULL, H100 "p1.csv " H100 "t1-spin.csv");
  cr_assert_eq(r.status, 0, "stderr: %s", r.err);
  cr_assert(strstr(r.out, "(real): 10 iterations (0..9); metrics and op times: the mean over "
                          "them\n"), "%s", r.out);
  cr_assert(strstr(r.out, "(ms unless _pct; measured: the mean over the 10 measured iterations; "
                          "error = predicted - measured)\n"), "%s", r.out);
  char want[160];
  snprintf(want, sizeof want, "\nmeasured iter_ms: mean %.4f, median %.4f (iteration %d, which "
           "--plot draws), stddev ", sum / 10, sorted[4], at);
  cr_assert(strstr(r.out, want), "%s\nin:\n%s", want, r.out);
  ds_test_release(&r);
}
