/*
 * Predicted and measured sweeps (sim/cli/sweep_measured.c, sim/cli/sweep_plot.c;
 * docs/sweeps.md): the prediction's error at measured points with known
 * answers (exact, interpolated, outside), which optimum each side picks,
 * reading measured tables (hand-written and ddpsim's own CSV) and their
 * errors, and the sweep plots with measured points (PNG and SVG, a
 * world-size axis). End-to-end cases run $DDPSIM_BIN (else
 * build/asan/ddpsim).
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sim/cli/options.h"
#include "sim/cli/sweep_measured.h"
#include "sim/cli/sweep_plot.h"
#include "tests/support.h"

#define TINY "--topo tests/data/tiny-topo.yaml --model tests/data/tiny-model.yaml "

/* Loads text as the --measured table of a sweep given by args. */
static ds_status load_text(const char *args, const char *text, struct ds_measured *m,
                           struct ds_err *err, char *path) {
  struct ds_options o;
  char line[512];
  strcpy(path, "/tmp/ddpsim-measured-XXXXXX");
  ds_test_write_temp(path, text);
  snprintf(line, sizeof line, "--topo x %s --measured %s", args, path);
  cr_assert_eq(ds_test_options_parse(line, &o, err), DS_OK, "%s", err->msg);
  ds_status st = ds_measured_load(&o, m, err);
  unlink(path);
  return st;
}

/* ---- the comparison ------------------------------------------------------ */

/* Predicted: x 1, 5, 25 at 10, 8, 9 ms (exposed 2, 1, 1.5). */
static const struct ds_sweep_point pred[] = {
    {1, 10, 2, "1", 0}, {5, 8, 1, "5", 0}, {25, 9, 1.5, "25", 0}};

Test(sweep_measured, errors_at_exact_interpolated_and_outside_points) {
  /* measured x=5 at 10 ms: exact, error 8 - 10 = -2 ms, -20 %;
   * x=15 at 8.5 ms: between 5 and 25, predicted 8 + (15-5)/(25-5)*(9-8)
   * = 8.5, error 0; exposed 1 + 0.5*0.5 = 1.25;
   * x=100 at 9 ms: outside 1..25, not compared;
   * x=25 at 7.2 ms: exact, error 9 - 7.2 = 1.8 ms, +25 %.
   * mean |error| (2 + 0 + 1.8)/3 ms, (0.2 + 0 + 0.25)/3; largest 2 ms, 25 %. */
  struct ds_measured_point p[] = {{5, 10, NAN, 2}, {15, 8.5, 1.0, 3}, {100, 9, NAN, 4},
                                  {25, 7.2, 1.4, 5}};
  struct ds_measured m = {p, 4, 4, 1};
  struct ds_measured_cmp c;
  struct ds_err err = {0};
  cr_assert_eq(ds_measured_compare(pred, 3, 0, &m, &c, &err), DS_OK);
  cr_assert_eq(c.e[0].where, DS_MEASURED_EXACT);
  cr_assert_float_eq(c.e[0].err_ms, -2.0, 1e-12);
  cr_assert_float_eq(c.e[0].err_rel, -0.2, 1e-12);
  cr_assert_eq(c.e[1].where, DS_MEASURED_INTERPOLATED);
  cr_assert_float_eq(c.e[1].predicted_ms, 8.5, 1e-12);
  cr_assert_float_eq(c.e[1].err_ms, 0.0, 1e-12);
  cr_assert_float_eq(c.e[1].predicted_exposed_ms, 1.25, 1e-12);
  cr_assert_eq(c.e[2].where, DS_MEASURED_OUTSIDE);
  cr_assert(isnan(c.e[2].predicted_ms));
  cr_assert_float_eq(c.e[3].err_ms, 1.8, 1e-12);
  cr_assert_float_eq(c.e[3].err_rel, 0.25, 1e-12);
  cr_assert_eq(c.n_compared, 3);
  cr_assert_float_eq(c.mean_abs_ms, 3.8 / 3, 1e-12);
  cr_assert_float_eq(c.mean_abs_rel, 0.45 / 3, 1e-12);
  cr_assert_float_eq(c.max_abs_ms, 2.0, 1e-12);
  cr_assert_float_eq(c.max_abs_rel, 0.25, 1e-12);
  /* by iteration time: predicted best x=5 (8 ms); measured best x=25
   * (7.2 ms); of the compared points the prediction ranks x=5 best (8
   * against 8.5 and 9): the optima differ. */
  cr_assert_eq(c.pred_best, 1);
  cr_assert_eq(c.meas_best, 3);
  cr_assert_eq(c.pred_best_measured, 0);
  cr_assert(!c.match);
  ds_measured_cmp_release(&c);
  /* per sample (a world-size sweep): cost ms/x. Predicted 10, 1.6, 0.36:
   * x=25; measured 2, 0.567, 0.09, 0.288: x=100 (outside, but measured);
   * the prediction's best of the compared points: 1.6, 0.567, 0.36: x=25.
   * 25 != 100: they differ. */
  cr_assert_eq(ds_measured_compare(pred, 3, 1, &m, &c, &err), DS_OK);
  cr_assert_eq(c.pred_best, 2);
  cr_assert_eq(c.meas_best, 2);
  cr_assert_eq(c.pred_best_measured, 3);
  cr_assert(!c.match);
  ds_measured_cmp_release(&c);
}

