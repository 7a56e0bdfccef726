/*
 * Sweeps and noise (sim/cli/options.c ranges, sim/cli/sweep.c, sim/train/jitter.c;
 * docs/sweeps.md): range grammar and its errors, the cross product's count
 * and order, parallel output byte-identical to in-process output, jitter's
 * determinism and distribution, the quantile columns, and the sweep plot.
 * Bad ranges and values and the other sweepable options:
 * test_sweep_options.c; what the closing line and each text block say:
 * test_sweep_text.c. End-to-end cases run
 * $DDPSIM_BIN (else build/asan/ddpsim).
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/support.h"
#include "sim/train/jitter.h"
#include "sim/cli/options.h"

/* ---- helpers ------------------------------------------------------------ */

#define TINY "--topo tests/data/tiny-topo.yaml --model tests/data/tiny-model.yaml "

/* ---- range grammar ------------------------------------------------------ */

Test(sweep, log_range_hits_both_endpoints_exactly) {
  /* 12 values from 1 to 100: ratio 100^(1/11) between neighbours, and the
   * endpoints exactly (not exp(log(100)), which may differ in the last bit). */
  struct ds_options o;
  ds_test_options_ok("--topo x --bucket-mb 1:100:log12", &o);
  const struct ds_values *v = &o.sweep[DS_VAR_BUCKET_MB];
  cr_assert_eq(v->n, 12);
  cr_assert(v->log_spaced);
  cr_assert_eq(v->v[0], 1.0);
  cr_assert_eq(v->v[11], 100.0);
  double r = pow(100.0, 1.0 / 11);
  for (int i = 1; i < 12; i++) cr_assert_float_eq(v->v[i] / v->v[i - 1], r, 1e-12);
  cr_assert_eq(o.n_bucket_mb, 12);
  cr_assert_eq(o.bucket_mb[11], 100.0);
}

Test(sweep, linear_range_steps_from_the_start_while_not_past_the_end) {
  /* 1:100:5 is 1, 6, ..., 96 (20 values; 101 > 100); 1:2:0.25 reaches 2
   * exactly, 5 values. */
  struct ds_options o;
  ds_test_options_ok("--topo x --bucket-mb 1:100:5", &o);
  const struct ds_values *v = &o.sweep[DS_VAR_BUCKET_MB];
  cr_assert_eq(v->n, 20);
  cr_assert_eq(v->v[0], 1.0);
  cr_assert_eq(v->v[19], 96.0);
  cr_assert(!v->log_spaced);
  ds_test_options_ok("--topo x --bucket-mb 1:2:0.25", &o);
  cr_assert_eq(o.sweep[DS_VAR_BUCKET_MB].n, 5);
  cr_assert_eq(o.sweep[DS_VAR_BUCKET_MB].v[4], 2.0);
  /* lists are as before: "1,5,25" */
  ds_test_options_ok("--topo x --bucket-mb 1,5,25", &o);
  cr_assert_eq(o.n_bucket_mb, 3);
  cr_assert_eq(o.bucket_mb[2], 25.0);
}

Test(sweep, integer_ranges_are_rounded_and_deduplicated) {
  /* 1:8:log6 = 1, 1.516, 2.297, 3.482, 5.278, 8 -> 1, 2, 2, 3, 5, 8 ->
   * 1, 2, 3, 5, 8. */
  struct ds_options o;
  ds_test_options_ok("--topo x --world-size 1:8:log6 --no-sync 1:3:1", &o);
  const struct ds_values *v = &o.sweep[DS_VAR_WORLD_SIZE];
  double want[] = {1, 2, 3, 5, 8};
  cr_assert_eq(v->n, 5);
  for (int i = 0; i < 5; i++) cr_assert_eq(v->v[i], want[i], "value %d: %g", i, v->v[i]);
  cr_assert_eq(o.sweep[DS_VAR_NO_SYNC].n, 3);
  cr_assert_eq(o.world_size, 1);
}

/* ---- cross product ------------------------------------------------------ */

