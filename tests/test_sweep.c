/*
 * Sweeps and noise (sim/cli/options.c ranges, sim/cli/sweep.c, sim/train/jitter.c;
 * docs/sweeps.md): range grammar and its errors, the cross product's count
 * and order, parallel output byte-identical to in-process output, jitter's
 * determinism and distribution, the quantile columns, and the sweep plot.
 * End-to-end cases run $DDPSIM_BIN (else build/asan/ddpsim).
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/support.h"
#include "sim/train/jitter.h"
#include "sim/cli/options.h"
#include "sim/cli/report.h"
#include "sim/cli/sweep.h"

/* ---- helpers ------------------------------------------------------------ */

static struct ds_test_result run_env(const char *env, const char *args) {
  return ds_test_run(env, ds_test_ddpsim(), args);
}

static struct ds_test_result run(const char *args) { return run_env("", args); }

#define TINY "--topo tests/data/tiny-topo.yaml --model tests/data/tiny-model.yaml "

/* Each case {options, flag}: "--topo x OPTIONS" is a usage error naming flag. */
static void expect_usage_errors(const char *cases[][2], size_t n) {
  for (size_t i = 0; i < n; i++) {
    char args[256];
    struct ds_options o;
    struct ds_err err;
    snprintf(args, sizeof args, "--topo x %s", cases[i][0]);
    cr_assert_eq(ds_test_options_parse(args, &o, &err), DS_EUSAGE, "%s accepted", cases[i][0]);
    cr_assert(strstr(err.msg, cases[i][1]), "%s: %s", cases[i][0], err.msg);
  }
}

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
  expect_usage_errors(cases, sizeof cases / sizeof *cases);
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
  struct ds_test_result r = run(TINY "--world-size 2,4 --batch 1:3:1 --bucket-mb 1,25 --format csv");
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
  /* --first-bucket-mb 1: both caps bin a small first bucket, so 25 MiB
   * wins (with bucket_cap_mb=25's own first cap one bucket does not). */
  struct ds_test_result r = run(TINY "--bucket-mb 1,25 --first-bucket-mb 1");
  cr_assert(strstr(r.out, "\nbest bucket cap: 25 MiB (1.821 ms"), "%s", r.out);
  ds_test_release(&r);
  r = run(TINY "--world-size 2,4 --bucket-mb 1,25 --first-bucket-mb 1");
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
  struct ds_test_result r = run(TINY "--format csv --jitter 0.1 --samples 40");
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
  struct ds_test_result r = run(TINY "--format csv --samples 3 --jitter 0,0.1");
  cr_assert_eq(r.status, 0, "%s", r.err);
  cr_assert_eq(ds_test_csv_num(r.out, "iter_p50_ms", 0), ds_test_csv_num(r.out, "iter_p99_ms", 0));
  cr_assert_float_eq(ds_test_csv_num(r.out, "iter_p50_ms", 0), 1.820569, 1e-5);
  ds_test_release(&r);
  r = run(TINY "--format csv --samples 1");
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
  struct ds_test_result r = run(args);
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

/* ---- the other sweepable options (issue #6) ------------------------------ */

Test(sweep, other_options_take_lists_and_ranges) {
  struct ds_options o;
  ds_test_options_ok("--topo x --ps-servers 1:4:1 --jitter 0:0.1:0.05 --ring-chunks 1,2,4 "
                     "--dp-output-device 0,1 --straggler 3:1,1.5,2 --strategy dp,ps", &o);
  cr_assert_eq(o.sweep[DS_VAR_PS_SERVERS].n, 4);
  cr_assert_eq(o.sweep[DS_VAR_PS_SERVERS].v[3], 4.0);
  /* a linear --jitter range may start at 0: 0, 0.05, 0.1 */
  cr_assert_eq(o.sweep[DS_VAR_JITTER].n, 3);
  cr_assert_eq(o.sweep[DS_VAR_JITTER].v[0], 0.0);
  cr_assert_float_eq(o.sweep[DS_VAR_JITTER].v[2], 0.1, 1e-15);
  cr_assert(o.jitter);
  cr_assert_eq(o.sweep[DS_VAR_RING_CHUNKS].n, 3);
  cr_assert_eq(o.sweep[DS_VAR_DP_OUTPUT_DEVICE].n, 2);
  /* 3:1,1.5,2: one straggler (rank 3) whose factor takes three values */
  cr_assert_eq(o.n_stragglers, 1);
  cr_assert_eq(o.stragglers[0].rank, 3);
  cr_assert_eq(o.stragglers[0].factor, 1.0, "the scalar is the first value");
  cr_assert_eq(o.sweep[DS_VAR_STRAGGLER].n, 3);
  cr_assert_eq(o.sweep[DS_VAR_STRAGGLER].v[1], 1.5);
  /* a straggler range, and lists of other stragglers beside the swept one */
  ds_test_options_ok("--topo x --straggler 1:1.5,2:1:2:0.5", &o);
  cr_assert_eq(o.n_stragglers, 2);
  cr_assert_eq(o.stragglers[0].factor, 1.5);
  cr_assert_eq(o.straggler_swept_k, 1);
  cr_assert_eq(o.sweep[DS_VAR_STRAGGLER].n, 3); /* 1, 1.5, 2 */
  cr_assert_eq(o.sweep[DS_VAR_STRAGGLER].v[2], 2.0);
  /* hooks: a list, further powersgd ranks as bare integers, a range of ranks */
  ds_test_options_ok("--topo x --comm-hook none,fp16,powersgd:1,2,bf16,powersgd:4:32:log4", &o);
  const struct { enum ds_hook_kind kind; int32_t rank; } want[] = {
      {DS_HOOK_NONE, 0}, {DS_HOOK_FP16, 0}, {DS_HOOK_POWERSGD, 1}, {DS_HOOK_POWERSGD, 2},
      {DS_HOOK_BF16, 0}, {DS_HOOK_POWERSGD, 4}, {DS_HOOK_POWERSGD, 8},
      {DS_HOOK_POWERSGD, 16}, {DS_HOOK_POWERSGD, 32}};
  cr_assert_eq(o.sweep[DS_VAR_COMM_HOOK].n, 9);
  for (int k = 0; k < 9; k++) {
    cr_assert_eq(o.sweep[DS_VAR_COMM_HOOK].v[k], k, "values index the hooks");
    cr_assert_eq(o.comm_hooks[k].kind, want[k].kind, "hook %d", k);
    if (want[k].kind == DS_HOOK_POWERSGD) cr_assert_eq(o.comm_hooks[k].rank, want[k].rank);
  }
  cr_assert_eq(o.comm_hook.kind, DS_HOOK_NONE, "the scalar is the first hook");
}

