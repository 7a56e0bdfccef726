/*
 * Tests for the schedule and trace readers (traces/trace*.c): each kind of
 * malformed file (schema line, columns, kinds, numbers, times, quoting,
 * absurd ranks and buckets, trace keys, a missing file) is refused with a
 * "FILE:LINE: column ..." message and nothing returned. Files cut short:
 * test_trace.c.
 *
 * Every test works in its own fresh directory under /tmp
 * (tests/trace_files.h).
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "traces/trace.h"
#include "tests/trace_files.h"

/* A trace handed to the schedule reader (and the reverse) is refused on
 * line 1 with the kind of file it is, so the user sees the mix-up. */
Test(trace, reader_wrong_schema_kind) {
  expect_read_error(0, "# ddpsim-trace v2\n" TRACE_HEADER,
                    ":1: this is a ddpsim-trace file, not a ddpsim-schedule file");
  expect_read_error(1, "# ddpsim-schedule v2\n" SCHED_HEADER,
                    ":1: this is a ddpsim-schedule file, not a ddpsim-trace file");
}

/* A later version may change meanings, so version 3 is refused by name;
 * version 1, which had no end line, says how to get a version 2 file. */
Test(trace, reader_wrong_version) {
  expect_read_error(0, "# ddpsim-schedule v3\n" SCHED_HEADER,
                    ":1: ddpsim-schedule version 3 is not supported; this "
                    "ddpsim reads version 2");
  expect_read_error(1, "# ddpsim-trace v1\n" TRACE_HEADER,
                    ":1: ddpsim-trace version 1 is not read any more: it has no end "
                    "line, so a copy cut short cannot be told from a whole one; write "
                    "it again with this ddpsim or ddpreal (or, when you know it is "
                    "whole, change this line to \"# ddpsim-trace v2\" and add \"# end: "
                    "N rows\" after its N rows)");
}

/* A file without the schema line (or an empty one) is refused on line 1. */
Test(trace, reader_missing_schema_line) {
  expect_read_error(0, SCHED_HEADER,
                    ":1: expected the schema line \"# ddpsim-schedule v2\", got "
                    "\"id,rank,");
  expect_read_error(0, "", ":1: the file is empty");
}

/* Every column is required; the first missing one is named. */
Test(trace, reader_missing_column) {
  expect_read_error(0,
                    "# ddpsim-schedule v2\n# seed: 1\n"
                    "id,rank,stream,kind,name,layer,bucket,coll,root,algo,bytes,"
                    "flops,dur_us\n",
                    ":3: missing column 'deps'");
  /* A trace missing its four extra columns names the first of them. */
  expect_read_error(1, "# ddpsim-trace v2\n" SCHED_HEADER,
                    ":2: missing column 'source'");
}

/* Unknown and repeated columns are errors that name the column: silently
 * ignoring one would hide a typo or a newer schema. */
Test(trace, reader_unknown_column) {
  expect_read_error(0,
                    "# ddpsim-schedule v2\n"
                    "id,rank,stream,kind,name,colour,layer,bucket,coll,root,"
                    "algo,bytes,flops,dur_us,deps\n",
                    ":2: unknown column 'colour'");
  expect_read_error(0,
                    "# ddpsim-schedule v2\n"
                    "id,rank,stream,kind,name,layer,bucket,coll,root,algo,bytes,"
                    "flops,dur_us,deps,id\n",
                    ":2: column 'id' appears twice");
  expect_read_error(0, "# ddpsim-schedule v2\n" TRACE_HEADER,
                    ":2: unknown column 'source'");
}

/* A kind outside the list is refused with the list of accepted names. */
Test(trace, reader_bad_kind) {
  expect_read_error(0,
                    "# ddpsim-schedule v2\n" SCHED_HEADER
                    "0,0,compute,fwd,a,0,-1,-1,-1,,0,0,1,\n"
                    "1,0,compute,forward,a,0,-1,-1,-1,,0,0,1,0\n",
                    ":4: column 'kind': expected one of fwd, bwd, loss, step, "
                    "allreduce");
  expect_read_error(0,
                    "# ddpsim-schedule v2\n" SCHED_HEADER
                    "0,0,gpu,fwd,a,0,-1,-1,-1,,0,0,1,\n",
                    ":3: column 'stream': expected one of compute, comm, copy "
                    "or host, got \"gpu\"");
}

/* Numbers are checked in full: trailing junk, negatives, inf/nan, overflow,
 * and malformed id lists are all refused with the column and the text. */
