/*
 * Bad sweep values, refused naming the flag (a bad range, a value listed
 * twice), and the other sweepable options (issue #6; sim/cli/options.c,
 * sim/cli/sweep.c, docs/sweeps.md): their lists and ranges, the cross
 * product's order per strategy, rows that say their configuration,
 * parallel output identical, the straggler's factor, bad values and bounds
 * naming the flag, one value no strategy uses refused, scaling efficiency
 * per strategy and per other values (text, CSV, JSON), and the best row
 * with samples. End-to-end
 * cases run $DDPSIM_BIN (else build/asan/ddpsim).
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <signal.h>
#include <string.h>

#include "tests/support.h"
#include "sim/cli/options.h"
#include "sim/cli/report.h"
#include "sim/cli/sweep.h"

/* ---- helpers ------------------------------------------------------------ */

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
  struct ds_test_result r = ds_test_cli(TINY "--bucket-mb 5:1:1");
  cr_assert_eq(r.status, 2);
  cr_assert(strstr(r.err, "--bucket-mb") && strstr(r.err, "start must be less"), "%s",
            r.err);
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
  struct ds_test_result r = ds_test_cli(TINY
                                        "--strategy dp,ddp,ps --ps-servers 1,2 --ring-chunks 1,2 "
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
  r = ds_test_cli(TINY "--comm-hook none,fp16 --format json");
  cr_assert_eq(r.status, 0, "%s", r.err);
  cr_assert(strstr(r.out, "\"straggler_factor\": 1, \"comm_hook\": \"fp16\""), "%s", r.out);
  cr_assert(strstr(r.out, "\"ring_chunks\": 1, "), "%s", r.out);
  ds_test_release(&r);
  /* Without such a sweep the sweep columns are absent (existing outputs
   * unchanged); ring_chunks, which changes the numbers, is in every row. */
  r = ds_test_cli(TINY "--ring-chunks 2 --format csv");
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
    struct ds_test_result one = ds_test_cli(a), two = ds_test_cli(b);
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
  struct ds_test_result base = ds_test_cli(TINY "--format csv");
  struct ds_test_result r = ds_test_cli(TINY "--straggler 1:1,2,3 --format csv");
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
      /* only ddp's all-reduces and dp's broadcasts and reduces run on
       * NCCL's model */
      {"--strategy single,ps --algo tree", "option --algo tree: no strategy of the run uses "
                                           "it (dp, ddp do)"},
      {"--strategy ps --proto LL", "option --proto LL: no strategy of the run uses it (dp, "
                                   "ddp do)"},
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
    struct ds_test_result r = ds_test_cli(args);
    cr_assert_eq(r.status, 0, "%s: %s", args, r.err);
    ds_test_release(&r);
  }
}

/* A value out of range is refused with the range it must be in: these
 * said "greater than 0" of 1e9 MiB, 2e6 MiB and a factor 1e7 (the bound is
 * 1e6, base/values.c), and buckets took the list "1,5" for a bad size. */
/* The bounds on how much one command line may ask for (sim/cli/options.h
 * DS_MAX_CONFIGS, DS_MAX_STRAGGLERS; a list's 64 values): each refused
 * before any run, naming the bound. 64 x 64 x 2 values are 8192
 * configurations, one list short of the 64-value cap each. */
Test(sweep, the_counts_a_command_may_ask_for_are_bounded) {
  char many[65 * 8 + 64] = TINY "--straggler ";
  for (int r = 0; r < 65; r++) {
    char item[16];
    snprintf(item, sizeof item, "%s%d:2", r ? "," : "", r);
    strcat(many, item);
  }
  const char *const cases[][2] = {
      {TINY "--batch 1:64:1 --bucket-mb 1:64:1 --world-size 1,2",
       "the sweep has 8192 configurations; at most 4096: give fewer values"},
      {TINY "--batch 1:65:1", "option --batch: at most 64 values"},
      {many, "option --straggler: at most 64 stragglers"},
      {TINY "--straggler 1:1:2:0.5,2:1:2:0.5",
       "option --straggler: only one straggler's factor can take a list (rank 1's already does)"},
      {TINY "--straggler 1:2,1:3", "option --straggler: rank 1 given twice"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
    ds_test_ddpsim_refuses(cases[i][0], cases[i][1]);
}

Test(sweep, range_errors_name_the_bound) {
  static const char *const cases[][2] = {
      {TINY "--bucket-mb 1e9", "option --bucket-mb: expected a size in MiB greater than 0 "
                               "and at most 1e6 (e.g. 25 or 0.5), got \"1e9\""},
      {TINY "--first-bucket-mb 2e6", "option --first-bucket-mb: expected a size in MiB greater "
                                     "than 0 and at most 1e6"},
      {TINY "--bucket-mb 1:2e6:log3", "gives 2e+06, expected a size in MiB greater than 0 and "
                                      "at most 1e6"},
      {TINY "--straggler 1:1e7", "FACTOR a number from 0.01 to 1e6"},
      {TINY "--straggler 1:1,2e7", "a factor from 0.01 to 1e6"},
      /* below 0.01 a rank's compute rounds to nothing (1e-300 printed
       * forward and backward 0.000 ms, issue #12) */
      {TINY "--straggler 1:1e-300", "FACTOR a number from 0.01 to 1e6"},
      {TINY "--straggler 1:1,0.005", "a factor from 0.01 to 1e6"},
      {TINY "--straggler 1:0.001:1:log4", "gives 0.001, expected a factor from 0.01 to 1e6"},
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
  struct ds_test_result c = ds_test_cli(TINY "--world-size 1,2,4 --format csv");
  struct ds_test_result r = ds_test_cli(TINY "--world-size 1,2,4");
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
  struct ds_test_result c = ds_test_cli(TINY "--strategy single,ddp --world-size 1,2 --format csv");
  struct ds_test_result j =
      ds_test_cli(TINY "--strategy single,ddp --world-size 1,2 --format json");
  struct ds_test_result one = ds_test_cli(TINY "--strategy single,ddp --world-size 2 --format csv");
  struct ds_test_result onej =
      ds_test_cli(TINY "--strategy single,ddp --world-size 2 --format json");
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