Test(sweep, other_options_cross_product_order_per_strategy) {
  /* dp uses world, dp-output-device, jitter, ring-chunks: 2*2*2*2 = 16;
   * ddp world, jitter, ring-chunks, comm-hook: 16; ps world, ps-servers,
   * jitter: 8. 40 in all, strategy by strategy; within one, enum order
   * (world, ..., ps-servers, dp-output-device, straggler, jitter,
   * ring-chunks, comm-hook, ..., bucket-mb), the last fastest. */
  struct ds_options o, c;
  ds_test_options_ok("--topo x --strategy dp,ddp,ps --world-size 2,4 --ps-servers 1,2 "
                     "--dp-output-device 0,1 --ring-chunks 1,2 --comm-hook none,fp16 "
                     "--jitter 0,0.1", &o);
  cr_assert_eq(ds_options_n_configs(&o), 40);
  for (int64_t i = 0; i < 40; i++) {
    ds_options_config(&o, i, &c);
    int64_t j = i < 16 ? i : i < 32 ? i - 16 : i - 32;
    if (i < 16) { /* dp: world, output device, jitter, chunks */
      cr_assert_eq(c.strategy_id, DS_STRATEGY_DP);
      cr_assert_eq(c.world_size, j < 8 ? 2 : 4);
      cr_assert_eq(c.dp_output_device, (j / 4) % 2, "config %lld", (long long)i);
      cr_assert_eq(c.jitter_cv, (j / 2) % 2 ? 0.1 : 0.0);
      cr_assert_eq(c.ring_chunks, 1 + j % 2);
      cr_assert_eq(c.comm_hook.kind, DS_HOOK_NONE, "dp keeps the first hook");
      cr_assert_eq(c.ps_servers, 1);
    } else if (i < 32) { /* ddp: world, jitter, chunks, hook */
      cr_assert_eq(c.strategy_id, DS_STRATEGY_DDP);
      cr_assert_eq(c.world_size, j < 8 ? 2 : 4);
      cr_assert_eq(c.jitter_cv, (j / 4) % 2 ? 0.1 : 0.0);
      cr_assert_eq(c.ring_chunks, 1 + (j / 2) % 2, "config %lld", (long long)i);
      cr_assert_eq(c.comm_hook.kind, j % 2 ? DS_HOOK_FP16 : DS_HOOK_NONE);
      cr_assert_eq(c.dp_output_device, 0);
    } else { /* ps: world, servers, jitter */
      cr_assert_eq(c.strategy_id, DS_STRATEGY_PS);
      cr_assert_eq(c.world_size, j < 4 ? 2 : 4);
      cr_assert_eq(c.ps_servers, 1 + (j / 2) % 2, "config %lld", (long long)i);
      cr_assert_eq(c.jitter_cv, j % 2 ? 0.1 : 0.0);
      cr_assert_eq(c.ring_chunks, 1);
    }
    cr_assert_eq(ds_options_n_configs(&c), 1);
  }
  /* the straggler factor: dp, ddp, ps, not single */
  cr_assert(ds_strategy_uses_var(DS_STRATEGY_PS, DS_VAR_STRAGGLER));
  cr_assert(!ds_strategy_uses_var(DS_STRATEGY_SINGLE, DS_VAR_STRAGGLER));
  cr_assert(!ds_strategy_uses_var(DS_STRATEGY_PS, DS_VAR_RING_CHUNKS));
  cr_assert(ds_strategy_uses_var(DS_STRATEGY_SINGLE, DS_VAR_JITTER));
}

Test(sweep, single_sweeps_a_straggler_of_rank_0_only) {
  /* single runs rank 0: a factor list of rank 0 is two single rows, of
   * rank 1 none (single's one row) */
  struct ds_options o;
  ds_test_options_ok("--topo t --strategy single,ddp --straggler 0:1,2", &o);
  cr_assert(ds_options_uses_var(&o, DS_STRATEGY_SINGLE, DS_VAR_STRAGGLER));
  cr_assert_eq(ds_options_n_configs(&o), 4);
  ds_test_options_ok("--topo t --strategy single,ddp --straggler 1:1,2", &o);
  cr_assert(!ds_options_uses_var(&o, DS_STRATEGY_SINGLE, DS_VAR_STRAGGLER));
  cr_assert_eq(ds_options_n_configs(&o), 3);
}

/* ds_options_given of a flag ddpsim does not know is a caller's typo,
 * which would read as "not given" for ever: an assertion, not 0. */
Test(sweep, options_given_of_an_unknown_flag_aborts, .signal = SIGABRT) {
  struct ds_options o;
  ds_test_options_ok("--topo t --bucket-mb 5", &o);
  cr_assert(ds_options_given(&o, "--bucket-mb"));
  cr_assert(!ds_options_given(&o, "--batch"));
  (void)ds_options_given(&o, "--bucket-size");
}

