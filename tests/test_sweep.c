/*
 * Sweeps and noise (sim/options.c ranges, sim/sweep.c, sim/jitter.c;
 * docs/sweeps.md): range grammar and its errors, the cross product's count
 * and order, parallel output byte-identical to in-process output, jitter's
 * determinism and distribution, the quantile columns, and the sweep plot.
 * End-to-end cases run $DDPSIM_BIN (else build/asan/ddpsim).
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/support.h"
#include "sim/jitter.h"
#include "sim/options.h"

/* ---- helpers ------------------------------------------------------------ */

static ds_status parse(const char *args, struct ds_options *o, struct ds_err *err) {
  static char buf[1024];
  char *argv[64];
  int argc = 0;
  snprintf(buf, sizeof buf, "%s", args);
  argv[argc++] = "ddpsim";
  for (char *t = strtok(buf, " "); t && argc < 63; t = strtok(NULL, " ")) argv[argc++] = t;
  argv[argc] = NULL;
  memset(err, 0, sizeof *err);
  return ds_options_parse(argc, argv, o, err);
}

static struct ds_test_result run_env(const char *env, const char *args) {
  return ds_test_run(env, ds_test_ddpsim(), args);
}

static struct ds_test_result run(const char *args) { return run_env("", args); }

#define TINY "--topo tests/data/tiny-topo.yaml --model tests/data/tiny-model.yaml "

/* Field k (0-based) of CSV line `line` as a double. */
static double field(const char *line, int k) {
  for (int i = 0; i < k; i++) {
    line = strchr(line, ',');
    cr_assert(line != NULL, "line has fewer than %d fields", k + 1);
    line++;
  }
  return strtod(line, NULL);
}

/* Index of column name in the CSV header line of out. */
static int column(const char *out, const char *name) {
  char head[2048];
  sscanf(out, "%2047[^\n]", head);
  int k = 0;
  for (char *t = strtok(head, ","); t; t = strtok(NULL, ","), k++)
    if (strcmp(t, name) == 0) return k;
  cr_assert_fail("column %s not in %s", name, out);
  return -1;
}

/* The n-th data line (0-based) of a CSV output. */
static const char *data_line(const char *out, int n) {
  const char *p = strchr(out, '\n');
  for (int i = 0; i < n && p; i++) p = strchr(p + 1, '\n');
  cr_assert(p != NULL && p[1], "no data line %d in %s", n, out);
  return p + 1;
}

/* ---- range grammar ------------------------------------------------------ */

Test(sweep, log_range_hits_both_endpoints_exactly) {
  /* 12 values from 1 to 100: ratio 100^(1/11) between neighbours, and the
   * endpoints exactly (not exp(log(100)), which may differ in the last bit). */
  struct ds_options o;
  struct ds_err err;
  cr_assert_eq(parse("--topo x --bucket-mb 1:100:log12", &o, &err), DS_OK, "%s", err.msg);
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
  struct ds_err err;
  cr_assert_eq(parse("--topo x --bucket-mb 1:100:5", &o, &err), DS_OK, "%s", err.msg);
  const struct ds_values *v = &o.sweep[DS_VAR_BUCKET_MB];
  cr_assert_eq(v->n, 20);
  cr_assert_eq(v->v[0], 1.0);
  cr_assert_eq(v->v[19], 96.0);
  cr_assert(!v->log_spaced);
  cr_assert_eq(parse("--topo x --bucket-mb 1:2:0.25", &o, &err), DS_OK, "%s", err.msg);
  cr_assert_eq(o.sweep[DS_VAR_BUCKET_MB].n, 5);
  cr_assert_eq(o.sweep[DS_VAR_BUCKET_MB].v[4], 2.0);
  /* lists are as before: "1,5,25" */
  cr_assert_eq(parse("--topo x --bucket-mb 1,5,25", &o, &err), DS_OK, "%s", err.msg);
  cr_assert_eq(o.n_bucket_mb, 3);
  cr_assert_eq(o.bucket_mb[2], 25.0);
}

