/*
 * Tests for the trace reader's checks on a trace as a whole and on its
 * header and its comment lines (traces/trace_read.c, traces/trace_keys.c), from
 * the review of traces/ and analysis/ (revana): each case is a hand-made
 * file the reader refused too little of, or too much, with the message it
 * must give ("FILE:LINE: ...").
 *
 * Every test works in its own fresh directory under /tmp.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "traces/trace.h"

static char dir[64];
static char path[128];

static void make_dir(void) {
  strcpy(dir, "/tmp/ds_test_trace_checks_XXXXXX");
  cr_assert_not_null(mkdtemp(dir));
  snprintf(path, sizeof path, "%s/t.csv", dir);
}

static void remove_dir(void) {
  unlink(path);
  rmdir(dir);
}

TestSuite(trace_checks, .init = make_dir, .fini = remove_dir);

#define HEADER                                                             \
  "id,rank,stream,kind,name,layer,bucket,coll,root,algo,bytes,flops,dur_us," \
  "deps,source,iter,start_us,end_us"

/* Writes n bytes of text to path. */
static void spit_n(const char *text, size_t n) {
  FILE *fp = fopen(path, "wb");
  cr_assert_not_null(fp);
  cr_assert_eq(fwrite(text, 1, n, fp), n);
  cr_assert_eq(fclose(fp), 0);
}

/* Reads text as a trace: its status, and its message in err. */
static ds_status read_text(const char *text, struct ds_err *err, struct ds_trace **t) {
  spit_n(text, strlen(text));
  *t = NULL;
  return ds_trace_read_csv(path, t, err);
}

/* The read of text fails with DS_EINPUT and a message "PATH<want>". */
static void expect_error(const char *text, const char *want) {
  struct ds_err err = {0};
  struct ds_trace *t;
  ds_status st = read_text(text, &err, &t);
  cr_assert_eq(st, DS_EINPUT, "want failure \"%s\", got %d: %s", want, st, err.msg);
  cr_assert_null(t);
  char full[512];
  snprintf(full, sizeof full, "%s%s", path, want);
  cr_assert(strstr(err.msg, full), "message \"%s\"\nlacks \"%s\"", err.msg, full);
}

/* The read of text succeeds; the trace is returned (owned). */
static struct ds_trace *expect_ok(const char *text) {
  struct ds_err err = {0};
  struct ds_trace *t;
  ds_status st = read_text(text, &err, &t);
  cr_assert_eq(st, DS_OK, "want success, got %d: %s", st, err.msg);
  return t;
}

/* Finding 1: iteration 0 runs [0, 10] us, iteration 1 [2, 5] us: timed from
 * iteration 0's end (10) to its own (5), iteration 1 would last -5 us, so
 * the reader refuses it at the row of iteration 1's last end (line 4),
 * naming iteration 0's (line 3). Iteration 1 ending at 10 exactly lasts 0
 * and is read. */
Test(trace_checks, an_iteration_ending_before_the_previous_one_is_refused) {
  expect_error("# ddpsim-trace v2\n" HEADER "\n"
               "0,0,compute,fwd,a,0,-1,-1,-1,,0,0,10,,sim,0,0.000,10.000\n"
               "0,0,compute,fwd,a,0,-1,-1,-1,,0,0,10,,sim,1,2.000,5.000\n"
               "# end: 2 rows\n",
               ":4: column 'end_us': iteration 1 ends at 5.000 us, before iteration 0 "
               "(10.000 us); an iteration's last op ends no earlier than the iterations "
               "before it (line 3)");
  /* the rows' order does not matter, nor a gap in the iterations: iteration
   * 2 is checked against iteration 0's end */
  expect_error("# ddpsim-trace v2\n" HEADER "\n"
               "0,0,compute,fwd,a,0,-1,-1,-1,,0,0,10,,sim,2,2.000,5.000\n"
               "0,0,compute,fwd,a,0,-1,-1,-1,,0,0,10,,sim,0,0.000,10.000\n"
               "# end: 2 rows\n",
               ":3: column 'end_us': iteration 2 ends at 5.000 us, before iteration 0");
  ds_trace_free(expect_ok("# ddpsim-trace v2\n" HEADER "\n"
                          "0,0,compute,fwd,a,0,-1,-1,-1,,0,0,10,,sim,0,0.000,10.000\n"
                          "0,0,compute,fwd,a,0,-1,-1,-1,,0,0,10,,sim,1,2.000,10.000\n"
                          "# end: 2 rows\n"));
}