Test(sweep, rows_say_their_configuration) {
  /* dp: 2 chunk counts; ddp: 2 x 2 hooks; ps: 2 server counts = 8 rows,
   * each naming its values in the sweep columns. */
  struct ds_test_result r = run(TINY "--strategy dp,ddp,ps --ps-servers 1,2 --ring-chunks 1,2 "
                                "--comm-hook none,fp16 --format csv");
  cr_assert_eq(r.status, 0, "%s", r.err);
  const char *want_strategy[] = {"dp", "dp", "ddp", "ddp", "ddp", "ddp", "ps", "ps"};
  const int want_chunks[] = {1, 2, 1, 1, 2, 2, 1, 1}, want_servers[] = {1, 1, 1, 1, 1, 1, 1, 2};
  const char *want_hook[] = {"none", "none", "none", "fp16", "none", "fp16", "none", "none"};
  int ch = ds_test_csv_column(r.out, "ring_chunks"), sv = ds_test_csv_column(r.out, "ps_servers");
  cr_assert_eq(ds_test_csv_column(r.out, "straggler_factor"), sv + 2);
  for (int i = 0; i < 8; i++) {
    const char *l = ds_test_csv_row(r.out, i);
    cr_assert_eq(strncmp(l, want_strategy[i], strlen(want_strategy[i])), 0, "row %d: %s", i, l);
    cr_assert_eq(ds_test_csv_field(l, ch), want_chunks[i], "row %d", i);
    cr_assert_eq(ds_test_csv_field(l, sv), want_servers[i], "row %d", i);
    char h[32];
    ds_test_csv_str(r.out, "comm_hook", i, h, sizeof h);
    cr_assert_str_eq(h, want_hook[i], "row %d", i);
  }
  /* the bucket count is 9 lines of output: header + 8 rows */
  int lines = 0;
  for (const char *p = r.out; *p; p++) lines += *p == '\n';
  cr_assert_eq(lines, 9);
  ds_test_release(&r);
  /* JSON carries the same fields (ring_chunks among every row's: report_csv_json.c) */
  r = run(TINY "--comm-hook none,fp16 --format json");
  cr_assert_eq(r.status, 0, "%s", r.err);
  cr_assert(strstr(r.out, "\"straggler_factor\": 1, \"comm_hook\": \"fp16\""), "%s", r.out);
  cr_assert(strstr(r.out, "\"ring_chunks\": 1, "), "%s", r.out);
  ds_test_release(&r);
  /* Without such a sweep the sweep columns are absent (existing outputs
   * unchanged); ring_chunks, which changes the numbers, is in every row. */
  r = run(TINY "--ring-chunks 2 --format csv");
  cr_assert_eq(r.status, 0, "%s", r.err);
  cr_assert(!strstr(r.out, "ps_servers") && !strstr(r.out, "comm_hook"), "%s", r.out);
  cr_assert_eq(ds_test_csv_num(r.out, "ring_chunks", 0), 2);
  ds_test_release(&r);
}

Test(sweep, other_options_parallel_output_is_identical) {
  const char *sweeps[] = {
      TINY "--straggler 1:1:2:0.5 --ring-chunks 1,2 --comm-hook none,fp16 --format csv",
      TINY "--strategy dp,ps --dp-output-device 0,3 --ps-servers 1,2,4 --jitter 0,0.1",
      TINY "--jitter 0:0.2:0.1 --samples 3 --format json"};
  for (size_t i = 0; i < sizeof sweeps / sizeof *sweeps; i++) {
    char a[512], b[512];
    snprintf(a, sizeof a, "%s --jobs 1", sweeps[i]);
    snprintf(b, sizeof b, "%s --jobs 2", sweeps[i]);
    struct ds_test_result one = run(a), two = run(b);
    cr_assert_eq(one.status, 0, "%s: %s", sweeps[i], one.err);
    cr_assert_eq(two.status, 0, "%s", two.err);
    cr_assert_str_eq(two.out, one.out);
    ds_test_release(&one);
    ds_test_release(&two);
  }
}

Test(sweep, straggler_factor_sweep_stretches_the_iteration) {
  /* On tiny (4 ranks, no overlap between ranks' compute), rank 1 at factor
   * F takes F times as long for its compute; the iteration cannot be
   * shorter than F * (forward + backward) of the healthy rank, so
   * it grows with F, and factor 1 is exactly the run without --straggler. */
  struct ds_test_result base = run(TINY "--format csv");
  struct ds_test_result r = run(TINY "--straggler 1:1,2,3 --format csv");
  cr_assert_eq(r.status + base.status, 0, "%s", r.err);
  double t0 = ds_test_csv_num(base.out, "iter_ms", 0);
  cr_assert_eq(ds_test_csv_num(r.out, "iter_ms", 0), t0);
  double compute = ds_test_csv_num(base.out, "fwd_ms", 0) + ds_test_csv_num(base.out, "bwd_ms", 0);
  for (int i = 1; i < 3; i++) {
    double t = ds_test_csv_num(r.out, "iter_ms", i);
    cr_assert_eq(ds_test_csv_num(r.out, "straggler_factor", i), 1 + i);
    cr_assert_geq(t, (1 + i) * compute, "row %d", i);
    cr_assert_gt(t, ds_test_csv_num(r.out, "iter_ms", i - 1));
  }
  ds_test_release(&base);
  ds_test_release(&r);
}

Test(sweep, other_options_bad_values_name_the_flag) {
  const char *cases[][2] = {
      {"--ps-servers 0", "--ps-servers"},
      {"--ps-servers 1:4:0", "--ps-servers"},
      {"--ps-servers 1,,2", "--ps-servers"},
      {"--jitter -0.1", "--jitter"},
      {"--jitter 11", "--jitter"},
      {"--jitter 0:1:log3", "--jitter"},      /* a log range cannot start at 0 */
      {"--jitter 0.5:20:5", "--jitter"},      /* gives 10.5 > 10 */
      {"--ring-chunks 0,2", "--ring-chunks"},
      {"--ring-chunks 1,2 --coll-model aggregate", "--ring-chunks"},
      {"--dp-output-device -1 --strategy dp", "--dp-output-device"},
      {"--comm-hook none,,fp16", "--comm-hook"},
      {"--comm-hook fp16,4", "--comm-hook"},  /* a bare rank after no powersgd */
      {"--comm-hook powersgd:0:4:1", "--comm-hook"},
      {"--comm-hook powersgd:1,2000", "--comm-hook"},
      {"--comm-hook zip", "--comm-hook"},
      {"--straggler 1.5", "--straggler"},
      {"--straggler 2:1,1.5,3:1,2", "--straggler"}, /* two swept factors */
      {"--straggler 2:0:2:1", "--straggler"},
      {"--straggler 2:1,0", "--straggler"},
      {"--strategy ddp --ps-servers 1,2", "--ps-servers"}, /* nothing uses it */
      {"--strategy single --ring-chunks 1,2", "--ring-chunks"},
      {"--iters 2,3", "--iters"},                    /* not sweepable */
      {"--bucket-mb 1:2000000:log3", "--bucket-mb"}, /* past 1e6 MiB */
  };
  expect_usage_errors(cases, sizeof cases / sizeof *cases);
  ds_test_ddpsim_refuses(TINY "--strategy ddp --dp-output-device 0,1",
                         "option --dp-output-device: 2 values, but no strategy of the run "
                         "uses it (dp does)");
}