Test(sweep, integer_ranges_are_rounded_and_deduplicated) {
  /* 1:8:log6 = 1, 1.516, 2.297, 3.482, 5.278, 8 -> 1, 2, 2, 3, 5, 8 ->
   * 1, 2, 3, 5, 8. */
  struct ds_options o;
  struct ds_err err;
  cr_assert_eq(parse("--topo x --world-size 1:8:log6 --no-sync 1:3:1", &o, &err), DS_OK,
               "%s", err.msg);
  const struct ds_values *v = &o.sweep[DS_VAR_WORLD_SIZE];
  double want[] = {1, 2, 3, 5, 8};
  cr_assert_eq(v->n, 5);
  for (int i = 0; i < 5; i++) cr_assert_eq(v->v[i], want[i], "value %d: %g", i, v->v[i]);
  cr_assert_eq(o.sweep[DS_VAR_NO_SYNC].n, 3);
  cr_assert_eq(o.world_size, 1);
}

Test(sweep, bad_ranges_are_usage_errors_naming_the_flag) {
  const char *cases[][2] = {
      {"--bucket-mb 0:10:1", "--bucket-mb"},       /* start 0 */
      {"--bucket-mb -1:10:1", "--bucket-mb"},      /* negative */
      {"--bucket-mb 10:1:1", "--bucket-mb"},       /* start > end */
      {"--bucket-mb 1:10:0", "--bucket-mb"},       /* step 0 */
      {"--bucket-mb 1:10:log1", "--bucket-mb"},    /* count < 2 */
      {"--bucket-mb 1:10:logx", "--bucket-mb"},
      {"--bucket-mb 1:10", "--bucket-mb"},
      {"--bucket-mb 1:1000:1", "--bucket-mb"},     /* more than 64 values */
      {"--world-size 0:4:1", "--world-size"},
      {"--batch 8:2:1", "--batch"},
      {"--first-bucket-mb 1:2:-1", "--first-bucket-mb"},
      {"--no-sync 1:4:log1", "--no-sync"},
      {"--world-size 0.2:0.4:0.1", "--world-size"}, /* rounds to 0 */
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    char args[256];
    struct ds_options o;
    struct ds_err err;
    snprintf(args, sizeof args, "--topo x %s", cases[i][0]);
    cr_assert_eq(parse(args, &o, &err), DS_EUSAGE, "%s accepted", cases[i][0]);
    cr_assert(strstr(err.msg, cases[i][1]), "%s: %s", cases[i][0], err.msg);
  }
  struct ds_test_result r = run(TINY "--bucket-mb 5:1:1");
  cr_assert_eq(r.status, 2);
  cr_assert(strstr(r.err, "--bucket-mb") && strstr(r.err, "start must be less"), "%s",
            r.err);
  ds_test_release(&r);
}

/* ---- cross product ------------------------------------------------------ */