Test(sweep_measured, optima_match_when_both_pick_the_same_value) {
  /* measured 1 -> 12, 5 -> 9, 25 -> 9.5: measured best 5, predicted best
   * 5: a match, though every point is off by 1 to 2 ms. */
  struct ds_measured_point p[] = {{1, 12, NAN, 2}, {5, 9, NAN, 3}, {25, 9.5, NAN, 4}};
  struct ds_measured m = {p, 3, 3, 0};
  struct ds_measured_cmp c;
  struct ds_err err = {0};
  cr_assert_eq(ds_measured_compare(pred, 3, 0, &m, &c, &err), DS_OK);
  cr_assert_eq(c.meas_best, 1);
  cr_assert_eq(c.pred_best_measured, 1);
  cr_assert(c.match);
  cr_assert_float_eq(c.max_abs_ms, 2.0, 1e-12);
  ds_measured_cmp_release(&c);
}

/* ---- reading measured tables --------------------------------------------- */

Test(sweep_measured, reads_hand_written_tables_and_ddpsims_own_csv) {
  /* '#' and blank lines skipped (line numbers still count them), quoted
   * fields, other columns ignored, padded names, an empty exposed field. */
  struct ds_measured m;
  struct ds_err err = {0};
  char path[64];
  cr_assert_eq(load_text("--bucket-mb 1,25",
                         "# measured on 2 nodes\n\n note , bucket_mb,iter_ms,exposed_comm_ms\n"
                         "\"run, first\",1,30.5,4\n\"b\",25,28.25,\n",
                         &m, &err, path), DS_OK, "%s", err.msg);
  cr_assert_eq(m.n, 2);
  cr_assert(m.has_exposed);
  cr_assert_eq(m.p[0].x, 1.0);
  cr_assert_eq(m.p[0].iter_ms, 30.5);
  cr_assert_eq(m.p[0].exposed_comm_ms, 4.0);
  cr_assert_eq(m.p[0].line, 4);
  cr_assert_eq(m.p[1].x, 25.0);
  cr_assert(isnan(m.p[1].exposed_comm_ms));
  ds_measured_release(&m);
  /* ddpsim's own --format csv output of a world-size sweep */
  struct ds_test_result r = ds_test_cli(TINY "--world-size 2,4 --format csv");
  cr_assert_eq(r.status, 0, "%s", r.err);
  cr_assert_eq(load_text("--world-size 1,2,4", r.out, &m, &err, path), DS_OK, "%s", err.msg);
  cr_assert_eq(m.n, 2);
  cr_assert_eq(m.p[1].x, 4.0);
  cr_assert_float_eq(m.p[1].iter_ms, ds_test_csv_num(r.out, "iter_ms", 1), 1e-9);
  cr_assert_float_eq(m.p[1].exposed_comm_ms, ds_test_csv_num(r.out, "exposed_comm_ms", 1),
                     1e-9);
  ds_measured_release(&m);
  ds_test_release(&r);
  /* a file saved with CRLF line ends */
  cr_assert_eq(load_text("--bucket-mb 1,25", "bucket_mb,iter_ms\r\n1,2.5\r\n25,2\r\n", &m, &err,
                         path), DS_OK, "%s", err.msg);
  cr_assert_eq(m.n, 2);
  cr_assert_eq(m.p[1].iter_ms, 2.0);
  ds_measured_release(&m);
  /* hooks by name, in any spelling ds_comm_hook_parse takes, as indices */
  cr_assert_eq(load_text("--comm-hook none,fp16,powersgd:2",
                         "comm_hook,iter_ms\npowersgd:2,3\nnone,4\n", &m, &err, path), DS_OK,
               "%s", err.msg);
  cr_assert_eq(m.p[0].x, 2.0);
  cr_assert_eq(m.p[1].x, 0.0);
  cr_assert(!m.has_exposed);
  ds_measured_release(&m);
}