/* One value of an option no strategy of the run uses is refused as a list
 * is, unless it is what those strategies run anyway (single's one GPU,
 * the option's default): each of these exited 0 with the result of the
 * same run without it. */
Test(sweep, one_value_no_strategy_uses_is_refused) {
  static const char *const refused[][2] = {
      {"--strategy single --comm-hook fp16", "option --comm-hook fp16: no strategy of the run "
                                             "uses it (ddp does)"},
      {"--strategy single --world-size 2", "option --world-size 2: no strategy of the run "
                                           "uses it (dp, ddp, ps do)"},
      {"--strategy dp --no-sync 2", "option --no-sync 2: no strategy of the run uses it "
                                    "(ddp does)"},
      {"--strategy ps --ring-chunks 2", "option --ring-chunks 2: no strategy of the run uses "
                                        "it (dp, ddp do)"},
      {"--strategy ddp --ps-mode async", "option --ps-mode async: no strategy of the run "
                                         "uses it (ps does)"},
      {"--strategy ddp --ps-push per-layer", "option --ps-push per-layer:"},
      {"--strategy ddp --dp-parallel-loss", "option --dp-parallel-loss: no strategy of the "
                                            "run uses it (dp does)"},
      {"--strategy ps --no-overlap", "option --no-overlap: no strategy of the run uses it "
                                     "(ddp does)"},
      {"--strategy single,dp --static-graph", "option --static-graph:"},
      {"--strategy dp --bucket-mb 5", "option --bucket-mb 5:"},
      {"--strategy single --straggler 1:2", "option --straggler 1:2: no strategy of the run "
                                            "uses it (dp, ddp, ps do; single runs rank 0 "
                                            "alone)"},
      {"--strategy single --straggler 1:1,2", "option --straggler 1: 2 values, but no strategy "
                                              "of the run uses it (dp, ddp, ps do; single "
                                              "runs rank 0 alone)"},
      /* only ddp's all-reduces run on NCCL's model */
      {"--strategy single,dp --algo tree", "option --algo tree: no strategy of the run uses "
                                           "it (ddp does)"},
      {"--strategy dp --proto LL", "option --proto LL: no strategy of the run uses it (ddp "
                                   "does)"},
      {"--strategy ps --nccl-extra none", "option --nccl-extra none:"},
      /* only ddp's ring and tree all-reduces aggregate; single sends nothing */
      {"--strategy ps --coll-model aggregate", "option --coll-model aggregate: no strategy of "
                                               "the run uses it (ddp does)"},
      {"--strategy single,dp --coll-model aggregate", "option --coll-model aggregate:"},
      {"--strategy single --net alpha-beta", "option --net alpha-beta: no strategy of the run "
                                             "uses it (dp, ddp, ps do)"},
  };
  for (size_t i = 0; i < sizeof refused / sizeof *refused; i++) {
    char args[256];
    snprintf(args, sizeof args, TINY "%s", refused[i][0]);
    ds_test_ddpsim_refuses(args, refused[i][1]);
  }
  /* what the run does anyway, or a strategy of the run that uses it */
  static const char *const accepted[] = {
      "--strategy single --world-size 1", "--strategy single --comm-hook none",
      "--strategy dp --no-sync 1", "--strategy ddp --ps-mode sync --ps-servers 1",
      "--strategy single,ddp --comm-hook fp16", "--strategy single,ps --ps-mode async",
      "--strategy dp --algo auto --nccl-extra measured", "--strategy single,ddp --algo ring",
      "--strategy single --straggler 0:2", "--strategy single --straggler 0:1,2",
      /* the defaults, and what they resolve to: --algo auto's protocol is
       * auto, dp's and ps's transfers are flows */
      "--strategy single --proto auto", "--strategy single --algo auto --proto auto",
      "--strategy single --proto LL,LL128,Simple" /* every protocol: auto */,
      "--strategy dp,ps --coll-model flow", "--strategy single --coll-model auto",
      "--strategy single --net maxmin", "--strategy dp --net alpha-beta",
      "--strategy ps --net alpha-beta"};
  for (size_t i = 0; i < sizeof accepted / sizeof *accepted; i++) {
    char args[256];
    snprintf(args, sizeof args, TINY "%s --format csv", accepted[i]);
    struct ds_test_result r = run(args);
    cr_assert_eq(r.status, 0, "%s: %s", args, r.err);
    ds_test_release(&r);
  }
}

/* A value out of range is refused with the range it must be in: these
 * said "greater than 0" of 1e9 MiB, 2e6 MiB and a factor 1e7 (the bound is
 * 1e6, base/values.c), and buckets took the list "1,5" for a bad size. */