Test(sweep, cross_product_count_and_order) {
  /* 2 world sizes x 3 batches x 2 caps = 12, world size outermost, the
   * bucket cap innermost. */
  struct ds_options o, c;
  ds_test_options_ok("--topo x --world-size 2,4 --batch 1:3:1 --bucket-mb 1,25", &o);
  cr_assert_eq(ds_options_n_configs(&o), 12);
  for (int64_t i = 0; i < 12; i++) {
    ds_options_config(&o, i, &c);
    cr_assert_eq(c.world_size, i < 6 ? 2 : 4, "config %lld", (long long)i);
    cr_assert_eq(c.batch, 1 + (i / 2) % 3);
    cr_assert_eq(c.bucket_mb[0], i % 2 ? 25.0 : 1.0);
    cr_assert_eq(c.n_bucket_mb, 1);
    cr_assert_eq(ds_options_n_configs(&c), 1);
  }
  struct ds_test_result r =
      ds_test_cli(TINY "--world-size 2,4 --batch 1:3:1 --bucket-mb 1,25 --format csv");
  cr_assert_eq(r.status, 0, "%s", r.err);
  int lines = 0;
  for (const char *p = r.out; *p; p++) lines += *p == '\n';
  cr_assert_eq(lines, 13, "%s", r.out);
  int w = ds_test_csv_column(r.out, "world_size"),
      b = ds_test_csv_column(r.out, "batch_per_gpu"),
      k = ds_test_csv_column(r.out, "bucket_mb");
  for (int i = 0; i < 12; i++) {
    const char *l = ds_test_csv_row(r.out, i);
    cr_assert_eq(ds_test_csv_field(l, w), i < 6 ? 2 : 4);
    cr_assert_eq(ds_test_csv_field(l, b), 1 + (i / 2) % 3);
    cr_assert_eq(ds_test_csv_field(l, k), i % 2 ? 25 : 1);
  }
  ds_test_release(&r);
}

Test(sweep, parallel_output_is_byte_identical_to_in_process) {
  const char *sweeps[] = {
      TINY "--world-size 1:4:1 --bucket-mb 1:30:log4 --iters 3",
      TINY "--world-size 2,4 --batch 1,3 --format csv --jitter 0.05 --samples 3",
      "--topo 4gpu --bucket-mb 1,5,25,100 --format json"};
  for (size_t i = 0; i < sizeof sweeps / sizeof *sweeps; i++) {
    char a[512], b[512];
    snprintf(a, sizeof a, "%s --jobs 1", sweeps[i]);
    snprintf(b, sizeof b, "%s --jobs 3", sweeps[i]);
    struct ds_test_result one = ds_test_cli(a), many = ds_test_cli(b);
    cr_assert_eq(one.status, 0, "%s", one.err);
    cr_assert_eq(many.status, 0, "%s", many.err);
    cr_assert_str_eq(many.out, one.out);
    cr_assert_str_eq(many.err, "", "not a terminal: no progress line");
    ds_test_release(&one);
    ds_test_release(&many);
  }
}

Test(sweep, closing_lines) {
  /* A bucket-only sweep keeps the "best bucket cap" line; any other sweep
   * names the best configuration and how flat the optimum is. */
  /* --first-bucket-mb 1: both caps bin a small first bucket, so 25 MiB
   * wins (with bucket_cap_mb=25's own first cap one bucket does not). */
  struct ds_test_result r = ds_test_cli(TINY "--bucket-mb 1,25 --first-bucket-mb 1");
  cr_assert(strstr(r.out, "\nbest bucket cap: 25 MiB (1.821 ms"), "%s", r.out);
  ds_test_release(&r);
  r = ds_test_cli(TINY "--world-size 2,4 --bucket-mb 1,25 --first-bucket-mb 1");
  cr_assert_eq(r.status, 0, "%s", r.err);
  cr_assert(strstr(r.out, "\nworld size 2, bucket cap 1 MiB"), "%s", r.out);
  cr_assert(strstr(r.out, "\nbest configuration: world-size=4 bucket-mb=25 ("), "%s", r.out);
  cr_assert(strstr(r.out, "configurations (flatness)\n"), "%s", r.out);
  ds_test_release(&r);
  r = ds_test_cli(TINY "--world-size 2,4 --trace /tmp/ddpsim-never.csv");
  cr_assert_eq(r.status, 2);
  cr_assert(strstr(r.err, "--world-size"), "%s", r.err);
  cr_assert_eq(access("/tmp/ddpsim-never.csv", F_OK), -1);
  ds_test_release(&r);
}

/* ---- jitter and samples ------------------------------------------------- */