Test(trace, reader_bad_numbers) {
  const char *pre = "# ddpsim-schedule v2\n" SCHED_HEADER;
  char text[512];
  struct {
    const char *row, *want;
  } cases[] = {
      {"0,0,compute,fwd,a,0,-1,-1,-1,,12x,0,1,\n",
       ":3: column 'bytes': expected a finite number >= 0, got \"12x\""},
      {"0,0,compute,fwd,a,0,-1,-1,-1,,-5,0,1,\n", ":3: column 'bytes'"},
      {"0,0,compute,fwd,a,0,-1,-1,-1,,0,inf,1,\n", ":3: column 'flops'"},
      {"0,0,compute,fwd,a,0,-1,-1,-1,,0,0,nan,\n", ":3: column 'dur_us'"},
      {"0,0,compute,fwd,a,0,-1,-1,-1,,0,0,1e999,\n", ":3: column 'dur_us'"},
      {"x,0,compute,fwd,a,0,-1,-1,-1,,0,0,1,\n",
       ":3: column 'id': expected an integer >= 0, got \"x\""},
      {"99999999999999999999,0,compute,fwd,a,0,-1,-1,-1,,0,0,1,\n",
       ":3: column 'id'"},
      {"0,-1,compute,fwd,a,0,-1,-1,-1,,0,0,1,\n", ":3: column 'rank'"},
      {"0,0,compute,fwd,a,-2,-1,-1,-1,,0,0,1,\n",
       ":3: column 'layer': expected an integer >= -1"},
      {"0,0,compute,fwd,a,0,1.5,-1,-1,,0,0,1,\n", ":3: column 'bucket'"},
      {"0,0,compute,fwd,a,0,-1,-1,-1,,0,0,1,1;2\n",
       ":3: column 'deps': expected op ids (integers >= 0) separated by single spaces, "
       "got \"1;2\""},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    snprintf(text, sizeof text, "%s%s", pre, cases[i].row);
    expect_read_error(0, text, cases[i].want);
  }
}

/* dur_us past the longest simulated time (DS_UNITS_NS_MAX, 1e18 ns = 1e15
 * us: no schedule ddpsim ran holds more) is refused at its line and column:
 * ddpreal's devices turn it into int64_t nanoseconds with llround, which is
 * out of range (LLONG_MIN on glibc) above ~9.2e15 us. 1e15 itself is
 * accepted (the bound is inclusive), 1.000001e15 and 1e300 are not; the old
 * reader took any finite number. Both readers (schedule and trace). */
Test(trace, reader_dur_us_past_the_longest_time) {
  const char *pre = "# ddpsim-schedule v2\n" SCHED_HEADER;
  const char *bad[] = {"1e300", "1.000001e15"};
  char text[512];
  for (size_t i = 0; i < 2; i++) {
    snprintf(text, sizeof text, "%s0,0,compute,fwd,a,0,-1,-1,-1,,0,0,%s,\n# end: 1 row\n", pre,
             bad[i]);
    char want[128];
    snprintf(want, sizeof want,
             ":3: column 'dur_us': expected microseconds >= 0 and at most 1e15 (1e18 ns, "
             "the longest simulated time), got \"%s\"", bad[i]);
    expect_read_error(0, text, want);
  }
  expect_read_error(1,
                    "# ddpsim-trace v2\n" TRACE_HEADER
                    "0,0,compute,fwd,a,0,-1,-1,-1,,0,0,1e300,,real,0,0,1\n# end: 1 row\n",
                    ":3: column 'dur_us'");
  const char *path = in_dir("longest.csv");
  spit(path, "# ddpsim-schedule v2\n" SCHED_HEADER
             "0,0,compute,fwd,a,0,-1,-1,-1,,0,0,1e15,\n# end: 1 row\n");
  struct ds_schedule *s = NULL;
  struct ds_err err = {0};
  cr_assert_eq(ds_schedule_read_csv(path, &s, &err), DS_OK, "%s", err.msg);
  cr_assert_float_eq(s->ops[0].dur_us, 1e15, 1);
  ds_schedule_free(s);
}

/* A row with a field missing (or one too many) is refused naming its line;
 * the line counts blank lines and line breaks inside quoted names, so the
 * number is the one an editor shows. */
