/*
 * What NCCL's model ran for each all-reduce, in the summary (report.h
 * nccl_runs): the text's "nccl" line under buckets and the JSON's
 * nccl_allreduces say what the trace's algo column says of rank 0's
 * all-reduces of the reported iteration, in order; plain algorithms get
 * neither. Before, `--algo auto` said only "NCCL's choice ... per call".
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sim/cli/report.h"
#include "tests/support.h"

/* A hand-made two-rank DDP row under --algo auto: its strings set (every
 * format prints them), no NCCL call recorded yet. */
static struct ds_summary auto_row(void) {
  return (struct ds_summary){.strategy = "ddp", .model = "m", .topology = "t", .gpu = "g",
                             .dtype = "fp32", .net_model = "maxmin", .coll_model = "flow",
                             .coll_algo = "auto", .ddp_options = "none", .amp = "none",
                             .optimizer = "sgd", .world_size = 2, .iters = 2,
                             .reported_iter = 1};
}

/* Its text. */
static char *text_of(const struct ds_summary *row) {
  return ds_test_report_printed(DS_FORMAT_TEXT, row, 1);
}

/* The trace's algo names of rank 0's all-reduces in iteration `iter`, in
 * file order, as runs "A xN, B xM" into out (the trace lists a rank's ops
 * in schedule order). */
static void trace_runs(const char *path, int iter, char *out, size_t cap) {
  char *text = ds_test_slurp(path);
  cr_assert_not_null(text);
  out[0] = '\0';
  char prev[64] = "";
  int count = 0;
  char want_iter[16];
  snprintf(want_iter, sizeof want_iter, ",sim,%d,", iter);
  for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
    const char *c = strchr(line, ',');
    if (!c || strncmp(c, ",0,comm,allreduce,", 18) != 0 || !strstr(line, want_iter)) continue;
    /* algo: the 10th column */
    const char *f = line;
    for (int k = 0; k < 9; k++) {
      f = strchr(f, ',');
      cr_assert_not_null(f, "%s: fewer than 10 columns in %s", path, line);
      f++;
    }
    const char *f_end = strchr(f, ',');
    cr_assert_not_null(f_end, "%s: no column after algo in %s", path, line);
    char algo[64];
    snprintf(algo, sizeof algo, "%.*s", (int)(f_end - f), f);
    if (count > 0 && strcmp(algo, prev) == 0) {
      count++;
      continue;
    }
    if (count > 0)
      snprintf(out + strlen(out), cap - strlen(out), "%s%s x%d", out[0] ? ", " : "", prev,
               count);
    snprintf(prev, sizeof prev, "%s", algo);
    count = 1;
  }
  cr_assert_gt(count, 0, "no all-reduce of rank 0 in %s", path);
  snprintf(out + strlen(out), cap - strlen(out), "%s%s x%d", out[0] ? ", " : "", prev, count);
  free(text);
}

Test(report_nccl, the_text_names_what_ran_as_the_trace_does) {
  /* one choice at 25 MiB caps on 4gpu, two at 10 MiB (the last bucket
   * is small): the line holds the trace's runs either way */
  static const char *caps[] = {"25", "10"};
  for (size_t i = 0; i < sizeof caps / sizeof *caps; i++) {
    char trace[64], args[256], runs[1024], line[1200];
    snprintf(trace, sizeof trace, "/tmp/ddpsim-nccl-%d-%zu.csv", (int)getpid(), i);
    snprintf(args, sizeof args, "--topo 4gpu --bucket-mb %s --trace %s", caps[i], trace);
    struct ds_test_result r = ds_test_cli_ok(args);
    trace_runs(trace, 1, runs, sizeof runs);
    snprintf(line, sizeof line,
             "before iteration 1\n    nccl         %s  (in all-reduce order)\n", runs);
    cr_assert_not_null(strstr(r.out, line), "want %s in %s", line, r.out);
    ds_test_release(&r);
    unlink(trace);
  }
}