Test(sweep, lognormal_draws_have_mean_1_and_the_given_cv) {
  /* 200000 compute ops and 1 comm op: the compute multipliers' sample mean
   * is 1 within 5 standard errors, 5 x 0.2/sqrt(200000) = 0.00224 (a
   * lognormal with the wrong mu, e.g. a mean 1 % off, sits 22 standard
   * errors away and fails; a correct one fails by chance with probability
   * 6e-7, and the seed is fixed), and their CV 0.2 within 3%; the comm op
   * keeps exactly 1; cv 0 gives exactly 1 everywhere. */
  struct ds_schedule *s;
  cr_assert_eq(ds_schedule_new(1, &s), DS_OK);
  size_t n = 200001;
  for (size_t i = 0; i < n; i++) {
    struct ds_op op = {.id = (int64_t)i, .stream = i == 7 ? DS_STREAM_COMM : DS_STREAM_COMPUTE,
                       .kind = i == 7 ? DS_OP_ALLREDUCE : DS_OP_FWD, .name = "x",
                       .layer = -1, .bucket = -1, .coll = -1, .root = -1, .dur_us = 1};
    cr_assert_eq(ds_schedule_add(s, &op, NULL, 0, NULL), DS_OK);
  }
  double *x = malloc(n * sizeof *x), *y = malloc(n * sizeof *y);
  cr_assert_eq(ds_jitter_fill(s, 0.2, 42, x), DS_OK);
  cr_assert_eq(ds_jitter_fill(s, 0.2, 42, y), DS_OK);
  cr_assert_eq(memcmp(x, y, n * sizeof *x), 0, "same seed, same draws");
  cr_assert_eq(x[7], 1.0);
  double sum = 0, sq = 0;
  for (size_t i = 0; i < n; i++) if (i != 7) { sum += x[i]; sq += x[i] * x[i]; }
  double mean = sum / (double)(n - 1), sd = sqrt(sq / (double)(n - 1) - mean * mean);
  double se = 0.2 / sqrt((double)(n - 1));
  cr_assert_float_eq(mean, 1.0, 5 * se, "mean %.6f, %.1f standard errors", mean,
                     (mean - 1) / se);
  cr_assert_float_eq(sd / mean, 0.2, 0.2 * 0.03);
  cr_assert_eq(ds_jitter_fill(s, 0.2, 43, y), DS_OK);
  cr_assert_neq(memcmp(x, y, n * sizeof *x), 0, "another seed, other draws");
  cr_assert_eq(ds_jitter_fill(s, 0, 42, x), DS_OK);
  for (size_t i = 0; i < n; i++) cr_assert_eq(x[i], 1.0);
  free(x);
  free(y);
  ds_schedule_free(s);
}

Test(sweep, quantiles_interpolate_order_statistics) {
  /* GSL's quantile of sorted x[0..n): x[f(n-1)] interpolated. For 100..1:
   * p50 = 50.5, p95 = 95.05, p99 = 99.01. */
  double x[100], p50, p95, p99;
  for (int i = 0; i < 100; i++) x[i] = 100 - i;
  ds_jitter_quantiles(x, 100, &p50, &p95, &p99);
  cr_assert_float_eq(p50, 50.5, 1e-12);
  cr_assert_float_eq(p95, 95.05, 1e-12);
  cr_assert_float_eq(p99, 99.01, 1e-12);
}

Test(sweep, jitter_is_deterministic_and_cv_0_equals_no_jitter) {
  struct ds_test_result base = ds_test_cli(TINY "--format csv --bucket-mb 1,25");
  struct ds_test_result zero = ds_test_cli(TINY "--format csv --bucket-mb 1,25 --jitter 0");
  struct ds_test_result a = ds_test_cli(TINY "--format csv --bucket-mb 1,25 --jitter 0.1 --seed 5");
  struct ds_test_result b = ds_test_cli(TINY "--format csv --bucket-mb 1,25 --jitter 0.1 --seed 5");
  struct ds_test_result c = ds_test_cli(TINY "--format csv --bucket-mb 1,25 --jitter 0.1 --seed 6");
  cr_assert_eq(base.status + zero.status + a.status + b.status + c.status, 0, "%s%s", a.err,
               c.err);
  cr_assert_str_eq(a.out, b.out);
  cr_assert_str_neq(a.out, c.out);
  /* Without --jitter the quantile columns are absent (existing outputs
   * unchanged); with CV 0 every original column is identical. */
  cr_assert(!strstr(base.out, "iter_p50_ms"));
  cr_assert(strstr(zero.out, ",iter_p50_ms,iter_p95_ms,iter_p99_ms,"), "%s", zero.out);
  int last = ds_test_csv_column(base.out, "per_batch_ms");
  for (int row = 0; row < 2; row++) {
    const char *l0 = ds_test_csv_row(base.out, row), *l1 = ds_test_csv_row(zero.out, row);
    const char *e0 = l0, *e1 = l1;
    for (int k = 0; k <= last; k++) {
      e0 = strchr(e0, ',') + 1;
      e1 = strchr(e1, ',') + 1;
    }
    cr_assert_eq(e0 - l0, e1 - l1);
    cr_assert_eq(strncmp(l0, l1, (size_t)(e0 - l0)), 0, "row %d:\n%s\n%s", row, l0, l1);
  }
  cr_assert_neq(ds_test_csv_num(a.out, "iter_ms", 0), ds_test_csv_num(base.out, "iter_ms", 0));
  ds_test_release(&base);
  ds_test_release(&zero);
  ds_test_release(&a);
  ds_test_release(&b);
  ds_test_release(&c);
}