Test(trace, reader_short_row) {
  expect_read_error(0,
                    "# ddpsim-schedule v2\n" SCHED_HEADER
                    "0,0,compute,fwd,\"two\nlines\",0,-1,-1,-1,,0,0,1,\n"
                    "\n"
                    "1,0,compute,fwd,a,0,-1,-1,-1,,0,0,1\n",
                    ":6: expected 14 fields, got 13");
  expect_read_error(0,
                    "# ddpsim-schedule v2\n" SCHED_HEADER
                    "0,0,compute,fwd,a,0,-1,-1,-1,,0,0,1,,extra\n",
                    ":3: expected 14 fields, got 15");
}

/* An op cannot end before it starts; times need nanosecond resolution at
 * most, and a row may not change the trace's source. */
Test(trace, reader_bad_times) {
  expect_read_error(1,
                    "# ddpsim-trace v2\n" TRACE_HEADER
                    "0,0,compute,fwd,a,0,-1,-1,-1,,0,0,1,,sim,0,10.000,9.999\n",
                    ":3: column 'end_us': expected a time >= start_us (10.000), "
                    "got \"9.999\"");
  expect_read_error(1,
                    "# ddpsim-trace v2\n" TRACE_HEADER
                    "0,0,compute,fwd,a,0,-1,-1,-1,,0,0,1,,sim,0,1.0001,2\n",
                    ":3: column 'start_us': expected microseconds >= 0 with at "
                    "most 3 decimals, at most 1e15 (1e18 ns, the longest simulated "
                    "time), got \"1.0001\"");
  expect_read_error(1,
                    "# ddpsim-trace v2\n" TRACE_HEADER
                    "0,0,compute,fwd,a,0,-1,-1,-1,,0,0,1,,sim,0,-1,2\n",
                    ":3: column 'start_us'");
  expect_read_error(1,
                    "# ddpsim-trace v2\n" TRACE_HEADER
                    "0,0,compute,fwd,a,0,-1,-1,-1,,0,0,1,,sim,0,1,2\n"
                    "1,0,compute,fwd,a,0,-1,-1,-1,,0,0,1,,real,0,1,2\n",
                    ":4: column 'source': expected \"sim\" like the rows before "
                    "it, got \"real\"");
  expect_read_error(1,
                    "# ddpsim-trace v2\n" TRACE_HEADER
                    "0,0,compute,fwd,a,0,-1,-1,-1,,0,0,1,,gpu,0,1,2\n",
                    ":3: column 'source': expected sim or real");
}

/* Comments are provenance and belong before the header; a stray quote is a
 * CSV syntax error on its line. */
Test(trace, reader_comment_after_header_and_bad_quotes) {
  expect_read_error(0,
                    "# ddpsim-schedule v2\n" SCHED_HEADER
                    "0,0,compute,fwd,a,0,-1,-1,-1,,0,0,1,\n# late\n",
                    ":4: comment lines are allowed only before the header row");
  expect_read_error(0,
                    "# ddpsim-schedule v2\n" SCHED_HEADER
                    "0,0,compute,fwd,a\"b,0,-1,-1,-1,,0,0,1,\n",
                    ":3: malformed CSV");
  expect_read_error(0,
                    "# ddpsim-schedule v2\n" SCHED_HEADER
                    "0,0,compute,fwd,\"open,0,-1,-1,-1,,0,0,1,\n",
                    ":3: malformed CSV: a quoted field is not closed");
}

/* The schedule reader validates: a dependency on another rank's op is
 * reported with the file name and the op id. */
Test(trace, schedule_reader_validates) {
  expect_read_error(0,
                    "# ddpsim-schedule v2\n" SCHED_HEADER
                    "0,0,compute,fwd,a,0,-1,-1,-1,,0,0,1,\n"
                    "1,1,compute,fwd,a,0,-1,-1,-1,,0,0,1,0\n# end: 2 rows\n",
                    ":4: op 1: dependency 0 is not an op of rank 1 that comes "
                    "earlier (it is on rank 0)");
}

/* A validation error names the line of the op's row, not only its id
 * (issue #15, defect 10): here the second row, line 4, repeats id 0. */
Test(trace, schedule_validation_errors_name_the_line) {
  expect_read_error(0,
                    "# ddpsim-schedule v2\n" SCHED_HEADER
                    "0,0,compute,fwd,a,0,-1,-1,-1,,0,0,1,\n"
                    "0,0,compute,fwd,b,0,-1,-1,-1,,0,0,1,\n# end: 2 rows\n",
                    ":4: op 0: id is used twice");
}