/* Finding 2: times past the longest simulated time (1e15 us = 1e18 ns, as
 * dur_us) are refused, so that the analysis's sums of them stay in range;
 * 1e15 itself is read. */
Test(trace_checks, times_past_the_longest_simulated_time_are_refused) {
  expect_error("# ddpsim-trace v2\n" HEADER "\n"
               "0,0,compute,fwd,a,0,-1,-1,-1,,0,0,10,,sim,0,0.000,9000000000000000.000\n"
               "# end: 1 row\n",
               ":3: column 'end_us': expected microseconds >= 0 with at most 3 decimals, "
               "at most 1e15");
  expect_error("# ddpsim-trace v2\n" HEADER "\n"
               "0,0,compute,fwd,a,0,-1,-1,-1,,0,0,10,,sim,0,1000000000000000.001,"
               "1000000000000000.001\n# end: 1 row\n",
               ":3: column 'start_us'");
  struct ds_trace *t =
      expect_ok("# ddpsim-trace v2\n" HEADER "\n"
                "0,0,compute,fwd,a,0,-1,-1,-1,,0,0,10,,sim,0,0,1000000000000000.000\n"
                "# end: 1 row\n");
  cr_assert_eq(t->rows[0].end_ns, INT64_C(1000000000000000000));
  ds_trace_free(t);
}

/* Finding 4: a header with all 18 columns and then a 19th is refused at the
 * header line: an unknown name as unknown, a known one as a repeat (before,
 * the first was read, and the second blamed every data row's 19 fields). */
Test(trace_checks, a_column_after_the_eighteenth_is_refused) {
  expect_error("# ddpsim-trace v2\n" HEADER ",comment\n"
               "0,0,compute,fwd,a,0,-1,-1,-1,,0,0,10,,sim,0,0.000,10.000\n"
               "# end: 1 row\n",
               ":2: unknown column 'comment'; the header row of a ddpsim-trace v2 file "
               "names the columns id,rank,");
  expect_error("# ddpsim-trace v2\n" HEADER ",end_us\n"
               "0,0,compute,fwd,a,0,-1,-1,-1,,0,0,10,,sim,0,0.000,10.000,99.000\n"
               "# end: 1 row\n",
               ":2: column 'end_us' appears twice in the header");
}

/* Finding 5: a trace with rank 1 only (no rank 0) read as two ranks whose
 * rank 0 had no ops, and analyze printed its metrics as 0: refused at the
 * highest rank's line naming rank 0; ranks 0 and 2 without 1 name rank 1.
 * The schedule reader applies the same rule. */
Test(trace_checks, ranks_with_a_gap_are_refused) {
  expect_error("# ddpsim-trace v2\n" HEADER "\n"
               "0,1,compute,fwd,a,0,-1,-1,-1,,0,0,10,,sim,0,0.000,10.000\n"
               "1,1,compute,bwd,b,0,-1,-1,-1,,0,0,10,0,sim,0,10.000,20.000\n"
               "# end: 2 rows\n",
               ":3: column 'rank': rank 1, but no row has rank 0; ranks must be numbered "
               "0, 1, ... without gaps");
  expect_error("# ddpsim-trace v2\n" HEADER "\n"
               "0,0,compute,fwd,a,0,-1,-1,-1,,0,0,10,,sim,0,0.000,10.000\n"
               "0,2,compute,fwd,a,0,-1,-1,-1,,0,0,10,,sim,0,0.000,10.000\n"
               "0,2,compute,fwd,a,0,-1,-1,-1,,0,0,10,,sim,1,10.000,20.000\n"
               "# end: 3 rows\n",
               ":4: column 'rank': rank 2, but no row has rank 1");
  ds_trace_free(expect_ok("# ddpsim-trace v2\n" HEADER "\n"
                          "0,1,compute,fwd,a,0,-1,-1,-1,,0,0,10,,sim,0,0.000,10.000\n"
                          "0,0,compute,fwd,a,0,-1,-1,-1,,0,0,10,,sim,0,0.000,10.000\n"
                          "# end: 2 rows\n"));
  static const char sched[] =
      "# ddpsim-schedule v2\n"
      "id,rank,stream,kind,name,layer,bucket,coll,root,algo,bytes,flops,dur_us,deps\n"
      "0,1,compute,fwd,a,0,-1,-1,-1,,0,0,1,\n1,1,compute,fwd,b,0,-1,-1,-1,,0,0,1,\n"
      "# end: 2 rows\n";
  spit_n(sched, strlen(sched));
  struct ds_schedule *s = NULL;
  struct ds_err err = {0};
  cr_assert_eq(ds_schedule_read_csv(path, &s, &err), DS_EINPUT);
  cr_assert(strstr(err.msg, ":3: column 'rank': rank 1, but no row has rank 0"), "%s", err.msg);
}