Test(report_nccl, the_json_lists_each_run_and_plain_algorithms_none) {
  struct ds_test_result r = ds_test_cli_ok("--topo 2node-ib --model bert-base --format json");
  /* the same run's text says "tree/LL128 x1, nvls/Simple x13" */
  cr_assert_not_null(strstr(r.out, "\"nccl_allreduces\": [{\"algo\": \"tree\", \"proto\": "
                                   "\"LL128\", \"calls\": 1}, {\"algo\": \"nvls\", \"proto\": "
                                   "\"Simple\", \"calls\": 13}], \"nccl_calls_unlisted\": 0,"),
                     "%s", r.out);
  ds_test_release(&r);
  r = ds_test_cli_ok("--topo 2node-ib --model bert-base");
  cr_assert_not_null(strstr(r.out, "    nccl         tree/LL128 x1, nvls/Simple x13  (in "
                                   "all-reduce order)\n"), "%s", r.out);
  ds_test_release(&r);
  r = ds_test_cli_ok("--topo 4gpu --algo ring --format json");
  cr_assert_not_null(strstr(r.out, "\"nccl_allreduces\": [], \"nccl_calls_unlisted\": 0,"),
                     "%s", r.out);
  ds_test_release(&r);
  r = ds_test_cli_ok("--topo 4gpu --algo ring");
  cr_assert_null(strstr(r.out, "    nccl "), "%s", r.out);
  ds_test_release(&r);
}

Test(report_nccl, many_runs_print_each_choice_once_with_its_total) {
  /* six runs alternating two choices (small and large buckets): the text
   * gives each choice's total in the order it first ran, and the runs */
  struct ds_summary row = auto_row();
  double bytes[9] = {0};
  row.bucket_bytes = bytes;
  row.n_buckets = 9;
  static const char *calls[] = {"ring/Simple", "ring/LL", "ring/LL", "ring/Simple",
                                "ring/LL",     "ring/Simple", "ring/LL", "tree/LL128",
                                "tree/LL128"};
  for (size_t i = 0; i < sizeof calls / sizeof *calls; i++)
    ds_report_add_nccl_call(&row, calls[i]);
  ds_report_add_nccl_call(&row, "ring"); /* no protocol: not NCCL's */
  cr_assert_eq(row.n_nccl_runs, 7);
  char *text = text_of(&row);
  cr_assert_not_null(strstr(text, "    nccl         ring/Simple x3, ring/LL x4, tree/LL128 x2  "
                                  "(mixed in 7 runs; the JSON's nccl_allreduces has the "
                                  "order)\n"), "%s", text);
  free(text);
}

Test(report_nccl, calls_past_the_last_run_are_counted_not_listed) {
  /* two choices alternating 300 times: 256 runs of one call each
   * (DS_SUMMARY_MAX_NCCL_RUNS), the other 44 calls counted */
  struct ds_summary row = auto_row();
  double bytes[1] = {0};
  row.bucket_bytes = bytes;
  row.n_buckets = 1;
  for (int i = 0; i < 300; i++) ds_report_add_nccl_call(&row, i % 2 ? "ring/LL" : "ring/Simple");
  cr_assert_eq(row.n_nccl_runs, DS_SUMMARY_MAX_NCCL_RUNS);
  cr_assert_eq(row.nccl_calls_unlisted, 300 - DS_SUMMARY_MAX_NCCL_RUNS);
  char *text = text_of(&row);
  cr_assert_not_null(strstr(text, "    nccl         ring/Simple x128, ring/LL x128, 44 more calls  "
                                  "(mixed in 256 or more runs; the JSON's nccl_allreduces has "
                                  "the order)\n"), "%s", text);
  free(text);
  char *json = ds_test_report_printed(DS_FORMAT_JSON, &row, 1);
  cr_assert_not_null(strstr(json, "\"calls\": 1}], \"nccl_calls_unlisted\": 44, "), "%s", json);
  free(json);
}