Test(sweep_measured, malformed_tables_name_file_line_and_column) {
  const char *cases[][3] = {
      {"--bucket-mb 1,25", "bucket,iter_ms\n1,2\n", ":1: the header row has no bucket_mb column"},
      {"--bucket-mb 1,25", "bucket_mb,time\n1,2\n", ":1: the header row has no iter_ms column"},
      {"--bucket-mb 1,25", "bucket_mb,iter_ms\n1,abc\n", ":2:2: column 'iter_ms': expected"},
      {"--bucket-mb 1,25", "# c\nbucket_mb,iter_ms\n\n1,2\nx,3\n", ":5:1: column 'bucket_mb'"},
      {"--bucket-mb 1,25", "bucket_mb,iter_ms\n1,-2\n", ":2:2:"},
      {"--bucket-mb 1,25", "bucket_mb,iter_ms,exposed_comm_ms\n1,2,-1\n", ":2:3:"},
      /* accepted before, and printed 300 digits or an error of 1e302 %:
       * an iteration from 1 us (the printed resolution) to 1e6 s, exposed
       * communication within its row's iteration */
      {"--bucket-mb 1,25", "bucket_mb,iter_ms\n1,1e308\n",
       ":2:2: column 'iter_ms': expected an iteration time in ms from 0.001 to 1e9, got "
       "\"1e308\""},
      {"--bucket-mb 1,25", "bucket_mb,iter_ms\n1,1e-300\n", ":2:2: column 'iter_ms'"},
      {"--bucket-mb 1,25", "bucket_mb,iter_ms,exposed_comm_ms\n1,2,1e10\n",
       ":2:3: column 'exposed_comm_ms': expected a time in ms from 0 to 1e9, or nothing"},
      {"--bucket-mb 1,25", "bucket_mb,exposed_comm_ms,iter_ms\n1,2,1\n1,1,1\n",
       ":2:2: column 'exposed_comm_ms': 2 ms exceeds the row's iter_ms, 1 ms"},
      {"--bucket-mb 1,25", "bucket_mb,iter_ms\n1,2,3\n", ":2: 3 fields, but the header row has 2"},
      {"--bucket-mb 1,25", "bucket_mb,iter_ms\n\"1,2\n", "malformed CSV"},
      {"--bucket-mb 1,25", "bucket_mb,iter_ms\n", "no data rows"},
      {"--bucket-mb 1,25", "# nothing\n", "no header row"},
      {"--comm-hook none,fp16", "comm_hook,iter_ms\nbf16,2\n",
       ":2:1: column 'comm_hook': expected one of the swept hooks (none, fp16)"},
      {"--bucket-mb 1,25", "bucket_mb,iter_ms, iter_ms\n1,2,3\n",
       ":1: the header row names iter_ms twice (columns 2 and 3)"},
      /* ddpsim's own --format json given where its CSV works: named as JSON */
      {"--bucket-mb 1,25", "[\n  {\"strategy\": \"ddp\", \"bucket_mb\": 1, \"iter_ms\": 2}\n]\n",
       ":1: the header row has no bucket_mb column (expected bucket_mb, the swept option "
       "--bucket-mb's value, and iter_ms; exposed_comm_ms optional); this looks like JSON: "
       "give a CSV table (ddpsim's --format csv output is one)"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    struct ds_measured m;
    struct ds_err err = {0};
    char path[64], want[512];
    cr_assert_eq(load_text(cases[i][0], cases[i][1], &m, &err, path), DS_EINPUT,
                 "case %zu accepted", i);
    snprintf(want, sizeof want, "%s%s", path, cases[i][2]);
    if (cases[i][2][0] != ':') snprintf(want, sizeof want, "%s", cases[i][2]);
    cr_assert(strstr(err.msg, want), "case %zu: %s (want %s)", i, err.msg, want);
    cr_assert(strstr(err.msg, path), "case %zu names the file: %s", i, err.msg);
    cr_assert_null(m.p);
  }
  /* end to end: exit 2, nothing printed, before any simulation */
  ds_test_ddpsim_refuses(TINY "--bucket-mb 1,25 --measured /nonexistent/m.csv",
                         "--measured /nonexistent/m.csv: cannot open");
  ds_test_ddpsim_refuses(TINY "--measured tests/data/tiny-model.yaml",
                         "option --measured draws a sweep of one option");
  ds_test_ddpsim_refuses(TINY "--bucket-mb 1,25 --batch 1,2 --measured x.csv",
                         "(2 given");
}

/* A value that is none of twenty swept hooks lists them all (the list
 * was cut at 255 bytes, after the 17th). */
Test(sweep_measured, an_unknown_hook_lists_every_swept_one) {
  char args[400], want[400];
  size_t a = 0, w = 0;
  a += (size_t)snprintf(args, sizeof args, "--comm-hook ");
  w += (size_t)snprintf(want, sizeof want, "expected one of the swept hooks (");
  for (int k = 1001; k <= 1020; k++) {
    a += (size_t)snprintf(args + a, sizeof args - a, "%spowersgd:%d", k > 1001 ? "," : "", k);
    w += (size_t)snprintf(want + w, sizeof want - w, "%spowersgd:%d", k > 1001 ? ", " : "", k);
  }
  snprintf(want + w, sizeof want - w, "), got \"bf16\"");
  cr_assert_lt(a, sizeof args);
  cr_assert_gt(strlen(want), 255u);
  struct ds_measured m;
  struct ds_err err = {0};
  char path[64];
  cr_assert_eq(load_text(args, "comm_hook,iter_ms\nbf16,2\n", &m, &err, path), DS_EINPUT);
  cr_assert(strstr(err.msg, want), "%s\nwant %s", err.msg, want);
}

/* ---- end to end ---------------------------------------------------------- */

Test(sweep_measured, report_prints_errors_and_the_optimum) {
  /* Measured = predicted + 0.1 ms at 1 MiB and predicted - 0.05 ms at 25
   * MiB: errors -0.100 and +0.050 ms; the measured best is 25 MiB, which
   * the prediction also ranks best (it is below 1 MiB's by 12 us; both
   * caps with a 1 MiB first bucket). */
  struct ds_test_result p = ds_test_cli(TINY "--bucket-mb 1,25 --first-bucket-mb 1 --format csv");
  cr_assert_eq(p.status, 0, "%s", p.err);
  double t1 = ds_test_csv_num(p.out, "iter_ms", 0), t25 = ds_test_csv_num(p.out, "iter_ms", 1);
  cr_assert_lt(t25, t1);
  char path[] = "/tmp/ddpsim-measured-XXXXXX", text[256], args[512], want[256];
  snprintf(text, sizeof text, "bucket_mb,iter_ms\n1,%.6f\n25,%.6f\n", t1 + 0.1, t25 - 0.05);
  ds_test_write_temp(path, text);
  snprintf(args, sizeof args, TINY "--bucket-mb 1,25 --first-bucket-mb 1 --measured %s", path);
  struct ds_test_result r = ds_test_cli(args);
  cr_assert_eq(r.status, 0, "%s", r.err);
  snprintf(want, sizeof want, "\n                 1  %12.3f  %12.3f      -0.100  %+7.1f%%\n",
           t1 + 0.1, t1, -100 * 0.1 / (t1 + 0.1));
  cr_assert(strstr(r.out, want), "want %s in %s", want, r.out);
  snprintf(want, sizeof want, "\n                25  %12.3f  %12.3f      +0.050  %+7.1f%%\n",
           t25 - 0.05, t25, 100 * 0.05 / (t25 - 0.05));
  cr_assert(strstr(r.out, want), "want %s in %s", want, r.out);
  cr_assert(strstr(r.out, "|error|: mean 0.075 ms"), "%s", r.out);
  cr_assert(strstr(r.out, "best: the optima match\n"), "%s", r.out);
  ds_test_release(&r);
  /* csv and json stay tables: no comparison text, so without --plot,
   * which draws the points, the file changed nothing (exit 0, the same
   * table byte for byte) and is refused as ignored */
  snprintf(args, sizeof args, TINY "--bucket-mb 1,25 --first-bucket-mb 1 --measured %s --format csv", path);
  ds_test_ddpsim_refuses(args, "option --measured: with --format csv and no --plot it would "
                               "be ignored (the comparison is the text report's, the points "
                               "--plot's): give --format text or --plot FILE.png");
  snprintf(args, sizeof args, TINY "--bucket-mb 1,25 --measured %s --format json", path);
  ds_test_ddpsim_refuses(args, "option --measured: with --format json and no --plot");
  ds_test_release(&p);
  unlink(path);
}

/* Runs a plot and checks the image starts with magic (of magic_len bytes). */
static void plot_and_check(const char *sweep, const char *measured, const char *ext,
                           const char *magic, size_t magic_len) {
  char dir[] = "/tmp/ddpsim-swmeas-XXXXXX", args[768], img[300];
  cr_assert(mkdtemp(dir) != NULL);
  snprintf(img, sizeof img, "%s/s.%s", dir, ext);
  snprintf(args, sizeof args, TINY "%s --plot %s%s%s", sweep, img,
           measured ? " --measured " : "", measured ? measured : "");
  struct ds_test_result r = ds_test_cli(args);
  cr_assert_eq(r.status, 0, "%s: %s", args, r.err);
  ds_test_assert_image(img, magic, magic_len);
  ds_test_release(&r);
  unlink(img);
  cr_assert_eq(rmdir(dir), 0, "no temporary file left in %s", dir);
}

Test(sweep_measured, plots_with_measured_points_png_and_svg) {
  ds_test_require_gnuplot();
  char path[] = "/tmp/ddpsim-measured-XXXXXX";
  ds_test_write_temp(path, "bucket_mb,iter_ms,exposed_comm_ms\n1,2.0,0.6\n5,1.9,\n"
                           "25,1.7,0.5\n100,1.8,0.4\n");
  plot_and_check("--bucket-mb 1:25:log4", path, "png", "\x89PNG\r\n\x1a\n", 8);
  plot_and_check("--bucket-mb 1:25:log4", path, "svg", "<?xml", 5);
  unlink(path);
  /* a world-size sweep (throughput on a second axis) and a hook sweep
   * (the hooks' names along x) */
  plot_and_check("--world-size 1,2,3,4", NULL, "png", "\x89PNG\r\n\x1a\n", 8);
  plot_and_check("--comm-hook none,fp16,bf16", NULL, "svg", "<?xml", 5);
}

Test(sweep_measured, log_axis_by_the_spread) {
  /* log when the values came from logN, or all > 0 spanning 8x or more
   * (8, 16, 32, 64 ranks); never for hooks (names) or with a 0 (jitter). */
  struct ds_sweep_point p[4] = {{8, 0, 0, "", 0}, {16, 0, 0, "", 0}, {32, 0, 0, "", 0},
                                {64, 0, 0, "", 0}};
  cr_assert(!ds_sweep_plot_log_x(DS_VAR_WORLD_SIZE, 0, p, 3), "8..32: 4x");
  cr_assert(ds_sweep_plot_log_x(DS_VAR_WORLD_SIZE, 0, p, 4), "8..64: 8x");
  cr_assert(ds_sweep_plot_log_x(DS_VAR_BUCKET_MB, 1, p, 2), "a logN range");
  cr_assert(!ds_sweep_plot_log_x(DS_VAR_COMM_HOOK, 1, p, 4), "hooks are names");
  struct ds_sweep_point j[3] = {{0, 0, 0, "", 0}, {0.1, 0, 0, "", 0}, {1, 0, 0, "", 0}};
  cr_assert(!ds_sweep_plot_log_x(DS_VAR_JITTER, 0, j, 3), "a 0 on the axis");
}

Test(sweep_measured, repeated_rows_at_the_predictions_pick_report_its_best) {
  /* measured x=5 twice (9.5 and 9.1 ms), x=25 at 9.0: the prediction
   * ranks x=5 best (8 ms); of its two rows the better measured, 9.1, is
   * what "measured there" reports; the measured best is x=25. */
  struct ds_measured_point p[] = {{5, 9.5, NAN, 2}, {5, 9.1, NAN, 3}, {25, 9.0, NAN, 4}};
  struct ds_measured m = {p, 3, 3, 0};
  struct ds_measured_cmp c;
  struct ds_err err = {0};
  cr_assert_eq(ds_measured_compare(pred, 3, 0, &m, &c, &err), DS_OK);
  cr_assert_eq(c.pred_best_measured, 1);
  cr_assert_eq(c.meas_best, 2);
  cr_assert(!c.match);
  ds_measured_cmp_release(&c);
}

Test(sweep_measured, small_integer_ranges_and_flat_times_read_plainly) {
  /* 1, 2, 4, 8 ranks span 8x but stay linear (a log axis makes linear
   * scaling look super-linear), from a logN range too; 1..16 is log. */
  struct ds_sweep_point p[5] = {{1, 10, 0, "", 0}, {2, 10, 0, "", 0}, {4, 10, 0, "", 0},
                                {8, 10, 0, "", 0}, {16, 10, 0, "", 0}};
  cr_assert(!ds_sweep_plot_log_x(DS_VAR_WORLD_SIZE, 0, p, 4), "1..8");
  cr_assert(!ds_sweep_plot_log_x(DS_VAR_WORLD_SIZE, 1, p, 4), "1..8 from log4");
  cr_assert(ds_sweep_plot_log_x(DS_VAR_WORLD_SIZE, 0, p, 5), "1..16");
  cr_assert(ds_sweep_plot_log_x(DS_VAR_BUCKET_MB, 0, p, 4), "1..8 MiB: not an integer option");
  /* the iteration axis: 66.0 to 66.4 ms (0.6 % apart) spans the times;
   * 10 to 12 ms (17 %) starts at 0, as does a sweep ranked per sample */
  struct ds_sweep_point t[2] = {{1, 66.0, 0, "", 0}, {200, 66.4, 0, "", 0}};
  cr_assert(ds_sweep_plot_zoom_y(DS_VAR_BUCKET_MB, t, 2));
  cr_assert(!ds_sweep_plot_zoom_y(DS_VAR_WORLD_SIZE, t, 2), "throughput on the right axis");
  t[1].iter_ms = 12;
  t[0].iter_ms = 10;
  cr_assert(!ds_sweep_plot_zoom_y(DS_VAR_BUCKET_MB, t, 2));
}

/* Runs ddpsim on the tiny model with extra, then a sweep of caps 1 and 4
 * MiB plotted under a gnuplot that tees the script it reads; returns that
 * script (malloc'd), the plot's folder removed. */
static char *plot_script(const char *extra) {
  char dir[] = "/tmp/ddpsim-swplot-XXXXXX", fake[300], gp[300], env[400], args[512];
  cr_assert_not_null(mkdtemp(dir));
  snprintf(fake, sizeof fake, "%s/gnuplot", dir);
  snprintf(gp, sizeof gp, "%s/script.gp", dir);
  FILE *f = fopen(fake, "w");
  cr_assert_not_null(f);
  fprintf(f, "#!/bin/sh\ntee '%s' | gnuplot\n", gp);
  fclose(f);
  cr_assert_eq(chmod(fake, 0755), 0);
  snprintf(env, sizeof env, "DDPSIM_GNUPLOT=%s", fake);
  snprintf(args, sizeof args, TINY "%s--bucket-mb 1,4 --plot %s/s.png", extra, dir);
  struct ds_test_result r = ds_test_run(env, ds_test_ddpsim(), args);
  cr_assert_eq(r.status, 0, "%s", r.err);
  char *script = ds_test_slurp(gp);
  cr_assert_not_null(script);
  ds_test_release(&r);
  char rm[400];
  snprintf(rm, sizeof rm, "rm -rf '%s'", dir);
  cr_assert_eq(system(rm), 0);
  return script;
}

Test(sweep_measured, a_flat_sweeps_plot_says_its_axis_is_not_from_zero) {
  /* the script gnuplot reads, kept by a gnuplot that tees its input: the
   * key below the plot, and for the tiny model's caps 1 and 4 MiB (1.828
   * and 1.821 ms, within a tenth) the iteration axis spans the times and
   * says so, exposed communication on the right axis */
  ds_test_require_gnuplot();
  char *script = plot_script("");
  cr_assert(strstr(script, "set key below horizontal\n"), "%s", script);
  cr_assert(strstr(script, "set ylabel 'iteration (ms; axis not from 0)'\n"), "%s", script);
  cr_assert(strstr(script, "using 1:3 axes x1y2 with linespoints"), "%s", script);
  free(script);
}

/* Every iteration the same (the tiny model's caps 1 and 2 MiB: one bucket
 * either way, 1.828 ms): the zoomed axis was an empty range, and gnuplot
 * wrote "Warning: empty y range [1.82838:1.82838], adjusting to ..." to
 * ddpsim's standard error; the axis is now set around the time. */
Test(sweep_measured, a_sweep_of_equal_times_plots_without_a_gnuplot_warning) {
  ds_test_require_gnuplot();
  char dir[] = "/tmp/ddpsim-swflat-XXXXXX", args[512], png[300];
  cr_assert_not_null(mkdtemp(dir));
  snprintf(png, sizeof png, "%s/s.png", dir);
  snprintf(args, sizeof args, TINY "--bucket-mb 1,2 --plot %s", png);
  struct ds_test_result r = ds_test_cli(args);
  cr_assert_eq(r.status, 0, "%s", r.err);
  cr_assert_str_eq(r.err, "", "stderr: %s", r.err);
  cr_assert_eq(unlink(png), 0, "no %s", png);
  ds_test_release(&r);
  /* no exposed communication anywhere: the right axis's "empty y2 range
   * [0:0], adjusting to [0:1]" */
  snprintf(args, sizeof args, TINY "--strategy single --straggler 0:1,1.001 --plot %s", png);
  r = ds_test_cli(args);
  cr_assert_eq(r.status, 0, "%s", r.err);
  cr_assert_str_eq(r.err, "", "stderr: %s", r.err);
  cr_assert_eq(unlink(png), 0, "no %s", png);
  cr_assert_eq(rmdir(dir), 0);
  ds_test_release(&r);
}

Test(sweep_measured, the_predicted_optimum_fits_in_memory) {
  /* per sample, x 1, 5, 25 at 10, 8, 9 ms cost 10, 1.6, 0.36: x=25, but
   * its memory does not fit: the predicted optimum is x=5, as the closing
   * line's best; none fitting: over all, x=25 again */
  struct ds_sweep_point q[3];
  memcpy(q, pred, sizeof q);
  q[2].over_memory = 1;
  struct ds_measured_point p[] = {{5, 10, NAN, 2}};
  struct ds_measured m = {p, 1, 1, 0};
  struct ds_measured_cmp c;
  struct ds_err err = {0};
  cr_assert_eq(ds_measured_compare(q, 3, 1, &m, &c, &err), DS_OK);
  cr_assert_eq(c.pred_best, 1);
  ds_measured_cmp_release(&c);
  q[0].over_memory = q[1].over_memory = 1;
  cr_assert_eq(ds_measured_compare(q, 3, 1, &m, &c, &err), DS_OK);
  cr_assert_eq(c.pred_best, 2);
  ds_measured_cmp_release(&c);
}

/* The plot's title names the precision as the text header does: --amp
 * fp16 trains an fp32 model under autocast, which changes every time of
 * the curves (the title named strategy, model and topology only). */
Test(sweep_measured, the_plot_title_names_the_precision) {
  ds_test_require_gnuplot();
  static const struct {
    const char *flag, *title;
  } cases[] = {{"", "'ddpsim: ddp tiny on tiny, fp32, --bucket-mb sweep'"},
               {"--amp fp16 ", "'ddpsim: ddp tiny on tiny, fp32 model, autocast fp16, "
                               "--bucket-mb sweep'"}};
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    char *script = plot_script(cases[i].flag);
    char want[256];
    snprintf(want, sizeof want, "set title %s\n", cases[i].title);
    cr_assert(strstr(script, want), "want %s in %s", want, script);
    free(script);
  }
}