Test(sweep, cross_product_count_and_order) {
  /* 2 world sizes x 3 batches x 2 caps = 12, world size outermost, the
   * bucket cap innermost. */
  struct ds_options o, c;
  struct ds_err err;
  cr_assert_eq(parse("--topo x --world-size 2,4 --batch 1:3:1 --bucket-mb 1,25", &o, &err),
               DS_OK, "%s", err.msg);
  cr_assert_eq(ds_options_n_configs(&o), 12);
  for (int64_t i = 0; i < 12; i++) {
    ds_options_config(&o, i, &c);
    cr_assert_eq(c.world_size, i < 6 ? 2 : 4, "config %lld", (long long)i);
    cr_assert_eq(c.batch, 1 + (i / 2) % 3);
    cr_assert_eq(c.bucket_mb[0], i % 2 ? 25.0 : 1.0);
    cr_assert_eq(c.n_bucket_mb, 1);
    cr_assert_eq(ds_options_n_configs(&c), 1);
  }
  struct ds_test_result r = run(TINY "--world-size 2,4 --batch 1:3:1 --bucket-mb 1,25 --format csv");
  cr_assert_eq(r.status, 0, "%s", r.err);
  int lines = 0;
  for (const char *p = r.out; *p; p++) lines += *p == '\n';
  cr_assert_eq(lines, 13, "%s", r.out);
  int w = column(r.out, "world_size"), b = column(r.out, "batch_per_gpu"),
      k = column(r.out, "bucket_mb");
  for (int i = 0; i < 12; i++) {
    const char *l = data_line(r.out, i);
    cr_assert_eq(field(l, w), i < 6 ? 2 : 4);
    cr_assert_eq(field(l, b), 1 + (i / 2) % 3);
    cr_assert_eq(field(l, k), i % 2 ? 25 : 1);
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
    struct ds_test_result one = run(a), many = run(b);
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
  struct ds_test_result r = run(TINY "--bucket-mb 1,25");
  cr_assert(strstr(r.out, "\nbest bucket cap: 25 MiB (1.762 ms"), "%s", r.out);
  ds_test_release(&r);
  r = run(TINY "--world-size 2,4 --bucket-mb 1,25");
  cr_assert_eq(r.status, 0, "%s", r.err);
  cr_assert(strstr(r.out, "\nworld size 2, bucket cap 1 MiB"), "%s", r.out);
  cr_assert(strstr(r.out, "\nbest configuration: world-size=4 bucket-mb=25 ("), "%s", r.out);
  cr_assert(strstr(r.out, "configurations (flatness)\n"), "%s", r.out);
  ds_test_release(&r);
  r = run(TINY "--world-size 2,4 --trace /tmp/ddpsim-never.csv");
  cr_assert_eq(r.status, 2);
  cr_assert(strstr(r.err, "--world-size"), "%s", r.err);
  cr_assert_eq(access("/tmp/ddpsim-never.csv", F_OK), -1);
  ds_test_release(&r);
}

/* ---- jitter and samples ------------------------------------------------- */

Test(sweep, lognormal_draws_have_mean_1_and_the_given_cv) {
  /* 20000 compute ops and 1 comm op: the sample mean of the compute
   * multipliers is 1 and their CV 0.2 within 3% (standard error of the
   * mean 0.2/sqrt(20000) = 0.0014); the comm op keeps exactly 1; cv 0
   * gives exactly 1 everywhere. */
  struct ds_schedule *s;
  cr_assert_eq(ds_schedule_new(1, &s), DS_OK);
  size_t n = 20001;
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
  cr_assert_float_eq(mean, 1.0, 0.01);
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
  struct ds_test_result base = run(TINY "--format csv --bucket-mb 1,25");
  struct ds_test_result zero = run(TINY "--format csv --bucket-mb 1,25 --jitter 0");
  struct ds_test_result a = run(TINY "--format csv --bucket-mb 1,25 --jitter 0.1 --seed 5");
  struct ds_test_result b = run(TINY "--format csv --bucket-mb 1,25 --jitter 0.1 --seed 5");
  struct ds_test_result c = run(TINY "--format csv --bucket-mb 1,25 --jitter 0.1 --seed 6");
  cr_assert_eq(base.status + zero.status + a.status + b.status + c.status, 0, "%s%s", a.err,
               c.err);
  cr_assert_str_eq(a.out, b.out);
  cr_assert_str_neq(a.out, c.out);
  /* Without --jitter the quantile columns are absent (existing outputs
   * unchanged); with CV 0 every original column is identical. */
  cr_assert(!strstr(base.out, "iter_p50_ms"));
  cr_assert(strstr(zero.out, ",iter_p50_ms,iter_p95_ms,iter_p99_ms,"), "%s", zero.out);
  int last = column(base.out, "per_batch_ms");
  for (int row = 0; row < 2; row++) {
    const char *l0 = data_line(base.out, row), *l1 = data_line(zero.out, row);
    const char *e0 = l0, *e1 = l1;
    for (int k = 0; k <= last; k++) {
      e0 = strchr(e0, ',') + 1;
      e1 = strchr(e1, ',') + 1;
    }
    cr_assert_eq(e0 - l0, e1 - l1);
    cr_assert_eq(strncmp(l0, l1, (size_t)(e0 - l0)), 0, "row %d:\n%s\n%s", row, l0, l1);
  }
  int iter = column(a.out, "iter_ms");
  cr_assert_neq(field(data_line(a.out, 0), iter), field(data_line(base.out, 0), iter));
  ds_test_release(&base);
  ds_test_release(&zero);
  ds_test_release(&a);
  ds_test_release(&b);
  ds_test_release(&c);
}

Test(sweep, sample_quantiles_are_ordered_and_spread_with_noise) {
  struct ds_test_result r = run(TINY "--format csv --jitter 0.1 --samples 40");
  cr_assert_eq(r.status, 0, "%s", r.err);
  const char *l = data_line(r.out, 0);
  double p50 = field(l, column(r.out, "iter_p50_ms")),
         p95 = field(l, column(r.out, "iter_p95_ms")),
         p99 = field(l, column(r.out, "iter_p99_ms"));
  cr_assert_eq(field(l, column(r.out, "samples")), 40);
  cr_assert(p50 <= p95 && p95 <= p99, "%g %g %g", p50, p95, p99);
  cr_assert_gt(p99 - p50, 0.001, "CV 0.1 on ~1.7 ms of kernels: %g %g", p50, p99);
  /* the noise-free iteration (1.761864 ms) sits inside the samples' range */
  cr_assert_lt(fabs(p50 - 1.761864), 0.2, "%g", p50);
  ds_test_release(&r);
  /* Samples without jitter: every seed runs the same timeline. */
  r = run(TINY "--format csv --samples 3");
  l = data_line(r.out, 0);
  cr_assert_eq(field(l, column(r.out, "iter_p50_ms")), field(l, column(r.out, "iter_p99_ms")));
  cr_assert_float_eq(field(l, column(r.out, "iter_p50_ms")), 1.761864, 1e-5);
  ds_test_release(&r);
}

/* ---- plot --------------------------------------------------------------- */

static int have_gnuplot(void) {
  return system("command -v gnuplot >/dev/null 2>&1") == 0;
}

Test(sweep, plot_writes_a_png) {
  if (!have_gnuplot()) cr_skip_test("gnuplot is not installed (apt-get install gnuplot-nox)");
  char dir[] = "/tmp/ddpsim-swplot-XXXXXX", args[512], path[300];
  cr_assert(mkdtemp(dir) != NULL);
  snprintf(path, sizeof path, "%s/s.png", dir);
  snprintf(args, sizeof args, TINY "--bucket-mb 1:100:log5 --plot %s", path);
  struct ds_test_result r = run(args);
  cr_assert_eq(r.status, 0, "%s", r.err);
  FILE *fp = fopen(path, "rb");
  cr_assert(fp != NULL);
  unsigned char sig[8];
  cr_assert_eq(fread(sig, 1, 8, fp), 8);
  fclose(fp);
  cr_assert_eq(memcmp(sig, "\x89PNG\r\n\x1a\n", 8), 0);
  ds_test_release(&r);
  unlink(path);
  cr_assert_eq(rmdir(dir), 0, "no temporary file left in %s", dir);
}

Test(sweep, plot_needs_gnuplot_and_one_swept_option) {
  char dir[] = "/tmp/ddpsim-swplot-XXXXXX", args[512];
  cr_assert(mkdtemp(dir) != NULL);
  snprintf(args, sizeof args, TINY "--bucket-mb 1,25 --plot %s/s.png", dir);
  struct ds_test_result r = run_env("DDPSIM_GNUPLOT=/nonexistent/gnuplot", args);
  cr_assert_eq(r.status, 1);
  cr_assert(strstr(r.err, "gnuplot"), "%s", r.err);
  cr_assert_str_eq(r.out, "", "a failed plot prints no report");
  ds_test_release(&r);
  cr_assert_eq(rmdir(dir), 0, "nothing left behind in %s", dir);
  r = run(TINY "--world-size 2,4 --bucket-mb 1,25 --plot /tmp/x.png");
  cr_assert_eq(r.status, 2);
  cr_assert(strstr(r.err, "--plot"), "%s", r.err);
  ds_test_release(&r);
}
