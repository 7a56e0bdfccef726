/*
 * `ddpsim analyze` on the recorded H100 traces (bench/results/) and a run's
 * own: the pair's recorded p50s, per-op text and CSV, determinism, a trace
 * against itself, the Chrome JSON on stdout and of one trace's processes,
 * --plot and a missing gnuplot, bad usage (exit status 2, a message), its
 * flags checked without reading a trace and against its --help. The binary
 * under test is $DDPSIM_BIN as in tests/test_cli.c.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/options_help.h"
#include "tests/support.h"
#include "analysis/analyze.h"
#include "traces/trace.h"

#define H100 "bench/results/gpu-2026-11-23-h100/"
Test(analyze, an_unreadable_trace_exits_2_naming_it) {
  struct ds_test_result r = ds_test_analyze(NULL, H100 "p1.csv /nonexistent/measured.csv");
  cr_assert_eq(r.status, 2, "stderr: %s", r.err);
  cr_assert(strstr(r.err, "/nonexistent/measured.csv"), "%s", r.err);
  ds_test_release(&r);
  r = ds_test_analyze(NULL, H100 "p1.csv " H100 "s1.csv"); /* a schedule, not a trace */
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
    struct ds_test_result r = ds_test_analyze(NULL, bad[i]);
    cr_assert_eq(r.status, 2, "%s: status %d, stderr %s", bad[i], r.status, r.err);
    cr_assert(strstr(r.err, "ddpsim: "), "%s", r.err);
    ds_test_release(&r);
  }
}

/* --skip-measured past the measured trace's iterations: the message gives
 * the count skipped, t2-spin.csv's 10, beside the N asked for (it said "50
 * iterations skipped"). */
Test(analyze, skipping_every_measured_iteration_says_how_many_there_were) {
  struct ds_test_result r = ds_test_analyze(NULL, H100 "p2.csv " H100 "t2-spin.csv --skip-measured 50");
  cr_assert_eq(r.status, 2, "%s", r.err);
  cr_assert(strstr(r.err, "t2-spin.csv: no measured iterations left to compare: "
                   "--skip-measured 50 skips all 10 of them"), "%s", r.err);
  ds_test_release(&r);
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
  cr_assert_str_eq(err.msg, "unknown option \"--per_op\" (did you mean --per-op? see ddpsim analyze "
                   "--help)");
  char *per_op[] = {"analyze", "p.csv", "--per-op", NULL};
  cr_assert_eq(ds_analyze_check_args(3, per_op, &err), DS_OK, "%s", err.msg);
}

Test(analyze, h100_pair_matches_the_recorded_p50s) {
  /* bench/results/gpu-2026-11-23-h100/README.md: prediction 9.573 ms, spin
   * replay p50 9.928 ms (the mean here, over the same 10 iterations). */
  struct ds_test_result r = ds_test_analyze(NULL, H100 "p1.csv " H100 "t1-spin.csv --format csv");
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
  struct ds_test_result r = ds_test_analyze(NULL, a);
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
  r = ds_test_analyze(NULL, a);
  cr_assert_eq(r.status, 0, "stderr: %s", r.err);
  for (const char *p = r.out; (p = strstr(p, "_pct\"")); p++) {
    const char *end = strchr(p, '}');
    cr_assert(end && strstr(p, "\"rel_error\": null") && strstr(p, "\"rel_error\": null") < end,
              "%.160s", p);
  }
  ds_test_release(&r);
  r = ds_test_analyze(NULL, args);
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
    struct ds_test_result r = ds_test_analyze(NULL, args[i]);
    cr_assert_eq(r.status, 0, "stderr: %s", r.err);
    const char *t = strstr(r.out, "per op (ms from the iteration start)\n");
    cr_assert(t, "%s", r.out);
    cr_assert(strstr(t, "  rank    op id stream  kind  "), "%.200s", t);
    cr_assert(strstr(t, " compute fwd  "), "%.400s", t);
    ds_test_release(&r);
  }
  /* and so does the largest-errors table every comparison prints */
  struct ds_test_result r = ds_test_analyze(NULL, H100 "p1.csv " H100 "t1-spin.csv");
  cr_assert_eq(r.status, 0, "stderr: %s", r.err);
  const char *t = strstr(r.out, "largest duration errors\n");
  cr_assert(t, "%s", r.out);
  cr_assert(strstr(t, "   op id  rank stream  kind  "), "%.200s", t);
  cr_assert(strstr(t, " comm    allreduce  bucket"), "%.400s", t);
  ds_test_release(&r);
}