/* Writes n bytes (NULs included) and expects the read to fail with
 * "PATH<want>". */
static void expect_error_n(const char *text, size_t n, const char *want) {
  spit_n(text, n);
  struct ds_trace *t = NULL;
  struct ds_err err = {0};
  cr_assert_eq(ds_trace_read_csv(path, &t, &err), DS_EINPUT, "want \"%s\": %s", want, err.msg);
  char full[512];
  snprintf(full, sizeof full, "%s%s", path, want);
  cr_assert(strstr(err.msg, full), "message \"%s\"\nlacks \"%s\"", err.msg, full);
}

#define ROW "0,0,compute,fwd,a,0,-1,-1,-1,,0,0,10,,sim,0,0.000,10.000\n"

/* Finding 8a: NUL bytes in the schema line, the end line, a provenance line
 * or a line of blanks are refused at their line (the C-string checks read
 * "# end: 1 row\0 and 5 more" as the end line). */
Test(trace_checks, nul_bytes_in_comment_lines_are_refused) {
  static const char schema[] = "# ddpsim-trace v2\0junk\n" HEADER "\n" ROW "# end: 1 row\n";
  expect_error_n(schema, sizeof schema - 1, ":1: a NUL byte in the schema line (byte 18)");
  static const char end[] = "# ddpsim-trace v2\n" HEADER "\n" ROW "# end: 1 row\0 and 5 more\n";
  expect_error_n(end, sizeof end - 1, ":4: a NUL byte in a comment line (byte 13)");
  static const char prov[] = "# ddpsim-trace v2\n# program: x\0y\n" HEADER "\n" ROW
                             "# end: 1 row\n";
  expect_error_n(prov, sizeof prov - 1, ":2: a NUL byte in a comment line (byte 13)");
  static const char blank[] = "# ddpsim-trace v2\n" HEADER "\n" ROW " \0\n# end: 1 row\n";
  expect_error_n(blank, sizeof blank - 1, ":4: field 1 contains a NUL byte");
}

/* Finding 8b: a subnormal double, which the writer prints (the shortest
 * round-trip form of the smallest one is 4.9406564584124654e-324), reads
 * back to the same double, and a number below every double (1e-400) reads
 * as the nearest, 0; only overflow (1e999) is refused, as not finite. */
Test(trace_checks, subnormal_numbers_read_back) {
  struct ds_trace *t = expect_ok(
      "# ddpsim-trace v2\n" HEADER "\n"
      "0,0,compute,fwd,a,0,-1,-1,-1,,1e-400,0,4.9406564584124654e-324,,sim,0,0.000,10.000\n"
      "# end: 1 row\n");
  cr_assert_eq(t->owned->ops[0].dur_us, 4.9406564584124654e-324);
  cr_assert_eq(t->owned->ops[0].bytes, 0.0);
  ds_trace_free(t);
  expect_error("# ddpsim-trace v2\n" HEADER "\n"
               "0,0,compute,fwd,a,0,-1,-1,-1,,1e999,0,1,,sim,0,0.000,10.000\n"
               "# end: 1 row\n",
               ":3: column 'bytes': expected a finite number >= 0, got \"1e999\"");
}