/* A rank no smaller than the number of rows cannot be dense; it used to
 * size every per-rank array (rank 49,999,999 cost `ddpsim analyze` 5 GB).
 * Refused at its line in both readers (issue #15, defect 7). */
Test(trace, an_absurd_rank_is_refused_at_its_line) {
  expect_read_error(0,
                    "# ddpsim-schedule v2\n" SCHED_HEADER
                    "0,0,compute,fwd,a,0,-1,-1,-1,,0,0,1,\n"
                    "1,49999999,compute,fwd,b,0,-1,-1,-1,,0,0,1,\n# end: 2 rows\n",
                    ":4: column 'rank': rank 49999999 in a file of 2 rows");
  expect_read_error(1,
                    "# ddpsim-trace v2\n" TRACE_HEADER
                    "0,49999999,compute,fwd,a,0,-1,-1,-1,,0,0,1,,real,0,0,1\n# end: 1 row\n",
                    ":3: column 'rank': rank 49999999 in a file of 1 rows");
}

/* Bucket numbers size `ddpsim analyze`'s per-bucket spans the same way:
 * one allreduce row naming bucket 100,000,000 cost 1.3 s and 4 GB of
 * address space, and bucket 2,000,000,000 silently dropped every bucket
 * metric (the allocation failed). Refused at its line in both readers. */
Test(trace, an_absurd_bucket_is_refused_at_its_line) {
  expect_read_error(0,
                    "# ddpsim-schedule v2\n" SCHED_HEADER
                    "0,0,comm,allreduce,b,-1,0,0,-1,ring,8,0,1,\n"
                    "1,0,comm,allreduce,b,-1,2,1,-1,ring,8,0,1,0\n# end: 2 rows\n",
                    ":4: column 'bucket': bucket 2 in a file of 2 rows");
  expect_read_error(1,
                    "# ddpsim-trace v2\n" TRACE_HEADER
                    "0,0,comm,allreduce,bucket0,-1,2000000000,0,-1,ring,1000,0,10,,sim,0,0,10\n"
                    "# end: 1 row\n",
                    ":3: column 'bucket': bucket 2000000000 in a file of 1 rows; a bucket "
                    "number must be below the number of rows");
}

/* (iter, rank, id) is the join key analyze matches two traces on, so it
 * names one row; a dependency names an op of its rank earlier in the file
 * in its iteration, or one of the iteration before (iteration 1's first op
 * may name iteration 0's last step: traces/SCHEMA.md). */