Test(analyze, a_trace_against_itself_has_no_error) {
  /* ddpsim's own trace: iteration 0 is the pre-rebuild one, skipped. */
  struct ds_test_result r =
      ds_test_analyze(NULL, H100 "p2.csv " H100 "p2.csv --skip-measured 1 --format json");
  cr_assert_eq(r.status, 0, "stderr: %s", r.err);
  cr_assert(strstr(r.out, "\"dur_abs_ms\": {\"n\": 450, \"mean\": 0.000000, \"median\": "
                          "0.000000, \"p95\": 0.000000, \"max\": 0.000000}"), "%s", r.out);
  cr_assert(strstr(r.out, "\"start_abs_ms\": {\"n\": 450, \"mean\": 0.000000"), "%s", r.out);
  ds_test_release(&r);
  /* Without options: iteration 0 (one bucket, before the rebuild) is
   * another schedule than predicted iteration 1 and is left out, said so;
   * iteration 1 joins, with no error. */
  r = ds_test_analyze(NULL, H100 "p2.csv " H100 "p2.csv");
  cr_assert_eq(r.status, 0, "stderr: %s", r.err);
  cr_assert(strstr(r.out, "(sim): 1 iteration (1..1); metrics and op times: the mean over them\n"), "%s", r.out);
  cr_assert(strstr(r.out, "\nleft out   measured iteration 0: not predicted iteration 1's "
                          "schedule"), "%s", r.out);
  cr_assert(strstr(r.out, "\niter_ms ") && strstr(r.out, "+0.0000"), "%s", r.out);
  ds_test_release(&r);
  r = ds_test_analyze(NULL, H100 "p2.csv " H100 "p2.csv --format json");
  cr_assert(strstr(r.out, "\"iterations\": [1], \"left_out\": [0], \"skipped\": 0"), "%s",
            r.out);
  cr_assert(strstr(r.out, "\"dur_abs_ms\": {\"n\": 450, \"mean\": 0.000000"), "%s", r.out);
  ds_test_release(&r);
  /* Predicted iteration 0 against the same trace: measured iteration 0
   * joins, so iteration 1 (another schedule after a joined one) is refused:
   * only leading iterations are left out. */
  r = ds_test_analyze(NULL, H100 "p2.csv " H100 "p2.csv --pred-iter 0");
  cr_assert_eq(r.status, 2, "stderr: %s", r.err);
  cr_assert(strstr(r.err, "are not traces of one schedule") &&
            strstr(r.err, "measured iteration 1"), "%s", r.err);
  ds_test_release(&r);
}

Test(analyze, static_graph_runs_two_iterations_before_the_rebuild) {
  /* --static-graph rebuilds before iteration 2 (docs/architecture.md, DDP),
   * whose forward runs the rebuild's broadcasts where it is not the reported
   * iteration: a trace of 4 iterations against itself joins 3 and leaves
   * out 0, 1 and 2; one of 5 joins 3 and 4. */
  char t[256], cmd[512];
  ds_test_analyze_tmpname(t, sizeof t, "sg");
  snprintf(cmd, sizeof cmd, "--topo 4gpu --static-graph --iters 4 --trace %s", t);
  struct ds_test_result r = ds_test_cli(cmd);
  cr_assert_eq(r.status, 0, "%s", r.err);
  ds_test_release(&r);
  snprintf(cmd, sizeof cmd, "%s %s", t, t);
  r = ds_test_analyze(NULL, cmd);
  cr_assert_eq(r.status, 0, "stderr: %s", r.err);
  cr_assert(strstr(r.out, "predicted  ") && strstr(r.out, "(sim): iteration 3\n"), "%s", r.out);
  cr_assert(strstr(r.out, "(sim): 1 iteration (3..3); metrics and op times: the mean over them\n"), "%s", r.out);
  cr_assert(strstr(r.out, "\nleft out   measured iterations 0, 1, 2: "), "%s", r.out);
  ds_test_release(&r);
  unlink(t);
  snprintf(cmd, sizeof cmd, "--topo 4gpu --static-graph --iters 5 --trace %s", t);
  r = ds_test_cli(cmd);
  cr_assert_eq(r.status, 0, "%s", r.err);
  ds_test_release(&r);
  snprintf(cmd, sizeof cmd, "%s %s", t, t);
  r = ds_test_analyze(NULL, cmd);
  cr_assert_eq(r.status, 0, "stderr: %s", r.err);
  cr_assert(strstr(r.out, "(sim): 2 iterations (3..4); metrics and op times: the mean over them\n"), "%s", r.out);
  cr_assert(strstr(r.out, "\nleft out   measured iterations 0, 1, 2: "), "%s", r.out);
  ds_test_release(&r);
  unlink(t);
}