Test(sweep, range_errors_name_the_bound) {
  static const char *const cases[][2] = {
      {TINY "--bucket-mb 1e9", "option --bucket-mb: expected a size in MiB greater than 0 "
                               "and at most 1e6 (e.g. 25 or 0.5), got \"1e9\""},
      {TINY "--first-bucket-mb 2e6", "option --first-bucket-mb: expected a size in MiB greater "
                                     "than 0 and at most 1e6"},
      {TINY "--bucket-mb 1:2e6:log3", "gives 2e+06, expected a size in MiB greater than 0 and "
                                      "at most 1e6"},
      {TINY "--straggler 1:1e7", "FACTOR a number greater than 0 and at most 1e6"},
      {TINY "--straggler 1:1,2e7", "a factor greater than 0 and at most 1e6"},
      {TINY "--straggler 2000000:2", "RANK an integer from 0 to 1048576"},
      {"buckets --bucket-mb 1,5", "option --bucket-mb: ddpsim buckets takes one value"},
      {"buckets --first-bucket-mb 1:4:1", "option --first-bucket-mb: ddpsim buckets takes one "
                                          "value"},
      {"collective --topo tests/data/tiny-topo.yaml -b 1e16", "at least 4 bytes and at most "
                                                            "1e15"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
    ds_test_ddpsim_refuses(cases[i][0], cases[i][1]);
}

Test(sweep, world_size_sweep_reports_scaling_efficiency) {
  /* Same batch per GPU: samples/s = world * batch / iter, so the per-rank
   * throughput of row i over row 0's is iter_ms[0] / iter_ms[i]. */
  struct ds_test_result c = run(TINY "--world-size 1,2,4 --format csv");
  struct ds_test_result r = run(TINY "--world-size 1,2,4");
  cr_assert_eq(c.status + r.status, 0, "%s%s", c.err, r.err);
  double t0 = ds_test_csv_num(c.out, "iter_ms", 0), t1 = ds_test_csv_num(c.out, "iter_ms", 1),
         t2 = ds_test_csv_num(c.out, "iter_ms", 2);
  char want[256];
  snprintf(want, sizeof want, "\nscaling efficiency (samples/s per rank over world-size=1's): "
           "2: %.1f%%, 4: %.1f%%\n", 100 * t0 / t1, 100 * t0 / t2);
  cr_assert(strstr(r.out, want), "want %s in %s", want, r.out);
  cr_assert_lt(t0 / t2, 1.0, "communication makes 4 ranks less than linear");
  ds_test_release(&c);
  ds_test_release(&r);
}

/* n rows of options args, by hand: world size and samples/s of each (batch 32). */
static void scaling_rows(const char *args, struct ds_options *o, struct ds_summary *rows,
                         int n, const int *world, const double *samples_per_s) {
  ds_test_options_ok(args, o);
  cr_assert_eq(ds_options_n_configs(o), n, "%s", args);
  memset(rows, 0, (size_t)n * sizeof *rows);
  for (int i = 0; i < n; i++) {
    rows[i].world_size = world[i];
    rows[i].batch_per_gpu = 32;
    rows[i].samples_per_s = samples_per_s[i];
    rows[i].iter_ms = 10;
  }
  struct ds_err err = {0};
  cr_assert_eq(ds_sweep_fill_scaling(o, rows, n, &err), DS_OK, "%s", err.msg);
}

Test(sweep, scaling_efficiency_is_per_strategy_and_per_other_values) {
  /* single,ddp x world 1,2,4 x batch 16,32: single does not use the world
   * size (2 rows, one per batch), ddp 6 rows, the world size varying
   * slowest. Each ddp row is over the world-size-1 row of its own batch:
   * batch 16: 100, 180, 320 samples/s -> per rank 100, 90, 80 -> 100, 90,
   * 80 %; batch 32: 200, 380, 700 -> 200, 190, 175 -> 100, 95, 87.5 %.
   * single's rows have none (absent). */
  struct ds_options o;
  struct ds_summary rows[8];
  const int world[8] = {1, 1, 1, 1, 2, 2, 4, 4};
  const double sps[8] = {110, 210, 100, 200, 180, 380, 320, 700};
  scaling_rows("--topo x --strategy single,ddp --world-size 1,2,4 --batch 16,32", &o, rows, 8,
               world, sps);
  const double want[8] = {NAN, NAN, 100, 100, 90, 95, 80, 87.5};
  for (int i = 0; i < 8; i++) {
    cr_assert_eq(rows[i].has_scaling, 1, "row %d", i);
    if (isnan(want[i])) cr_assert(isnan(rows[i].scaling_efficiency_pct), "row %d", i);
    else cr_assert_float_eq(rows[i].scaling_efficiency_pct, want[i], 1e-9, "row %d", i);
  }
  /* the smallest world size is the baseline wherever it comes in the list:
   * 8,2 -> the 2-rank row (200 samples/s, 100 a rank) gives 100, the
   * 8-rank row (720, 90 a rank) 90 % */
  const int w2[2] = {8, 2};
  const double s2[2] = {720, 200};
  scaling_rows("--topo x --world-size 8,2", &o, rows, 2, w2, s2);
  cr_assert_float_eq(rows[0].scaling_efficiency_pct, 90, 1e-9);
  cr_assert_float_eq(rows[1].scaling_efficiency_pct, 100, 1e-9);
  char buf[512] = "";
  FILE *f = fmemopen(buf, sizeof buf, "w");
  cr_assert_not_null(f);
  ds_sweep_print_best(f, &o, rows, 2);
  fclose(f);
  cr_assert(strstr(buf, "\nscaling efficiency (samples/s per rank over world-size=2's): 8: 90.0%\n"),
            "the text line prints the same values: %s", buf);
  /* with --samples a row's median stands for it: rank_samples_per_s =
   * samples_per_s x iter_ms / iter_p50_ms; the 2-rank row's median is
   * 12.5 ms for 10 ms -> 160 samples/s, 80 a rank, over the 1-rank row's 100 */
  const int w3[2] = {1, 2};
  const double s3[2] = {100, 200};
  scaling_rows("--topo x --world-size 1,2 --jitter 0.05 --samples 4", &o, rows, 2, w3, s3);
  for (int i = 0; i < 2; i++) {
    rows[i].has_quantiles = 1;
    rows[i].samples = 4;
    rows[i].iter_p50_ms = i ? 12.5 : 10;
  }
  struct ds_err err = {0};
  cr_assert_eq(ds_sweep_fill_scaling(&o, rows, 2, &err), DS_OK);
  cr_assert_float_eq(rows[1].scaling_efficiency_pct, 80, 1e-9);
  /* a baseline without throughput: no ratio for its rows */
  const double s4[2] = {0, 200};
  scaling_rows("--topo x --world-size 1,2", &o, rows, 2, w3, s4);
  cr_assert(isnan(rows[0].scaling_efficiency_pct) && isnan(rows[1].scaling_efficiency_pct));
  /* one world size: no column at all */
  scaling_rows("--topo x --bucket-mb 1,25", &o, rows, 2, w3, s3);
  cr_assert_eq(rows[0].has_scaling + rows[1].has_scaling, 0);
}

Test(sweep, scaling_efficiency_in_csv_and_json) {
  /* The same per-GPU batch: the ddp rows' ratio is iter_ms(1) / iter_ms(2)
   * (samples/s = world x batch / iter_ms); single's field is empty in the
   * CSV and null in the JSON. A run of one world size has no such column. */
  struct ds_test_result c = run(TINY "--strategy single,ddp --world-size 1,2 --format csv");
  struct ds_test_result j = run(TINY "--strategy single,ddp --world-size 1,2 --format json");
  struct ds_test_result one = run(TINY "--strategy single,ddp --world-size 2 --format csv");
  struct ds_test_result onej = run(TINY "--strategy single,ddp --world-size 2 --format json");
  cr_assert_eq(c.status + j.status + one.status + onej.status, 0, "%s%s%s%s", c.err, j.err,
               one.err, onej.err);
  char f[32];
  ds_test_csv_str(c.out, "scaling_efficiency_pct", 0, f, sizeof f);
  cr_assert_str_eq(f, "", "single: absent");
  ds_test_csv_str(c.out, "scaling_efficiency_pct", 1, f, sizeof f);
  cr_assert_str_eq(f, "100.000", "the smallest world size");
  double t1 = ds_test_csv_num(c.out, "iter_ms", 1), t2 = ds_test_csv_num(c.out, "iter_ms", 2);
  char want[64];
  snprintf(want, sizeof want, "%.3f", 100 * t1 / t2);
  ds_test_csv_str(c.out, "scaling_efficiency_pct", 2, f, sizeof f);
  cr_assert_str_eq(f, want);
  cr_assert_lt(t1 / t2, 1.0, "communication makes 2 ranks less than linear");
  cr_assert(strstr(j.out, "\"scaling_efficiency_pct\": null"), "%s", j.out);
  cr_assert(strstr(j.out, "\"scaling_efficiency_pct\": 100.000"), "%s", j.out);
  char field[96];
  snprintf(field, sizeof field, "\"scaling_efficiency_pct\": %s", want);
  cr_assert(strstr(j.out, field), "want %s in %s", field, j.out);
  cr_assert_null(strstr(one.out, "scaling_efficiency_pct"), "%s", one.out);
  cr_assert_null(strstr(onej.out, "scaling_efficiency_pct"), "%s", onej.out);
  ds_test_release(&c);
  ds_test_release(&j);
  ds_test_release(&one);
  ds_test_release(&onej);
}

Test(sweep, with_samples_the_best_is_the_lowest_median) {
  /* With --samples a row's iter_ms is its first seed's, noisy; the sweep
   * ranks by the median over the seeds. Two caps: 1 MiB's first seed the
   * faster (10.0 against 10.2 ms), 25 MiB's median (10.1 against 10.3):
   * the best is 25 MiB, printed at its median, and so is the worst's. */
  struct ds_options o;
  ds_test_options_ok("--topo x --bucket-mb 1,25 --jitter 0.05 --samples 8", &o);
  struct ds_summary rows[2];
  memset(rows, 0, sizeof rows);
  const double cap[2] = {1, 25}, first[2] = {10.0, 10.2}, p50[2] = {10.3, 10.1};
  for (int i = 0; i < 2; i++) {
    rows[i].bucket_mb = cap[i];
    rows[i].iter_ms = first[i];
    rows[i].iter_p50_ms = p50[i];
    rows[i].has_quantiles = 1;
    rows[i].samples = 8;
    rows[i].world_size = 4;
    rows[i].batch_per_gpu = 32;
  }
  cr_assert_eq(ds_sweep_best_row(&o, rows, 2), 1);
  char buf[512] = "";
  FILE *f = fmemopen(buf, sizeof buf, "w");
  cr_assert_not_null(f);
  ds_sweep_print_best(f, &o, rows, 2);
  fclose(f);
  cr_assert(strstr(buf, "best bucket cap: 25 MiB (10.100 ms per iteration, 1.9% less time than "
                        "the slowest, 1 MiB at 10.300 ms); within 1% of the best: 1 of 2 caps "
                        "(flatness) (medians of 8 seeds)"),
            "%s", buf);
  /* the plotted points too */
  struct ds_sweep_point pts[2];
  ds_sweep_points(&o, rows, 2, pts);
  cr_assert_float_eq(pts[0].iter_ms, 10.3, 1e-12);
  cr_assert_float_eq(pts[1].iter_ms, 10.1, 1e-12);
  /* --jitter alone (one seed) has quantiles of one sample: its time */
  rows[0].samples = rows[1].samples = 1;
  cr_assert_eq(ds_sweep_best_row(&o, rows, 2), 0);
  f = fmemopen(buf, sizeof buf, "w");
  cr_assert_not_null(f);
  ds_sweep_print_best(f, &o, rows, 2);
  fclose(f);
  cr_assert(strstr(buf, "best bucket cap: 1 MiB (10.000 ms per iteration"), "%s", buf);
  cr_assert_null(strstr(buf, "medians"), "%s", buf);
}

/* ---- the closing line: memory, wording, flatness (revuser2 1, 4, 14) ----- */

/* rows of a --batch 64,256,1024 sweep on 4 ranks: iteration times chosen so
 * the per-sample order is 1024 < 256 < 64 (10 ms, 20 ms, 60 ms for 4, 16,
 * 64 units of work), peak memories 10, 40 and 90 GiB on an 80 GiB GPU. */
static void batch_rows(struct ds_options *o, struct ds_summary *rows, const double *peak) {
  ds_test_options_ok("--topo x --batch 64,256,1024", o);
  memset(rows, 0, 3 * sizeof *rows);
  const int batch[3] = {64, 256, 1024};
  const double ms[3] = {10, 20, 60};
  for (int i = 0; i < 3; i++) {
    rows[i].world_size = 4;
    rows[i].batch_per_gpu = batch[i];
    rows[i].iter_ms = ms[i];
    rows[i].peak_mem_gib = peak[i];
    rows[i].gpu_mem_gib = 80;
  }
}

static void print_best(const struct ds_options *o, const struct ds_summary *rows, int n,
                       char *buf, size_t cap) {
  FILE *f = fmemopen(buf, cap, "w");
  cr_assert_not_null(f);
  ds_sweep_print_best(f, o, rows, n);
  fclose(f);
}

Test(sweep, a_configuration_over_memory_is_never_best) {
  /* batch 1024 is the least time per sample (60/64 ms against 20/16 and
   * 10/4 per unit) but needs 90 GiB of an 80 GiB GPU: the best is 256
   * (256 x 4 samples in 20 ms = 51200 samples/s), the slowest 64 (25600),
   * 2.00x; the line says 2 of 3 fit. None fits: no best at all. */
  struct ds_options o;
  struct ds_summary rows[3];
  const double peak[3] = {10, 40, 90};
  batch_rows(&o, rows, peak);
  cr_assert_eq(ds_sweep_best_row(&o, rows, 3), 1);
  char buf[1024] = "";
  print_best(&o, rows, 3, buf, sizeof buf);
  cr_assert(strstr(buf, "best configuration: batch=256 (20.000 ms per iteration, 51200.0 "
                        "samples/s, 2.00x the samples/s of the slowest, batch=64 at 10.000 ms); "
                        "within 1% of the best: 1 of 2 configurations (flatness); 2 of 3 "
                        "configurations fit in the GPU's memory, the others are not ranked\n"),
            "%s", buf);
  /* each row over memory warned, by name; 80 GiB exactly fits */
  rows[0].peak_mem_gib = 80;
  FILE *f = fmemopen(buf, sizeof buf, "w");
  cr_assert_not_null(f);
  rows[1].peak_mem_gib = 80.5;
  ds_sweep_print_memory_warnings(f, &o, rows, 3, "G");
  fclose(f);
  cr_assert_str_eq(buf, "\nwarning: batch=256: 80.50 GiB per GPU exceeds the G's 80.00 GiB of "
                        "memory\nwarning: batch=1024: 90.00 GiB per GPU exceeds the G's 80.00 "
                        "GiB of memory\n");
  cr_assert_eq(ds_sweep_best_row(&o, rows, 3), 0);
  rows[0].peak_mem_gib = 81;
  cr_assert_eq(ds_sweep_best_row(&o, rows, 3), -1);
  print_best(&o, rows, 3, buf, sizeof buf);
  cr_assert_str_eq(buf, "\nbest configuration: none; not one of the 3 configurations fits in "
                        "the GPU's memory\n");
  /* all fit: no note, 1024 best at 68266.7 samples/s, 2.67x batch 64's */
  const double small[3] = {1, 2, 3};
  batch_rows(&o, rows, small);
  print_best(&o, rows, 3, buf, sizeof buf);
  cr_assert(strstr(buf, "best configuration: batch=1024 (60.000 ms per iteration, 68266.7 "
                        "samples/s, 2.67x the samples/s of the slowest, batch=64 at 10.000 ms); "
                        "within 1% of the best: 1 of 3 configurations (flatness)\n"),
            "%s", buf);
}

Test(sweep, the_memory_warning_names_each_row_end_to_end) {
  /* resnet50 on 4 A100 80GB: batch 1024 needs 82.33 GiB, 2048 164.38
   * (revuser2 item 1): both warned by name, 256 the best */
  struct ds_test_result r = run("--topo 4gpu --batch 64,256,1024,2048");
  cr_assert_eq(r.status, 0, "%s", r.err);
  cr_assert(strstr(r.out, "\nbest configuration: batch=256 "), "%s", r.out);
  cr_assert(strstr(r.out, "\nwarning: batch=1024: 82.33 GiB per GPU exceeds"), "%s", r.out);
  cr_assert(strstr(r.out, "\nwarning: batch=2048: 164.38 GiB per GPU exceeds"), "%s", r.out);
  ds_test_release(&r);
}

Test(sweep, a_bucket_sweep_counts_the_caps_within_one_percent) {
  /* caps 1, 5, 25 at 10.30, 10.05, 10.00 ms: 5 MiB is within 1% of 10.00
   * (10.10), 1 MiB not; the cut is (10.3 - 10) / 10.3 = 2.9% less time */
  struct ds_options o;
  ds_test_options_ok("--topo x --bucket-mb 1,5,25", &o);
  struct ds_summary rows[3];
  memset(rows, 0, sizeof rows);
  const double cap[3] = {1, 5, 25}, ms[3] = {10.30, 10.05, 10.00};
  for (int i = 0; i < 3; i++) {
    rows[i].bucket_mb = cap[i];
    rows[i].iter_ms = ms[i];
  }
  char buf[512] = "";
  print_best(&o, rows, 3, buf, sizeof buf);
  cr_assert_str_eq(buf, "\nbest bucket cap: 25 MiB (10.000 ms per iteration, 2.9% less time "
                        "than the slowest, 1 MiB at 10.300 ms); within 1% of the best: 2 of 3 "
                        "caps (flatness)\n");
}

Test(sweep, a_value_listed_twice_is_refused) {
  /* --bucket-mb 5,5 would run 5 MiB twice and rank it against itself */
  const char *cases[][2] = {{"--bucket-mb 5,5", "\"5,5\" lists 5 twice"},
                            {"--world-size 2,4,2", "option --world-size: \"2,4,2\" lists 2 twice"},
                            {"--bucket-mb 5,5.0", "lists 5.0 twice"},
                            {"--straggler 3:1,1", "\"3:1,1\" lists rank 3's factor 1 twice"},
                            {"--comm-hook fp16,fp16", "\"fp16,fp16\" lists fp16 twice"},
                            {"--comm-hook powersgd:1:4:1,2", "lists powersgd:2 twice"}};
  expect_usage_errors(cases, sizeof cases / sizeof *cases);
  ds_test_ddpsim_refuses(TINY "--bucket-mb 5,5", "option --bucket-mb: \"5,5\" lists 5 twice");
}

/* ---- what each text block says (revuser2 3, 7) -------------------------- */

Test(sweep, each_block_says_its_all_reduce_when_it_varies) {
  /* 4gpu at 1 and 2 ranks: one rank runs no collective, two run NCCL's
   * model; the header names the range of world sizes and no all-reduce,
   * each block its own; a sweep of the world size prints each block's
   * throughput. One algorithm for all rows: the header's line alone. */
  struct ds_test_result r = run("--topo 4gpu --model tests/data/tiny-model.yaml "
                                "--world-size 1,2");
  cr_assert_eq(r.status, 0, "%s", r.err);
  cr_assert(strstr(r.out, "on 4gpu (1 to 2 x A100-SXM4-80GB)"), "%s", r.out);
  cr_assert(strstr(r.out, "\nworld size 1, bucket cap 25 MiB (first bucket 1 MiB)\n"
                          "  all-reduce none: one rank, no collective runs\n"), "%s", r.out);
  cr_assert(strstr(r.out, "\nworld size 2, bucket cap 25 MiB (first bucket 1 MiB)\n"
                          "  all-reduce auto: NCCL's choice"), "%s", r.out);
  cr_assert_null(strstr(r.out, "\nall-reduce"), "no header line: %s", r.out);
  cr_assert_null(strstr(r.out, "the plain algorithm"), "%s", r.out);
  const char *tp = strstr(r.out, "  throughput     ");
  cr_assert_not_null(tp, "%s", r.out);
  cr_assert_not_null(strstr(tp + 1, "  throughput     "), "one per block: %s", r.out);
  ds_test_release(&r);
  r = run("--topo 4gpu --model tests/data/tiny-model.yaml --world-size 2,4");
  cr_assert_eq(r.status, 0, "%s", r.err);
  cr_assert(strstr(r.out, "\nall-reduce auto: NCCL's choice"), "%s", r.out);
  cr_assert_null(strstr(r.out, "  all-reduce"), "%s", r.out);
  ds_test_release(&r);
}

Test(sweep, scaling_and_side_by_side_name_the_other_options) {
  /* the world size swept with the bucket cap: the scaling line lists each
   * larger world's rows, written whole; dp,ddp with two caps: the table's
   * options column tells ddp's two rows apart, dp's has none */
  struct ds_test_result r = run(TINY "--world-size 2,4 --bucket-mb 1,25");
  cr_assert_eq(r.status, 0, "%s", r.err);
  cr_assert(strstr(r.out, "\nscaling efficiency (samples/s per rank over world-size=2's with "
                          "the same other options): world-size=4 bucket-mb=1: "),
            "%s", r.out);
  cr_assert(strstr(r.out, "%, world-size=4 bucket-mb=25: "), "%s", r.out);
  ds_test_release(&r);
  r = run(TINY "--strategy dp,ddp --bucket-mb 1,25");
  cr_assert_eq(r.status, 0, "%s", r.err);
  cr_assert(strstr(r.out, "other GiB  options\n  dp "), "%s", r.out);
  cr_assert(strstr(r.out, "  -\n  ddp "), "%s", r.out);
  cr_assert(strstr(r.out, "  bucket-mb=1\n  ddp "), "%s", r.out);
  cr_assert(strstr(r.out, "  bucket-mb=25\n"), "%s", r.out);
  ds_test_release(&r);
}

Test(sweep, a_memory_warning_names_the_strategy_of_its_row) {
  /* --strategy dp,ddp: two rows, nothing swept but the strategy; a
   * further swept option follows the strategy's name */
  struct ds_options o;
  struct ds_summary rows[2];
  memset(rows, 0, sizeof rows);
  const char *names[2] = {"dp", "ddp"};
  for (int i = 0; i < 2; i++) {
    rows[i].strategy = names[i];
    rows[i].peak_mem_gib = 81 + i;
    rows[i].gpu_mem_gib = 80;
  }
  char buf[512] = "";
  ds_test_options_ok("--topo x --strategy dp,ddp", &o);
  FILE *f = fmemopen(buf, sizeof buf, "w");
  cr_assert_not_null(f);
  ds_sweep_print_memory_warnings(f, &o, rows, 2, "G");
  fclose(f);
  cr_assert_str_eq(buf, "\nwarning: dp: 81.00 GiB per GPU exceeds the G's 80.00 GiB of memory\n"
                        "warning: ddp: 82.00 GiB per GPU exceeds the G's 80.00 GiB of memory\n");
  struct ds_summary four[4];
  memset(four, 0, sizeof four);
  for (int i = 0; i < 4; i++) {
    four[i].strategy = names[i / 2];
    four[i].peak_mem_gib = i % 2 ? 90 : 1;
    four[i].gpu_mem_gib = 80;
  }
  ds_test_options_ok("--topo x --strategy dp,ddp --batch 64,1024", &o);
  f = fmemopen(buf, sizeof buf, "w");
  cr_assert_not_null(f);
  ds_sweep_print_memory_warnings(f, &o, four, 4, "G");
  fclose(f);
  cr_assert(strstr(buf, "\nwarning: dp batch=1024: 90.00 GiB"), "%s", buf);
  cr_assert(strstr(buf, "\nwarning: ddp batch=1024: 90.00 GiB"), "%s", buf);
}

/* When nothing is slower than the best (every row that fits ties, or one
 * fits) the closing line names no slowest: a configuration named as both
 * best and slowest read as a difference (revuser3). Batches 64, 256 at the
 * same time per sample (10 and 40 ms for 256 and 1024 samples): a tie at
 * 25600 samples/s; then 256 over memory: batch 64 the one that fits. Bucket
 * caps 1 and 25 at 10 ms both: a tie; 25 over memory: 1 MiB fits alone. */
Test(sweep, a_tie_names_no_slowest) {
  struct ds_options o;
  struct ds_summary rows[3];
  const double peak[3] = {10, 40, 90};
  batch_rows(&o, rows, peak);
  rows[1].iter_ms = 40;
  char buf[1024] = "";
  print_best(&o, rows, 2, buf, sizeof buf);
  cr_assert(strstr(buf, "\nbest configuration: none better: every configuration ties at 10.000 "
                        "ms per iteration, 25600.0 samples/s\n"), "%s", buf);
  cr_assert_null(strstr(buf, "slowest"), "%s", buf);
  rows[1].peak_mem_gib = 90;
  print_best(&o, rows, 2, buf, sizeof buf);
  cr_assert(strstr(buf, "\nbest configuration: batch=64, the one configuration that fits: "
                        "10.000 ms per iteration, 25600.0 samples/s; 1 of 2 configurations fit "
                        "in the GPU's memory"), "%s", buf);
  cr_assert_null(strstr(buf, "slowest"), "%s", buf);
  ds_test_options_ok("--topo x --bucket-mb 1,25", &o);
  memset(rows, 0, sizeof rows);
  for (int i = 0; i < 2; i++) {
    rows[i].bucket_mb = i ? 25 : 1;
    rows[i].iter_ms = 10;
    rows[i].world_size = 4;
    rows[i].batch_per_gpu = 32;
    rows[i].gpu_mem_gib = 80;
  }
  print_best(&o, rows, 2, buf, sizeof buf);
  cr_assert(strstr(buf, "\nbest bucket cap: none better: every cap ties at 10.000 ms per "
                        "iteration\n"), "%s", buf);
  rows[1].peak_mem_gib = 90;
  print_best(&o, rows, 2, buf, sizeof buf);
  cr_assert(strstr(buf, "\nbest bucket cap: 1 MiB (10.000 ms per iteration), the one cap that "
                        "fits; 1 of 2 configurations fit"), "%s", buf);
  cr_assert_null(strstr(buf, "slowest"), "%s", buf);
}