/* Finding 8c: a directory given as a trace cannot be read (EISDIR), and
 * says so, not that the file is empty. */
Test(trace_checks, a_directory_is_not_an_empty_file) {
  struct ds_trace *t = NULL;
  struct ds_err err = {0};
  ds_status st = ds_trace_read_csv(dir, &t, &err);
  cr_assert_neq(st, DS_OK);
  cr_assert_null(t);
  char want[128];
  snprintf(want, sizeof want, "%s: cannot read: Is a directory", dir);
  cr_assert_str_eq(err.msg, want);
}

/* Finding 8d: deps are ids separated by single spaces (SCHEMA.md's
 * contract, what the writer prints); runs of spaces and leading or trailing
 * ones were read. "0 1" is still read. (Blanks around an unquoted field are
 * libcsv's to trim, in every column: quoted, they reach the check.) */
Test(trace_checks, deps_are_separated_by_single_spaces) {
  static const char *const bad[] = {"0  1", "\" 0 1\"", "\"0 1 \"", "\" \""};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    char text[1024], want[256];
    snprintf(text, sizeof text,
             "# ddpsim-trace v2\n" HEADER "\n"
             "0,0,compute,fwd,a,0,-1,-1,-1,,0,0,10,,sim,0,0.000,10.000\n"
             "1,0,compute,fwd,b,0,-1,-1,-1,,0,0,10,,sim,0,10.000,20.000\n"
             "2,0,compute,fwd,c,0,-1,-1,-1,,0,0,10,%s,sim,0,20.000,30.000\n"
             "# end: 3 rows\n", bad[i]);
    char unquoted[16];
    size_t n = strlen(bad[i]);
    snprintf(unquoted, sizeof unquoted, "%.*s", (int)(bad[i][0] == '"' ? n - 2 : n),
             bad[i] + (bad[i][0] == '"'));
    snprintf(want, sizeof want,
             ":5: column 'deps': expected op ids (integers >= 0) separated by single "
             "spaces, got \"%s\"", unquoted);
    expect_error(text, want);
  }
  struct ds_trace *t = expect_ok("# ddpsim-trace v2\n" HEADER "\n"
                                 "0,0,compute,fwd,a,0,-1,-1,-1,,0,0,10,,sim,0,0.000,10.000\n"
                                 "1,0,compute,fwd,b,0,-1,-1,-1,,0,0,10,,sim,0,10.000,20.000\n"
                                 "2,0,compute,fwd,c,0,-1,-1,-1,,0,0,10,0 1,sim,0,20.000,30.000\n"
                                 "# end: 3 rows\n");
  cr_assert_eq(t->owned->ops[2].dep_count, 2);
  ds_trace_free(t);
}

/* Finding 8e (SCHEMA.md now states the reader's rule): a dependency on an id
 * the row's iteration lacks names the op of the iteration just before, on
 * any row of it, not only the first (here the second row of iteration 1
 * names iteration 0's op 5); an id of two iterations before is refused. */
Test(trace_checks, a_previous_iteration_dependency_on_any_row) {
  ds_trace_free(expect_ok("# ddpsim-trace v2\n" HEADER "\n"
                          "5,0,compute,step,s,0,-1,-1,-1,,0,0,10,,sim,0,0.000,10.000\n"
                          "6,0,compute,fwd,a,0,-1,-1,-1,,0,0,10,,sim,1,10.000,20.000\n"
                          "7,0,compute,fwd,b,0,-1,-1,-1,,0,0,10,5 6,sim,1,20.000,30.000\n"
                          "# end: 3 rows\n"));
  expect_error("# ddpsim-trace v2\n" HEADER "\n"
               "5,0,compute,step,s,0,-1,-1,-1,,0,0,10,,sim,0,0.000,10.000\n"
               "6,0,compute,fwd,a,0,-1,-1,-1,,0,0,10,,sim,1,10.000,20.000\n"
               "7,0,compute,fwd,b,0,-1,-1,-1,,0,0,10,5,sim,2,20.000,30.000\n"
               "# end: 3 rows\n",
               ":5: column 'deps': 5 names no op of rank 0 earlier in iteration 2 or in "
               "iteration 1");
}