Test(analyze, per_op_csv_has_one_row_per_joined_op) {
  struct ds_test_result r =
      ds_test_analyze(NULL, H100 "p2.csv " H100 "t2-spin.csv --format csv --per-op");
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
    struct ds_test_result a = ds_test_analyze(NULL, args[i]), b = ds_test_analyze(NULL, args[i]);
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

Test(analyze, plot_writes_a_png) {
  ds_test_require_gnuplot();
  char dir[] = "/tmp/ddpsim-plot-test-XXXXXX", args[1024], png[256];
  cr_assert(mkdtemp(dir) != NULL);
  snprintf(png, sizeof png, "%s/timeline.png", dir);
  snprintf(args, sizeof args, H100 "p2.csv " H100 "t2-spin.csv --plot %s", png);
  struct ds_test_result r = ds_test_analyze(NULL, args);
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
  struct ds_test_result r = ds_test_analyze("DDPSIM_GNUPLOT=/nonexistent/gnuplot", args);
  cr_assert_eq(r.status, 1, "stderr: %s", r.err);
  cr_assert(strstr(r.err, "gnuplot"), "%s", r.err);
  cr_assert(access(png, F_OK) != 0, "%s was written", png);
  ds_test_release(&r);
  r = ds_test_analyze("PATH=/nonexistent", args); /* no gnuplot on PATH */
  cr_assert_eq(r.status, 1, "stderr: %s", r.err);
  cr_assert(strstr(r.err, "gnuplot not found on PATH"), "%s", r.err);
  ds_test_release(&r);
}

/* ---- one trace alone ------------------------------------------------------ */

Test(analyze_one, matches_its_side_of_a_comparison) {
  /* p2.csv alone: its numbers are the predicted column of p2 against
   * itself; t2-spin.csv's iteration 9 alone: the measured column with only
   * iteration 9 measured. */
  struct ds_test_result a = ds_test_analyze(NULL, H100 "p2.csv --format csv");
  struct ds_test_result b =
      ds_test_analyze(NULL, H100 "p2.csv " H100 "p2.csv --skip-measured 1 --format csv");
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
  a = ds_test_analyze(NULL, H100 "t2-spin.csv --iter 9 --format csv");
  b = ds_test_analyze(NULL, H100 "p2.csv " H100 "t2-spin.csv --skip-measured 9 --format csv");
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
    struct ds_test_result r = ds_test_analyze(NULL, bad[i].args);
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
  struct ds_test_result plain = ds_test_analyze(NULL, H100 "p2.csv");
  struct ds_test_result r = ds_test_analyze(NULL, H100 "p2.csv --chrome -");
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
    struct ds_test_result r = ds_test_analyze(NULL, args);
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
  struct ds_test_result r = ds_test_analyze(NULL, args);
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
  struct ds_test_result r = ds_test_analyze("DDPSIM_GNUPLOT=/nonexistent/gnuplot", args);
  cr_assert_eq(r.status, 1, "stderr: %s", r.err);
  cr_assert(strstr(r.err, "gnuplot"), "%s", r.err);
  cr_assert_str_empty(r.out);
  ds_test_release(&r);
  cr_assert_eq(rmdir(dir), 0, "a file was left in %s", dir);
}

/* "--flag=value" as ddpsim itself reads it (base/cli.h
 * ds_cli_split_values): the same output as "--flag value"; --per-op takes
 * no value; the joined form counts towards the repeat check. */
Test(analyze, a_long_flag_takes_its_value_after_an_equals_sign) {
  struct ds_test_result apart =
      ds_test_analyze(NULL, H100 "p1.csv " H100 "t1-spin.csv --format csv");
  struct ds_test_result joined =
      ds_test_analyze(NULL, H100 "p1.csv " H100 "t1-spin.csv --format=csv");
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
    struct ds_test_result r = ds_test_analyze(NULL, args);
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
  struct ds_test_result r = ds_test_analyze(NULL, H100 "p1.csv " H100 "t1-spin.csv");
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
