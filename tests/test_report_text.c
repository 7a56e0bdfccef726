/*
 * What the text report (sim/cli/report_text.c) says against the CSV of the
 * same run: every block's throughput line holds the CSV's samples_per_s
 * and speedup_vs_single (DDP's one-configuration block and a sweep's
 * blocks too, not only the strategies'), and a bucket too small for two
 * decimals of MiB is not printed as 0.00; --loop free says whether its
 * reported iteration is steady. End-to-end: $DDPSIM_BIN (the
 * sanitizer build in `make test`), else build/asan/ddpsim.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
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

/* Where the text's bucket list starts: after "  buckets  N:". */
static const char *bucket_list(const char *text) {
  const char *p = strstr(text, "\n  buckets ");
  cr_assert_not_null(p, "%s", text);
  p = strchr(p, ':');
  cr_assert_not_null(p, "%s", text);
  return p + 1;
}

Test(report_text, a_bucket_under_a_hundredth_of_a_mib_is_not_printed_as_zero) {
  /* PyTorch 1.4's 1 MiB first bucket closes after fc.bias alone, 1000
   * floats, 4000 B = 0.0038 MiB; the CSV's bucket_mib holds it to six
   * decimals, the text to two significant digits, not as 0.00 */
  const char *args = "--topo 4gpu --pytorch-version 1.4 --bucket-mb 5";
  char cmd[256];
  snprintf(cmd, sizeof cmd, "%s --format csv", args);
  struct ds_test_result csv = ds_test_cli_ok(cmd);
  char mib[4096];
  ds_test_csv_str(csv.out, "bucket_mib", 0, mib, sizeof mib);
  double first = strtod(mib, NULL);
  cr_assert(first > 0 && first < 0.005, "the case: a first bucket that rounds to 0.00: %s", mib);
  struct ds_test_result text = ds_test_cli_ok(args);
  const char *list = bucket_list(text.out);
  double shown = strtod(list, NULL);
  cr_assert(shown > 0, "printed as zero: %.40s", list);
  cr_assert_float_eq(shown, first, first * 0.02, "%g against the CSV's %g", shown, first);
  /* the larger ones keep their two decimals */
  cr_assert(strstr(list, ", 11.83, "), "%.80s", list);
  ds_test_release(&csv);
  ds_test_release(&text);
}

/* `args`' CSV iter_ms, to the text's three decimals. */
static void iter_ms_text(const char *args, char *buf, size_t cap) {
  char cmd[256];
  snprintf(cmd, sizeof cmd, "%s --format csv", args);
  struct ds_test_result csv = ds_test_cli_ok(cmd);
  snprintf(buf, cap, "%.3f", ds_test_csv_num(csv.out, "iter_ms", 0));
  ds_test_release(&csv);
}

Test(report_text, loop_free_says_whether_the_reported_iteration_is_steady) {
  /* --loop free carries the host's lead over the GPU into the next
   * iteration. In a run of 3 iterations DDP's iteration 1 runs the bucket
   * rebuild's forward, whose one-time broadcasts and blocking copies make
   * the host wait for the GPU: iteration 1 takes longer than the reported
   * one, and the line names the rebuild, not the lead, with the --iters
   * (4) that compares two iterations after it. */
  struct ds_test_result r = ds_test_cli_ok("--topo 4gpu --loop free --host-scale 1.15 --iters 3");
  const char *said = "\n    loop free    not checked for a steady period: iteration 1 took ";
  const char *at = strstr(r.out, said);
  cr_assert(at, "'%s' not in:\n%s", said + 1, r.out);
  double iter1_ms = strtod(at + strlen(said), NULL);
  cr_assert(strstr(at, " ms, running the bucket rebuild's broadcasts and blocking copies (once); "
                       "--iters 4 or more compares two iterations after it\n"), "%s", r.out);
  cr_assert_null(strstr(r.out, "host's lead"), "%s", r.out);
  ds_test_release(&r);
  char iter2[32];
  iter_ms_text("--topo 4gpu --loop free --host-scale 1.15 --iters 3", iter2, sizeof iter2);
  cr_assert_gt(iter1_ms, strtod(iter2, NULL));
  /* static_graph rebuilds before iteration 2: its forward there at --iters 4 */
  r = ds_test_cli_ok("--topo 4gpu --loop free --static-graph --iters 4");
  cr_assert(strstr(r.out, "\n    loop free    not checked for a steady period: iteration 2 took "),
            "%s", r.out);
  cr_assert(strstr(r.out, "; --iters 5 or more compares two iterations after it\n"), "%s", r.out);
  ds_test_release(&r);
  /* static_graph at --iters 3: iteration 1 ran on the buckets before the
   * rebuild, the reported 2 on the rebuilt ones (and without the rebuild's
   * forward, as a reported iteration): another layout, not the lead */
  r = ds_test_cli_ok("--topo 4gpu --loop free --static-graph --iters 3");
  cr_assert(strstr(r.out, "\n    loop free    not checked for a steady period: iteration 1 took "),
            "%s", r.out);
  cr_assert(strstr(r.out, " ms on the buckets before their rebuild, iteration 2 on the rebuilt "
                          "ones; --iters 5 or more compares two iterations after the rebuild\n"),
            "%s", r.out);
  cr_assert_null(strstr(r.out, "host's lead"), "%s", r.out);
  ds_test_release(&r);
  /* the equal pair after it: said, and not called steady */
  r = ds_test_cli_ok("--topo 4gpu --loop free --host-scale 1.15 --iters 4");
  cr_assert(strstr(r.out, "\n    loop free    iteration 2 took the same; the host's lead over "
                          "the GPU carries into the next iteration and can move a later one"),
            "%s", r.out);
  ds_test_release(&r);
  /* --iters 2 (the default): iteration 1 follows iteration 0, which starts
   * with no lead, and nothing compares; both strategies' blocks say so,
   * single's advising --iters 3 and DDP's 4, past the rebuild's forward */
  r = ds_test_cli_ok("--topo 4gpu --loop free --strategy single,ddp");
  const char *unchecked = "\n    loop free    not checked for a steady period: iteration 0 "
                          "starts with no host lead and iteration 1 the lead it built; --iters ";
  const char *first = strstr(r.out, unchecked);
  const char *second = first ? strstr(first + 1, unchecked) : NULL;
  cr_assert(first && second, "twice: %s", r.out);
  cr_assert_eq(strncmp(first + strlen(unchecked), "3 or more", 9), 0, "%s", r.out);
  cr_assert_eq(strncmp(second + strlen(unchecked), "4 or more", 9), 0, "%s", r.out);
  ds_test_release(&r);
  /* --jitter's iterations differ by their draws: no comparison */
  r = ds_test_cli_ok("--topo 4gpu --loop free --iters 4 --jitter 0.05");
  cr_assert(strstr(r.out, "\n    loop free    not checked for a steady period: --jitter draws "
                          "every iteration's times anew\n"), "%s", r.out);
  ds_test_release(&r);
  /* --loop sync waits for the step every iteration: no line */
  r = ds_test_cli_ok("--topo 4gpu --strategy single,ddp");
  cr_assert_null(strstr(r.out, "loop free"), "%s", r.out);
  ds_test_release(&r);
}