Test(sweep, sample_quantiles_are_ordered_and_spread_with_noise) {
  struct ds_test_result r = ds_test_cli(TINY "--format csv --jitter 0.1 --samples 40");
  cr_assert_eq(r.status, 0, "%s", r.err);
  double p50 = ds_test_csv_num(r.out, "iter_p50_ms", 0),
         p95 = ds_test_csv_num(r.out, "iter_p95_ms", 0),
         p99 = ds_test_csv_num(r.out, "iter_p99_ms", 0);
  cr_assert_eq(ds_test_csv_num(r.out, "samples", 0), 40);
  cr_assert(p50 <= p95 && p95 <= p99, "%g %g %g", p50, p95, p99);
  cr_assert_gt(p99 - p50, 0.001, "CV 0.1 on ~1.7 ms of kernels: %g %g", p50, p99);
  /* the noise-free iteration (1.820569 ms) sits inside the samples' range */
  cr_assert_lt(fabs(p50 - 1.820569), 0.2, "%g", p50);
  ds_test_release(&r);
}

/* --jitter is the only random input: without it (or at CV 0) every seed
 * runs one timeline, and p50/p95/p99 over them would be one number
 * repeated (the old binary printed them, all 1.820569 ms here). A sweep
 * with a noisy value keeps its CV 0 row as the noise-free reference. */
Test(sweep, samples_without_jitter_are_refused) {
  ds_test_ddpsim_refuses(TINY "--format csv --samples 3",
                         "option --samples 3: seeds differ only in --jitter's draws");
  ds_test_ddpsim_refuses(TINY "--samples 2 --jitter 0", "option --samples 2");
  struct ds_test_result r = ds_test_cli(TINY "--format csv --samples 3 --jitter 0,0.1");
  cr_assert_eq(r.status, 0, "%s", r.err);
  cr_assert_eq(ds_test_csv_num(r.out, "iter_p50_ms", 0), ds_test_csv_num(r.out, "iter_p99_ms", 0));
  cr_assert_float_eq(ds_test_csv_num(r.out, "iter_p50_ms", 0), 1.820569, 1e-5);
  ds_test_release(&r);
  r = ds_test_cli(TINY "--format csv --samples 1");
  cr_assert_eq(r.status, 0, "%s", r.err);
  ds_test_release(&r);
}

/* ---- plot --------------------------------------------------------------- */

Test(sweep, plot_writes_a_png) {
  ds_test_require_gnuplot();
  char dir[] = "/tmp/ddpsim-swplot-XXXXXX", args[512], path[300];
  cr_assert(mkdtemp(dir) != NULL);
  snprintf(path, sizeof path, "%s/s.png", dir);
  snprintf(args, sizeof args, TINY "--bucket-mb 1:100:log5 --plot %s", path);
  struct ds_test_result r = ds_test_cli(args);
  cr_assert_eq(r.status, 0, "%s", r.err);
  ds_test_assert_image(path, "\x89PNG\r\n\x1a\n", 8);
  ds_test_release(&r);
  unlink(path);
  cr_assert_eq(rmdir(dir), 0, "no temporary file left in %s", dir);
}

Test(sweep, plot_needs_gnuplot_and_one_swept_option) {
  char dir[] = "/tmp/ddpsim-swplot-XXXXXX", args[512];
  cr_assert(mkdtemp(dir) != NULL);
  snprintf(args, sizeof args, TINY "--bucket-mb 1,25 --plot %s/s.png", dir);
  struct ds_test_result r = ds_test_cli_env("DDPSIM_GNUPLOT=/nonexistent/gnuplot", args);
  cr_assert_eq(r.status, 1);
  cr_assert(strstr(r.err, "gnuplot"), "%s", r.err);
  cr_assert_str_eq(r.out, "", "a failed plot prints no report");
  ds_test_release(&r);
  cr_assert_eq(rmdir(dir), 0, "nothing left behind in %s", dir);
  r = ds_test_cli(TINY "--world-size 2,4 --bucket-mb 1,25 --plot /tmp/x.png");
  cr_assert_eq(r.status, 2);
  cr_assert(strstr(r.err, "--plot"), "%s", r.err);
  ds_test_release(&r);
}
