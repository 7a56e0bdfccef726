/*
 * "-" as an input file, one rule for every command (base/csvread.h,
 * base/cli.h ds_cli_refuse_stdin): the CSV tables one process reads once
 * (ddpsim analyze's traces, --measured, --reference) read standard input
 * and name it "standard input"; the files found by path or name or read
 * again by path (topology, model, calibration and GPU table YAML, topo
 * import's inputs, ddpreal's schedule) refuse it, exit 2, naming the flag
 * and what to give. Both were "cannot open" or "not found" before, or an
 * unknown option. End to end: $DDPSIM_BIN and $DDPREAL_BIN (else the
 * sanitizer build's).
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/support.h"

#define TINY "--topo tests/data/tiny-topo.yaml --model tests/data/tiny-model.yaml "

/* `binary args` with standard input from the file in_path: ds_test_run
 * gives the command /dev/null, which the inner shell's redirection
 * replaces. */
static struct ds_test_result run_from(const char *binary, const char *args,
                                      const char *in_path) {
  char wrapped[1024];
  snprintf(wrapped, sizeof wrapped, "sh -c 'exec \"$0\" \"$@\" <%s' %s", in_path, binary);
  return ds_test_run("", wrapped, args);
}

Test(cli_stdin, csv_inputs_read_standard_input) {
  char trace[] = "/tmp/ddpsim-stdin-trace-XXXXXX", table[] = "/tmp/ddpsim-stdin-m-XXXXXX";
  ds_test_write_temp(trace, "");
  char args[512];
  snprintf(args, sizeof args, TINY "--iters 2 --trace %s", trace);
  struct ds_test_result r = ds_test_cli_ok(args);
  ds_test_release(&r);
  /* analyze -: the report of the file itself, the name aside */
  snprintf(args, sizeof args, "analyze %s", trace);
  struct ds_test_result named = ds_test_cli_ok(args);
  r = run_from(ds_test_ddpsim(), "analyze -", trace);
  cr_assert_eq(r.status, 0, "%s", r.err);
  cr_assert(strstr(r.out, "trace      standard input (sim): iteration 1"), "%s", r.out);
  const char *rest = strchr(r.out, '\n'), *named_rest = strchr(named.out, '\n');
  cr_assert(rest && named_rest);
  cr_assert_str_eq(rest, named_rest);
  ds_test_release(&r);
  ds_test_release(&named);
  /* as one of two, and never both */
  snprintf(args, sizeof args, "analyze %s -", trace);
  r = run_from(ds_test_ddpsim(), args, trace);
  cr_assert_eq(r.status, 0, "%s", r.err);
  cr_assert(strstr(r.out, "measured   standard input (sim)"), "%s", r.out);
  ds_test_release(&r);
  r = run_from(ds_test_ddpsim(), "analyze - -", trace);
  cr_assert_eq(r.status, 2);
  cr_assert(strstr(r.err, "analyze - -: standard input holds one trace; give the other as "
                          "a file"), "%s", r.err);
  ds_test_release(&r);
  /* a bad trace on standard input: its lines named under that name */
  r = ds_test_cli("analyze -");
  cr_assert_eq(r.status, 2);
  cr_assert(strstr(r.err, "standard input:1: the file is empty"), "%s", r.err);
  ds_test_release(&r);
  /* --measured -: the sweep's table */
  ds_test_write_temp(table, "bucket_mb,iter_ms\n1,40\n25,38\n");
  r = run_from(ds_test_ddpsim(), TINY "--bucket-mb 1,25 --measured -", table);
  cr_assert_eq(r.status, 0, "%s", r.err);
  cr_assert(strstr(r.out, "measured: standard input, 2 points"), "%s", r.out);
  ds_test_release(&r);
  r = ds_test_cli(TINY "--bucket-mb 1,25 --measured -");
  cr_assert_eq(r.status, 2);
  cr_assert(strstr(r.err, "--measured standard input: the file is empty"), "%s", r.err);
  ds_test_release(&r);
  /* standard input closed: the user's input, exit 2 for both (--measured
   * said exit 1, analyze 2) */
  static const char *const closed[] = {"analyze -", TINY "--bucket-mb 1,25 --measured -"};
  for (size_t i = 0; i < 2; i++) {
    r = run_from(ds_test_ddpsim(), closed[i], "&-");
    cr_assert_eq(r.status, 2, "%s: status %d, %s", closed[i], r.status, r.err);
    cr_assert(strstr(r.err, "standard input: "), "%s: %s", closed[i], r.err);
    cr_assert_str_eq(r.out, "", "%s", closed[i]);
    ds_test_release(&r);
  }
  unlink(trace);
  unlink(table);
}

