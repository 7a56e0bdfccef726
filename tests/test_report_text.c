/*
 * What the text report (sim/cli/report_text.c) says against the CSV of the
 * same run: every block's throughput line holds the CSV's samples_per_s
 * and speedup_vs_single (DDP's one-configuration block and a sweep's
 * blocks too, not only the strategies'). End-to-end: $DDPSIM_BIN (the
 * sanitizer build in `make test`), else build/asan/ddpsim.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "tests/support.h"

#define TINY "--topo tests/data/tiny-topo.yaml --model tests/data/tiny-model.yaml "

/* The throughput line the text must hold for CSV row `row` of `csv`. */
static void expected_throughput(const char *csv, int row, char *buf, size_t cap) {
  snprintf(buf, cap, "\n  throughput     %10.1f samples/s  (%.3f x single at batch %.0f)\n",
           ds_test_csv_num(csv, "samples_per_s", row),
           ds_test_csv_num(csv, "speedup_vs_single", row),
           ds_test_csv_num(csv, "batch_per_gpu", row));
}

/* `args` as text and as CSV: the text holds each CSV row's throughput
 * line, in the rows' order, and no other throughput line. */
static void throughput_as_csv(const char *args, int n_rows) {
  char cmd[512];
  snprintf(cmd, sizeof cmd, "%s --format csv", args);
  struct ds_test_result csv = ds_test_cli_ok(cmd);
  struct ds_test_result text = ds_test_cli_ok(args);
  const char *at = text.out;
  for (int row = 0; row < n_rows; row++) {
    char line[160];
    expected_throughput(csv.out, row, line, sizeof line);
    const char *found = strstr(at, line);
    cr_assert_not_null(found, "%s: row %d's line '%s' not in:\n%s", args, row, line + 1,
                       text.out);
    at = found + strlen(line) - 1; /* from its newline on */
  }
  cr_assert_null(strstr(at, "  throughput     "), "%s: more lines than rows:\n%s", args,
                 text.out);
  ds_test_release(&csv);
  ds_test_release(&text);
}

Test(report_text, every_strategy_prints_the_csvs_throughput_and_speedup) {
  /* ddp alone is the report README.md shows (its own block, not the
   * strategies' common header): it printed no throughput before */
  throughput_as_csv(TINY "--strategy ddp", 1);
  throughput_as_csv(TINY "--strategy dp", 1);
  throughput_as_csv(TINY "--strategy ps", 1);
  throughput_as_csv(TINY "--strategy single", 1);
  throughput_as_csv(TINY "--strategy single,ddp", 2);
}

Test(report_text, a_sweeps_blocks_print_the_csvs_throughput_and_speedup) {
  /* a bucket sweep (ranked per iteration) printed none; a batch sweep
   * (ranked per sample) printed samples/s alone */
  throughput_as_csv(TINY "--bucket-mb 1,25", 2);
  throughput_as_csv(TINY "--batch 1,2", 2);
}