Test(trace, a_trace_key_names_one_op_and_deps_resolve) {
  const char *path = in_dir("keys.csv");
  spit(path,
       "# ddpsim-trace v2\n" TRACE_HEADER
       "5,0,compute,fwd,a,0,-1,-1,-1,,0,0,1,,sim,0,0,1\n"
       "6,0,compute,fwd,b,0,-1,-1,-1,,0,0,1,5,sim,0,1,2\n"
       "7,1,compute,fwd,a,0,-1,-1,-1,,0,0,1,,sim,0,0,1\n"
       "1,0,compute,fwd,a,0,-1,-1,-1,,0,0,1,6,sim,1,2,3\n"
       "5,0,compute,fwd,a,0,-1,-1,-1,,0,0,1,1,sim,1,3,4\n# end: 5 rows\n");
  struct ds_trace *t = NULL;
  struct ds_err err = {0};
  cr_assert_eq(ds_trace_read_csv(path, &t, &err), DS_OK, "%s", err.msg);
  ds_trace_free(t);
  expect_read_error(1,
                    "# ddpsim-trace v2\n" TRACE_HEADER
                    "5,0,compute,fwd,a,0,-1,-1,-1,,0,0,1,,sim,0,0,1\n"
                    "6,0,compute,fwd,b,0,-1,-1,-1,,0,0,1,,sim,0,1,2\n"
                    "5,0,compute,bwd,a,0,-1,-1,-1,,0,0,1,,sim,0,2,3\n# end: 3 rows\n",
                    ":5: column 'id': op 5 of rank 0 in iteration 0 appears twice; (iter, "
                    "rank, id) names one op (first at line 3)");
  expect_read_error(1,
                    "# ddpsim-trace v2\n" TRACE_HEADER
                    "5,0,compute,fwd,a,0,-1,-1,-1,,0,0,1,,sim,0,0,1\n"
                    "6,0,compute,fwd,b,0,-1,-1,-1,,0,0,1,999,sim,0,1,2\n# end: 2 rows\n",
                    ":4: column 'deps': 999 names no op of rank 0 earlier in iteration 0");
  /* another rank's op does not count, */
  expect_read_error(1,
                    "# ddpsim-trace v2\n" TRACE_HEADER
                    "5,0,compute,fwd,a,0,-1,-1,-1,,0,0,1,,sim,0,0,1\n"
                    "6,1,compute,fwd,b,0,-1,-1,-1,,0,0,1,5,sim,0,1,2\n# end: 2 rows\n",
                    ":4: column 'deps': 5 names no op of rank 1 earlier in iteration 0");
  /* nor a later iteration's, */
  expect_read_error(1,
                    "# ddpsim-trace v2\n" TRACE_HEADER
                    "6,0,compute,fwd,b,0,-1,-1,-1,,0,0,1,5,sim,0,0,1\n"
                    "5,0,compute,fwd,a,0,-1,-1,-1,,0,0,1,,sim,1,1,2\n# end: 2 rows\n",
                    ":3: column 'deps': 5 names no op of rank 0 earlier in iteration 0");
  /* nor one later in the file (itself included), */
  expect_read_error(1,
                    "# ddpsim-trace v2\n" TRACE_HEADER
                    "5,0,compute,fwd,a,0,-1,-1,-1,,0,0,1,6,sim,0,0,1\n"
                    "6,0,compute,fwd,b,0,-1,-1,-1,,0,0,1,,sim,0,1,2\n# end: 2 rows\n",
                    ":3: column 'deps': 6 names no op of rank 0 earlier in iteration 0");
  expect_read_error(1,
                    "# ddpsim-trace v2\n" TRACE_HEADER
                    "5,0,compute,fwd,a,0,-1,-1,-1,,0,0,1,5,sim,0,0,1\n# end: 1 row\n",
                    ":3: column 'deps': 5 names no op of rank 0 earlier in iteration 0");
  /* in a later iteration too, where the id is also the iteration before's
   * (ids repeat): itself and a later row stay refused */
  expect_read_error(1,
                    "# ddpsim-trace v2\n" TRACE_HEADER
                    "5,0,compute,fwd,a,0,-1,-1,-1,,0,0,1,,sim,0,0,1\n"
                    "6,0,compute,fwd,b,0,-1,-1,-1,,0,0,1,5,sim,0,1,2\n"
                    "5,0,compute,fwd,a,0,-1,-1,-1,,0,0,1,5,sim,1,2,3\n"
                    "6,0,compute,fwd,b,0,-1,-1,-1,,0,0,1,5,sim,1,3,4\n# end: 4 rows\n",
                    ":5: column 'deps': 5 names no op of rank 0 earlier in iteration 1");
  expect_read_error(1,
                    "# ddpsim-trace v2\n" TRACE_HEADER
                    "5,0,compute,fwd,a,0,-1,-1,-1,,0,0,1,,sim,0,0,1\n"
                    "6,0,compute,fwd,b,0,-1,-1,-1,,0,0,1,5,sim,0,1,2\n"
                    "5,0,compute,fwd,a,0,-1,-1,-1,,0,0,1,6,sim,1,2,3\n"
                    "6,0,compute,fwd,b,0,-1,-1,-1,,0,0,1,5,sim,1,3,4\n# end: 4 rows\n",
                    ":5: column 'deps': 6 names no op of rank 0 earlier in iteration 1");
  /* nor an iteration's older than the one before: a dangling id of
   * iteration 2 does not resolve in iteration 0 */
  expect_read_error(1,
                    "# ddpsim-trace v2\n" TRACE_HEADER
                    "6,0,compute,fwd,b,0,-1,-1,-1,,0,0,1,,sim,0,0,1\n"
                    "5,0,compute,fwd,a,0,-1,-1,-1,,0,0,1,,sim,1,1,2\n"
                    "5,0,compute,fwd,a,0,-1,-1,-1,,0,0,1,6,sim,2,2,3\n# end: 3 rows\n",
                    ":5: column 'deps': 6 names no op of rank 0 earlier in iteration 2 or in "
                    "iteration 1");
}

/* A file that does not exist is an I/O error naming it. */
Test(trace, reader_missing_file) {
  struct ds_schedule *s = NULL;
  struct ds_err err = {0};
  cr_assert_eq(ds_schedule_read_csv(in_dir("nope.csv"), &s, &err), DS_EIO);
  cr_assert(strstr(err.msg, "nope.csv: cannot open"), "%s", err.msg);
}