/* collective --reference -: the table's name in the plot's line and in the
 * refusal of a table with no row at the run's rank count (that one said
 * "-: no row at 4 ranks"). */
Test(cli_stdin, collective_reference_reads_standard_input) {
  ds_test_require_gnuplot();
  char table[] = "/tmp/ddpsim-stdin-ref-XXXXXX", png[64];
  ds_test_write_temp(table, "size_bytes,busbw_gbps,n_ranks\n1048576,30,8\n1048576,20,4\n");
  snprintf(png, sizeof png, "%s.png", table);
  char args[512];
  snprintf(args, sizeof args, "collective --topo dgx-a100 -g 4 -b 1M -e 2M --plot %s "
           "--reference -", png);
  struct ds_test_result r = run_from(ds_test_ddpsim(), args, table);
  cr_assert_eq(r.status, 0, "%s", r.err);
  cr_assert(strstr(r.out, "# reference: 1 point of standard input drawn on "), "%s", r.out);
  ds_test_release(&r);
  snprintf(args, sizeof args, "collective --topo dgx-a100 -g 2 -b 1M -e 2M --plot %s "
           "--reference -", png);
  r = run_from(ds_test_ddpsim(), args, table);
  cr_assert_eq(r.status, 2, "%s", r.err);
  cr_assert(strstr(r.err, "standard input: no row at 2 ranks (the run's, option -g)"), "%s",
            r.err);
  cr_assert_str_eq(r.out, "");
  ds_test_release(&r);
  unlink(table);
  unlink(png);
}

#define SCHEDULE_STDIN                                                                     \
  "option --schedule -: standard input is not read (every rank reads the schedule from its "  \
  "path); give the file ddpsim --schedule wrote"

Test(cli_stdin, files_found_by_path_refuse_standard_input) {
  static const struct { int real; const char *args, *msg; } cases[] = {
      {0, "--topo -", "option --topo -: standard input is not read (a topology's GPU table"},
      {0, "--topo 4gpu --model -", "option --model -: standard input is not read ("},
      {0, "--topo 4gpu --calib tests/data/tiny-calib.yaml,-",
       "option --calib -: standard input is not read ("},
      {0, "--topo 4gpu --calib tests/data/tiny-calib.yaml --calib -",
       "option --calib -: standard input is not read ("},
      {0, "topo -", "argument TOPOLOGY -: standard input is not read (a topology's GPU"},
      {0, "topo import -", "argument FILE -: standard input is not read (import names the "
                           "topology and finds a GPU table from the first file's path)"},
      {0, "topo import x.txt -", "argument FILE -: standard input is not read (import reads "
                                 "every node's file by its path, as the first"},
      {0, "topo import x.xml --gpus -", "option --gpus -: standard input is not read ("},
      {0, "collective --topo -", "option --topo -: standard input is not read ("},
      {0, "buckets --model -", "option --model -: standard input is not read ("},
      /* ddpreal's two commands that read a schedule: one reason, word for word */
      {1, "--schedule - --trace /tmp/ddpsim-stdin-never.csv", SCHEDULE_STDIN},
      {1, "calibrate --schedule - --out /tmp/ddpsim-stdin-never.yaml", SCHEDULE_STDIN},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    struct ds_test_result r =
        ds_test_run("", cases[i].real ? ds_test_ddpreal() : ds_test_ddpsim(), cases[i].args);
    cr_assert_eq(r.status, 2, "%s: status %d, %s", cases[i].args, r.status, r.err);
    cr_assert(strstr(r.err, cases[i].msg), "%s: %s", cases[i].args, r.err);
    cr_assert(strstr(r.err, "; give "), "%s: says what to give: %s", cases[i].args, r.err);
    cr_assert_str_eq(r.out, "", "%s", cases[i].args);
    ds_test_release(&r);
  }
}
