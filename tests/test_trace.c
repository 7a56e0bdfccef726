/*
 * Tests for traces/trace*.c and base/atomic_file.c: schedule and trace
 * files round-trip every field exactly, start with the schema and
 * provenance lines, readers refuse each kind of malformed file with a
 * "FILE:LINE: column ..." message, and writes are atomic.
 *
 * Every test works in its own fresh directory under /tmp.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/atomic_file.h"
#include "traces/trace.h"

static char dir[64];

static void make_dir(void) {
  strcpy(dir, "/tmp/ds_test_trace_XXXXXX");
  cr_assert_not_null(mkdtemp(dir));
}

/* Removes the files in dir (no subdirectories are created), then dir. */
static void remove_dir(void) {
  DIR *d = opendir(dir);
  if (!d) return;
  struct dirent *e;
  char p[512];
  while ((e = readdir(d))) {
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
    snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
    if (unlink(p) != 0) rmdir(p);
  }
  closedir(d);
  rmdir(dir);
}

TestSuite(trace, .init = make_dir, .fini = remove_dir);

static const char *in_dir(const char *name) {
  static char p[4][512];
  static int k;
  k = (k + 1) % 4;
  snprintf(p[k], sizeof p[k], "%s/%s", dir, name);
  return p[k];
}

static char *slurp(const char *path) {
  FILE *fp = fopen(path, "r");
  cr_assert_not_null(fp, "cannot open %s", path);
  static char buf[1 << 16];
  size_t n = fread(buf, 1, sizeof buf - 1, fp);
  buf[n] = '\0';
  fclose(fp);
  return buf;
}

static void spit(const char *path, const char *text) {
  FILE *fp = fopen(path, "w");
  cr_assert_not_null(fp);
  fputs(text, fp);
  fclose(fp);
}

static int count_files(void) {
  DIR *d = opendir(dir);
  cr_assert_not_null(d);
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d)))
    n += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
  closedir(d);
  return n;
}

/* A small two-rank schedule exercising every column: awkward names (comma,
 * quote, leading blank, line break), bytes of 25 MiB, doubles that need 17
 * digits, several dependencies. */
static struct ds_schedule *sample_schedule(void) {
  struct ds_schedule *s;
  cr_assert_eq(ds_schedule_new(2, &s), DS_OK);
  for (int32_t r = 0; r < 2; r++) {
    int64_t b = 100 * r;
    struct ds_op fwd = {.id = b, .rank = r, .stream = DS_STREAM_COMPUTE,
                        .kind = DS_OP_FWD, .name = "conv1,\"a\" b", .layer = 0,
                        .bucket = -1, .coll = -1, .root = -1, .algo = "",
                        .bytes = 0, .flops = 1.5e12, .dur_us = 1.0 / 3.0};
    struct ds_op bwd = fwd;
    bwd.id = b + 1;
    bwd.kind = DS_OP_BWD;
    bwd.name = " lead and\nbreak ";
    bwd.layer = 7;
    bwd.flops = 3e12;
    bwd.dur_us = 0.1;
    struct ds_op ar = {.id = b + 2, .rank = r, .stream = DS_STREAM_COMM,
                       .kind = DS_OP_ALLREDUCE, .name = "bucket0", .layer = -1,
                       .bucket = 0, .coll = 5, .root = -1, .algo = "ring",
                       .bytes = 26214400, .flops = 0, .dur_us = 1234.5678};
    struct ds_op bc = ar;
    bc.id = b + 3;
    bc.kind = DS_OP_BROADCAST;
    bc.coll = 6;
    bc.root = 1;
    bc.bytes = 0.1 + 0.2; /* 0.30000000000000004: needs 17 digits */
    bc.dur_us = 1e-7;
    cr_assert_eq(ds_schedule_add(s, &fwd, NULL, 0, NULL), DS_OK);
    cr_assert_eq(ds_schedule_add(s, &bwd, (int64_t[]){b}, 1, NULL), DS_OK);
    cr_assert_eq(ds_schedule_add(s, &ar, (int64_t[]){b, b + 1}, 2, NULL), DS_OK);
    cr_assert_eq(ds_schedule_add(s, &bc, (int64_t[]){b + 2}, 1, NULL), DS_OK);
  }
  struct ds_err err = {0};
  cr_assert_eq(ds_schedule_validate(s, &err), DS_OK, "%s", err.msg);
  return s;
}

/* Compares two ops field by field, with == on doubles: round trips must be
 * exact, not approximately right. */
static void assert_same_op(const struct ds_schedule *sa, const struct ds_op *a,
                           const struct ds_schedule *sb, const struct ds_op *b) {
  cr_assert_eq(a->id, b->id);
  cr_assert_eq(a->rank, b->rank);
  cr_assert_eq(a->stream, b->stream);
  cr_assert_eq(a->kind, b->kind);
  cr_assert_str_eq(a->name, b->name);
  cr_assert_eq(a->layer, b->layer);
  cr_assert_eq(a->bucket, b->bucket);
  cr_assert_eq(a->coll, b->coll);
  cr_assert_eq(a->root, b->root);
  cr_assert_str_eq(a->algo, b->algo);
  cr_assert(a->bytes == b->bytes, "bytes %.17g vs %.17g", a->bytes, b->bytes);
  cr_assert(a->flops == b->flops, "flops %.17g vs %.17g", a->flops, b->flops);
  cr_assert(a->dur_us == b->dur_us, "dur_us %.17g vs %.17g", a->dur_us, b->dur_us);
  cr_assert_eq(a->dep_count, b->dep_count);
  for (uint32_t k = 0; k < a->dep_count; k++)
    cr_assert_eq(ds_schedule_deps(sa, a)[k], ds_schedule_deps(sb, b)[k]);
}

static const struct ds_csv_meta meta = {"ddpsim 0.1.0",
                                        "topo=tiny.yaml bucket_mb=25", 42, NULL, 0};

/* Writing then reading a schedule gives back every op with every field
 * identical, the world size, and the names with commas, quotes, blanks and
 * line breaks unchanged. */
Test(trace, schedule_round_trip) {
  struct ds_schedule *s = sample_schedule(), *back = NULL;
  struct ds_err err = {0};
  const char *path = in_dir("sched.csv");
  cr_assert_eq(ds_schedule_write_csv(path, s, &meta, &err), DS_OK, "%s", err.msg);
  cr_assert_eq(ds_schedule_read_csv(path, &back, &err), DS_OK, "%s", err.msg);
  cr_assert_eq(back->world_size, 2);
  cr_assert_eq(back->n_ops, s->n_ops);
  for (size_t i = 0; i < s->n_ops; i++)
    assert_same_op(s, &s->ops[i], back, &back->ops[i]);
  cr_assert_str_eq(back->ops[0].name, "conv1,\"a\" b");
  cr_assert_str_eq(back->ops[1].name, " lead and\nbreak ");
  cr_assert(back->ops[2].bytes == 26214400.0);
  ds_schedule_free(s);
  ds_schedule_free(back);
}

/* The file opens with the schema line, then program, inputs and seed, then
 * the header row with every column in the documented order; 25 MiB is
 * printed as the integer 26214400 and awkward names are quoted. */
Test(trace, schedule_file_layout) {
  struct ds_schedule *s = sample_schedule();
  struct ds_err err = {0};
  const char *path = in_dir("sched.csv");
  cr_assert_eq(ds_schedule_write_csv(path, s, &meta, &err), DS_OK, "%s", err.msg);
  const char *text = slurp(path);
  const char *head =
      "# ddpsim-schedule v2\n"
      "# program: ddpsim 0.1.0\n"
      "# inputs: topo=tiny.yaml bucket_mb=25\n"
      "# seed: 42\n"
      "id,rank,stream,kind,name,layer,bucket,coll,root,algo,bytes,flops,dur_us,deps\n"
      "0,0,compute,fwd,\"conv1,\"\"a\"\" b\",0,-1,-1,-1,,0,1500000000000,"
      "0.3333333333333333,\n"; /* 16 digits suffice for 1/3 */
  cr_assert_eq(strncmp(text, head, strlen(head)), 0, "file starts:\n%s", text);
  cr_assert(strstr(text, "\n2,0,comm,allreduce,bucket0,-1,0,5,-1,ring,26214400,0,"
                         "1234.5678,0 1\n"),
            "%s", text);
  cr_assert(strstr(text, ",0.30000000000000004,"), "%s", text);
  ds_schedule_free(s);
}

/* Meta fields left NULL are omitted; a NULL meta writes only the schema
 * line before the header. Line breaks in the inputs cannot end the comment. */
Test(trace, meta_lines_optional) {
  struct ds_schedule *s;
  cr_assert_eq(ds_schedule_new(1, &s), DS_OK);
  struct ds_err err = {0};
  struct ds_csv_meta m = {NULL, "a\nb", 7, NULL, 0};
  cr_assert_eq(ds_schedule_write_csv(in_dir("a.csv"), s, &m, &err), DS_OK);
  cr_assert_str_eq(slurp(in_dir("a.csv")),
                   "# ddpsim-schedule v2\n# inputs: a b\n# seed: 7\n"
                   "id,rank,stream,kind,name,layer,bucket,coll,root,algo,"
                   "bytes,flops,dur_us,deps\n# end: 0 rows\n");
  cr_assert_eq(ds_schedule_write_csv(in_dir("b.csv"), s, NULL, &err), DS_OK);
  cr_assert_eq(strncmp(slurp(in_dir("b.csv")), "# ddpsim-schedule v2\nid,", 24), 0);
  /* An empty schedule reads back as an empty, valid one-rank schedule. */
  struct ds_schedule *back;
  cr_assert_eq(ds_schedule_read_csv(in_dir("a.csv"), &back, &err), DS_OK, "%s",
               err.msg);
  cr_assert_eq(back->n_ops, 0);
  cr_assert_eq(back->world_size, 1);
  ds_schedule_free(back);
  ds_schedule_free(s);
}

/* Extra provenance lines (ddpreal's device description) each become one `#`
 * line after the seed: "# " is added where missing, blank lines and CRs are
 * dropped, so the reader still finds the header row. */
Test(trace, meta_extra_lines) {
  struct ds_schedule *s;
  cr_assert_eq(ds_schedule_new(1, &s), DS_OK);
  struct ds_err err = {0};
  struct ds_csv_meta m = {"ddpreal 0.1.0", NULL, 0,
                          "# device: cpu\n\n  ranks: 2\r\n#launcher: mpi", 1};
  cr_assert_eq(ds_schedule_write_csv(in_dir("x.csv"), s, &m, &err), DS_OK);
  /* no_seed (ddpreal, which draws nothing): no "# seed" line */
  cr_assert_str_eq(slurp(in_dir("x.csv")),
                   "# ddpsim-schedule v2\n# program: ddpreal 0.1.0\n"
                   "# device: cpu\n# ranks: 2\n#launcher: mpi\n"
                   "id,rank,stream,kind,name,layer,bucket,coll,root,algo,"
                   "bytes,flops,dur_us,deps\n# end: 0 rows\n");
  struct ds_schedule *back;
  cr_assert_eq(ds_schedule_read_csv(in_dir("x.csv"), &back, &err), DS_OK, "%s",
               err.msg);
  ds_schedule_free(back);
  ds_schedule_free(s);
}

/* A trace whose rows point into two schedules (as sim/cli/run.c writes them)
 * reads back with one owned op per row, the same op fields, iterations and
 * exact nanosecond times: 123456789 ns is written "123456.789" and read
 * back as the integer 123456789, with no floating-point rounding. */
Test(trace, trace_round_trip) {
  struct ds_schedule *s = sample_schedule(), *s2 = sample_schedule();
  struct ds_trace *t, *back = NULL;
  cr_assert_eq(ds_trace_new("real", &t), DS_OK);
  int64_t starts[] = {0, 1, 999, 1000, 123456789, 9007199254740993};
  for (size_t i = 0; i < 6; i++) {
    /* rank 0's ops of s in iteration 0, then rank 1's first three of s2 in
     * iteration 1: every dependency is in the trace (trace_keys.h) */
    struct ds_trace_row row = {i < 3 ? s : s2, (uint32_t)(i < 3 ? i : i + 1),
                               (int32_t)(i / 3), starts[i], starts[i] + (int64_t)i * 7};
    cr_assert_eq(ds_trace_add(t, &row), DS_OK);
  }
  struct ds_err err = {0};
  const char *path = in_dir("trace.csv");
  cr_assert_eq(ds_trace_write_csv(path, t, &meta, &err), DS_OK, "%s", err.msg);
  const char *text = slurp(path);
  cr_assert_eq(strncmp(text, "# ddpsim-trace v2\n# program: ddpsim 0.1.0\n", 41), 0);
  cr_assert(strstr(text, ",deps,source,iter,start_us,end_us\n"), "%s", text);
  cr_assert(strstr(text, ",real,1,123456.789,123456.817\n"), "%s", text);
  cr_assert(strstr(text, ",real,0,0.001,0.008\n"), "%s", text);

  cr_assert_eq(ds_trace_read_csv(path, &back, &err), DS_OK, "%s", err.msg);
  cr_assert_str_eq(back->source, "real");
  cr_assert_eq(back->n_rows, 6);
  cr_assert_not_null(back->owned);
  cr_assert_eq(back->owned->n_ops, 6);
  cr_assert_eq(back->owned->world_size, 2);
  for (size_t i = 0; i < 6; i++) {
    const struct ds_trace_row *a = &t->rows[i], *b = &back->rows[i];
    cr_assert_eq(b->sched, back->owned);
    cr_assert_eq(b->op, i);
    cr_assert_eq(b->iter, a->iter);
    cr_assert_eq(b->start_ns, a->start_ns, "row %zu start %lld", i,
                 (long long)b->start_ns);
    cr_assert_eq(b->end_ns, a->end_ns);
    assert_same_op(a->sched, &a->sched->ops[a->op], b->sched, &b->sched->ops[b->op]);
  }
  ds_trace_free(t);
  ds_trace_free(back);
  ds_schedule_free(s);
  ds_schedule_free(s2);
}

/* Ids repeat across iterations in a trace (the join key is iter, rank,
 * id), so the reader must not refuse repeated ids. */
Test(trace, trace_ids_repeat_across_iterations) {
  const char *path = in_dir("t.csv");
  spit(path,
       "# ddpsim-trace v2\n"
       "iter,id,rank,stream,kind,name,layer,bucket,coll,root,algo,bytes,flops,"
       "dur_us,deps,source,start_us,end_us\n"
       "0,1,0,compute,fwd,l,0,-1,-1,-1,,0,0,1,,sim,0,1.5\n"
       "1,1,0,compute,fwd,l,0,-1,-1,-1,,0,0,1,,sim,2,3.25\n"
       "# end: 2 rows\n");
  struct ds_trace *t = NULL;
  struct ds_err err = {0};
  cr_assert_eq(ds_trace_read_csv(path, &t, &err), DS_OK, "%s", err.msg);
  cr_assert_eq(t->n_rows, 2);
  cr_assert_eq(t->rows[1].iter, 1);
  cr_assert_eq(t->rows[1].start_ns, 2000);
  cr_assert_eq(t->rows[1].end_ns, 3250, "fewer than 3 decimals are accepted");
  cr_assert_eq(t->owned->ops[1].id, 1);
  ds_trace_free(t);
}

#define SCHED_HEADER \
  "id,rank,stream,kind,name,layer,bucket,coll,root,algo,bytes,flops,dur_us,deps\n"
#define TRACE_HEADER                                                       \
  "id,rank,stream,kind,name,layer,bucket,coll,root,algo,bytes,flops,dur_us," \
  "deps,source,iter,start_us,end_us\n"

/* Writes text to a file, reads it as a schedule (or trace) and checks that
 * the read fails with DS_EINPUT and a message "PATH<want>". */
static void expect_read_error(int trace, const char *text, const char *want) {
  const char *path = in_dir("bad.csv");
  spit(path, text);
  struct ds_err err = {0};
  ds_status st;
  if (trace) {
    struct ds_trace *t = (struct ds_trace *)1;
    st = ds_trace_read_csv(path, &t, &err);
    cr_assert_eq(t, (struct ds_trace *)1, "no trace is returned on failure");
  } else {
    struct ds_schedule *s = (struct ds_schedule *)1;
    st = ds_schedule_read_csv(path, &s, &err);
    cr_assert_eq(s, (struct ds_schedule *)1, "no schedule is returned on failure");
  }
  cr_assert_eq(st, DS_EINPUT, "want failure \"%s\", got %d: %s", want, st, err.msg);
  char full[1024];
  snprintf(full, sizeof full, "%s%s", path, want);
  cr_assert(strstr(err.msg, full), "message \"%s\"\nlacks \"%s\"", err.msg, full);
}

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

/* Writing into a directory that does not exist fails with DS_EIO naming the
 * path, creates nothing (no temporary file anywhere in dir), and returns
 * before touching the data. */
Test(trace, atomic_write_into_missing_directory) {
  struct ds_schedule *s = sample_schedule();
  struct ds_err err = {0};
  const char *path = in_dir("missing/sched.csv");
  cr_assert_eq(ds_schedule_write_csv(path, s, &meta, &err), DS_EIO);
  cr_assert(strstr(err.msg, path), "%s", err.msg);
  cr_assert_eq(count_files(), 0);
  struct ds_trace *t;
  cr_assert_eq(ds_trace_new("sim", &t), DS_OK);
  cr_assert_eq(ds_trace_write_csv(path, t, &meta, &err), DS_EIO);
  cr_assert_eq(count_files(), 0);
  ds_trace_free(t);
  ds_schedule_free(s);
}

/* An existing target is replaced on success, and its permissions are the
 * usual 0644 less the umask, not mkstemp's 0600. */
Test(trace, atomic_replaces_on_success) {
  const char *path = in_dir("out.csv");
  spit(path, "old\n");
  struct ds_schedule *s = sample_schedule();
  struct ds_err err = {0};
  cr_assert_eq(ds_schedule_write_csv(path, s, &meta, &err), DS_OK, "%s", err.msg);
  cr_assert_eq(strncmp(slurp(path), "# ddpsim-schedule v2\n", 21), 0);
  cr_assert_eq(count_files(), 1, "no temporary file is left");
  mode_t mask = umask(022);
  umask(mask);
  struct stat st;
  cr_assert_eq(stat(path, &st), 0);
  cr_assert_eq(st.st_mode & 0777, 0644 & ~mask);
  ds_schedule_free(s);
}

/* abort removes the temporary file and leaves the old target as it was;
 * a second abort (or one after commit) does nothing. */
Test(trace, atomic_abort_keeps_old_target) {
  const char *path = in_dir("out.csv");
  spit(path, "old\n");
  struct ds_atomic_file af;
  struct ds_err err = {0};
  cr_assert_eq(ds_atomic_file_open(path, &af, &err), DS_OK, "%s", err.msg);
  cr_assert_eq(count_files(), 2, "the temporary file sits next to the target");
  cr_assert_eq(strncmp(af.tmp_path, path, strlen(path)), 0);
  fputs("new\n", af.fp);
  ds_atomic_file_abort(&af);
  ds_atomic_file_abort(&af);
  cr_assert_str_eq(slurp(path), "old\n");
  cr_assert_eq(count_files(), 1);
}

/* When the final rename fails (the target is a directory) commit reports
 * DS_EIO naming the path, removes the temporary file and leaves the target
 * alone. */
Test(trace, atomic_failed_commit_cleans_up) {
  const char *path = in_dir("target");
  struct ds_atomic_file af;
  struct ds_err err = {0};
  cr_assert_eq(ds_atomic_file_open(path, &af, &err), DS_OK, "%s", err.msg);
  /* Made after the open, which refuses a directory outright. */
  cr_assert_eq(mkdir(path, 0755), 0);
  fputs("data\n", af.fp);
  cr_assert_eq(ds_atomic_file_commit(&af, &err), DS_EIO);
  cr_assert(strstr(err.msg, path), "%s", err.msg);
  cr_assert(strstr(err.msg, "rename failed"), "%s", err.msg);
  cr_assert_null(af.fp, "commit always releases af");
  cr_assert_eq(count_files(), 1, "only the directory remains");
  struct stat st;
  cr_assert_eq(stat(path, &st), 0);
  cr_assert(S_ISDIR(st.st_mode));
}

/* "-" writes to standard output; commit only flushes. */
Test(trace, atomic_dash_is_stdout) {
  struct ds_atomic_file af;
  struct ds_err err = {0};
  cr_assert_eq(ds_atomic_file_open("-", &af, &err), DS_OK);
  cr_assert_eq(af.fp, stdout);
  cr_assert_null(af.tmp_path);
  cr_assert_eq(ds_atomic_file_commit(&af, &err), DS_OK);
  cr_assert_null(af.fp);
}

/* A trace row naming an op its schedule does not have is a bug in the
 * caller: refused before any file is created. */
Test(trace, trace_writer_checks_rows) {
  struct ds_schedule *s;
  cr_assert_eq(ds_schedule_new(1, &s), DS_OK);
  struct ds_trace *t;
  cr_assert_eq(ds_trace_new("sim", &t), DS_OK);
  struct ds_trace_row row = {s, 3, 0, 0, 1};
  cr_assert_eq(ds_trace_add(t, &row), DS_OK);
  struct ds_err err = {0};
  cr_assert_eq(ds_trace_write_csv(in_dir("t.csv"), t, NULL, &err), DS_EINTERNAL);
  cr_assert_eq(count_files(), 0);
  struct ds_trace *bad = NULL;
  cr_assert_eq(ds_trace_new("gpu", &bad), DS_EINTERNAL);
  ds_trace_free(t);
  ds_schedule_free(s);
}

Test(trace, a_detached_copy_is_the_trace_read_back) {
  /* ds_trace_detach copies rows that borrow two schedules into one the copy
   * owns, as the reader builds it: the same ops (deps included), times,
   * iterations and world size, and the same file when written; it outlives
   * the schedules it was copied from. */
  struct ds_schedule *s = sample_schedule(), *s2 = sample_schedule();
  struct ds_trace *t, *copy = NULL, *back = NULL;
  cr_assert_eq(ds_trace_new("sim", &t), DS_OK);
  for (size_t i = 0; i < 6; i++) {
    struct ds_trace_row row = {i < 3 ? s : s2, (uint32_t)(i < 3 ? i : i + 1),
                               (int32_t)(i / 3), (int64_t)i * 1000, (int64_t)i * 1000 + 7};
    cr_assert_eq(ds_trace_add(t, &row), DS_OK);
  }
  struct ds_err err = {0};
  const char *path = in_dir("orig.csv"), *path2 = in_dir("copy.csv");
  cr_assert_eq(ds_trace_write_csv(path, t, &meta, &err), DS_OK, "%s", err.msg);
  cr_assert_eq(ds_trace_read_csv(path, &back, &err), DS_OK, "%s", err.msg);
  cr_assert_eq(ds_trace_detach(t, &copy), DS_OK);
  ds_trace_free(t);
  ds_schedule_free(s);
  ds_schedule_free(s2);
  cr_assert_str_eq(copy->source, "sim");
  cr_assert_eq(copy->n_rows, 6);
  cr_assert_eq(copy->owned->world_size, back->owned->world_size);
  for (size_t i = 0; i < 6; i++) {
    const struct ds_trace_row *a = &copy->rows[i], *b = &back->rows[i];
    cr_assert_eq(a->sched, copy->owned);
    cr_assert_eq(a->iter, b->iter);
    cr_assert_eq(a->start_ns, b->start_ns);
    cr_assert_eq(a->end_ns, b->end_ns);
    assert_same_op(a->sched, &a->sched->ops[a->op], b->sched, &b->sched->ops[b->op]);
  }
  cr_assert_eq(ds_trace_write_csv(path2, copy, &meta, &err), DS_OK, "%s", err.msg);
  char *x = strdup(slurp(path)); /* slurp's buffer is static */
  cr_assert_str_eq(x, slurp(path2));
  free(x);
  unlink(path);
  unlink(path2);
  ds_trace_free(copy);
  ds_trace_free(back);
}

/* ---- files cut short or edited: the end line (SCHEMA.md, "The end line") */

/* The sample schedule (8 rows) as the writer writes it, in text (a copy:
 * slurp's buffer is static); the last line is "# end: 8 rows". */
static char *written_schedule(const char *name) {
  struct ds_schedule *s = sample_schedule();
  struct ds_err err = {0};
  cr_assert_eq(ds_schedule_write_csv(in_dir(name), s, &meta, &err), DS_OK, "%s", err.msg);
  ds_schedule_free(s);
  return strdup(slurp(in_dir(name)));
}

/* The byte offset just past the n-th line break of text. */
static size_t after_line(const char *text, int n) {
  const char *p = text;
  for (int k = 0; k < n; k++) {
    p = strchr(p, '\n');
    cr_assert_not_null(p, "fewer than %d lines", n);
    p++;
  }
  return (size_t)(p - text);
}

/* The writers end every file with "# end: N rows" after the N rows (1 row,
 * 0 rows), and the whole file reads back. The sample's 8 rows take lines 6
 * to 15 (two names hold a line break), so the end line is line 16. */
Test(trace, a_whole_file_ends_with_its_row_count) {
  char *text = written_schedule("s.csv");
  const char *tail = "\n# end: 8 rows\n";
  size_t len = strlen(text);
  cr_assert(len > strlen(tail) && strcmp(text + len - strlen(tail), tail) == 0, "%s", text);
  cr_assert_eq(after_line(text, 15) + strlen(tail) - 1, len);
  struct ds_schedule *back = NULL;
  struct ds_err err = {0};
  cr_assert_eq(ds_schedule_read_csv(in_dir("s.csv"), &back, &err), DS_OK, "%s", err.msg);
  cr_assert_eq(back->n_ops, 8);
  ds_schedule_free(back);

  struct ds_schedule *one;
  cr_assert_eq(ds_schedule_new(1, &one), DS_OK);
  struct ds_op op = {.id = 0, .rank = 0, .stream = DS_STREAM_COMPUTE, .kind = DS_OP_FWD,
                     .name = "a", .layer = 0, .bucket = -1, .coll = -1, .root = -1,
                     .algo = "", .dur_us = 1};
  cr_assert_eq(ds_schedule_add(one, &op, NULL, 0, NULL), DS_OK);
  struct ds_trace *t;
  cr_assert_eq(ds_trace_new("sim", &t), DS_OK);
  cr_assert_eq(ds_trace_write_csv(in_dir("t0.csv"), t, NULL, &err), DS_OK, "%s", err.msg);
  cr_assert(strstr(slurp(in_dir("t0.csv")), ",end_us\n# end: 0 rows\n"));
  struct ds_trace_row row = {one, 0, 0, 0, 1000};
  cr_assert_eq(ds_trace_add(t, &row), DS_OK);
  cr_assert_eq(ds_trace_write_csv(in_dir("t1.csv"), t, NULL, &err), DS_OK, "%s", err.msg);
  cr_assert(strstr(slurp(in_dir("t1.csv")), ",sim,0,0.000,1.000\n# end: 1 row\n"), "%s",
            slurp(in_dir("t1.csv")));
  struct ds_trace *tb = NULL;
  cr_assert_eq(ds_trace_read_csv(in_dir("t1.csv"), &tb, &err), DS_OK, "%s", err.msg);
  cr_assert_eq(tb->n_rows, 1);
  ds_trace_free(tb);
  ds_trace_free(t);
  ds_schedule_free(one);
  free(text);
}

/* Cut after a whole row (`head -n 10`: rank 0's 4 rows, lines 6 to 10):
 * every row parses, so only the missing end line tells; refused at the
 * last line. */
Test(trace, a_file_cut_after_a_row_is_refused) {
  char *text = written_schedule("s.csv");
  text[after_line(text, 10)] = '\0';
  expect_read_error(0, text,
                    ":10: the file ends without its end line \"# end: N rows\", which every "
                    "ddpsim-schedule v2 file has after its last row: it was cut short; "
                    "write it again");
  /* cut after the header row: no rows, no end line */
  text[after_line(text, 5)] = '\0';
  expect_read_error(0, text, ":5: the file ends without its end line");
  free(text);
}

/* Cut inside a row: "1000,0,compute,fwd,a" of a 14-field row is refused
 * at its line (too few fields) and the message says the file ends there;
 * cut inside the last field (deps "100 101" -> "100") the row parses, and
 * the missing end line is what is refused. */
Test(trace, a_file_cut_inside_a_row_is_refused) {
  char *text = written_schedule("s.csv");
  size_t row = after_line(text, 10); /* line 11: rank 1's fwd "100,1,compute,..." */
  text[row + strlen("100,1,compute,fwd")] = '\0';
  expect_read_error(0, text,
                    ":11: expected 14 fields, got 4 (the file ends there, without its end "
                    "line \"# end: N rows\": was it cut short?)");
  free(text);
  text = written_schedule("s.csv");
  char *cut = strstr(text + row, "1234.5678,100 101\n");
  cr_assert_not_null(cut);
  cut[strlen("1234.5678,100")] = '\0';
  expect_read_error(0, text, ":14: the file ends without its end line");
  /* a quoted name cut open: the row never ends */
  free(text);
  text = written_schedule("s.csv");
  text[row + strlen("100,1,compute,fwd,\"conv1")] = '\0';
  expect_read_error(0, text,
                    ":11: malformed CSV: a quoted field is not closed (the file ends there");
  free(text);
}

/* Rank 1's rows deleted (`grep -v` of them keeps the `#` lines): a valid
 * one-rank schedule, refused because the end line still counts 8 rows. */
Test(trace, a_file_that_lost_a_ranks_rows_is_refused) {
  char *text = written_schedule("s.csv");
  size_t from = after_line(text, 10), to = after_line(text, 15);
  memmove(text + from, text + to, strlen(text + to) + 1);
  cr_assert(strstr(text, "\n# end: 8 rows\n"));
  expect_read_error(0, text,
                    ":11: the end line counts 8 rows but the file has 4: rows were removed "
                    "or added after it was written; write it again");
  free(text);
}

/* An end line that counts wrong, one cut inside ("# end: 2 ro", "# end: 2
 * row": the plural follows the count, so no cut of an end line is another),
 * and anything after it (a second file appended, a row) are refused at
 * their lines; an end line without its final line break, with CRLF or with
 * extra blanks is whole. */
Test(trace, the_end_line_must_count_the_rows_and_be_last) {
  const char *pre = "# ddpsim-trace v2\n" TRACE_HEADER
                    "0,0,compute,fwd,a,0,-1,-1,-1,,0,0,1,,sim,0,0,1\n"
                    "1,0,compute,fwd,b,0,-1,-1,-1,,0,0,1,,sim,0,1,2\n";
  char text[1024];
  snprintf(text, sizeof text, "%s# end: 3 rows\n", pre);
  expect_read_error(1, text, ":5: the end line counts 3 rows but the file has 2");
  snprintf(text, sizeof text, "%s# end: 1 row\n", pre);
  expect_read_error(1, text, ":5: the end line counts 1 rows but the file has 2");
  snprintf(text, sizeof text, "%s# end: 2 ro", pre);
  expect_read_error(1, text,
                    ":5: expected the end line \"# end: N rows\" (\"# end: 1 row\" for "
                    "one), got \"# end: 2 ro\" (the file ends there");
  snprintf(text, sizeof text, "%s# end: 2", pre);
  expect_read_error(1, text, ":5: expected the end line \"# end: N rows\" (\"# end: 1 row\" "
                             "for one), got \"# end: 2\"");
  snprintf(text, sizeof text, "%s# end: 2 row\n", pre);
  expect_read_error(1, text, ":5: expected the end line");
  snprintf(text, sizeof text, "%s# end:", pre);
  expect_read_error(1, text, ":5: expected the end line");
  snprintf(text, sizeof text, "%s# en", pre);
  expect_read_error(1, text,
                    ":5: comment lines are allowed only before the header row (the file "
                    "ends there");
  snprintf(text, sizeof text, "%s# end: 2 rows\n%s# end: 2 rows\n", pre, pre);
  expect_read_error(1, text,
                    ":6: a line after the end line (line 5), got \"# ddpsim-trace v2\"; the "
                    "end line must be the file's last");
  snprintf(text, sizeof text,
           "%s# end: 2 rows\n\n2,0,compute,fwd,c,0,-1,-1,-1,,0,0,1,,sim,0,2,3\n", pre);
  expect_read_error(1, text, ":7: a row after the end line (line 5)");

  const char *whole[] = {"# end: 2 rows", "# end: 2 rows\r\n", "#end:2 rows \n\n",
                         "#  end:  2  rows\t\n"};
  for (size_t i = 0; i < sizeof whole / sizeof *whole; i++) {
    snprintf(text, sizeof text, "%s%s", pre, whole[i]);
    spit(in_dir("t.csv"), text);
    struct ds_trace *t = NULL;
    struct ds_err err = {0};
    cr_assert_eq(ds_trace_read_csv(in_dir("t.csv"), &t, &err), DS_OK, "\"%s\": %s",
                 whole[i], err.msg);
    cr_assert_eq(t->n_rows, 2);
    ds_trace_free(t);
  }
}

/* The invariant behind the cases above: every proper prefix of a written
 * schedule or trace (cut at any byte but the final line break) is refused
 * with DS_EINPUT and a message that begins "PATH:LINE: ". */
Test(trace, every_prefix_of_a_written_file_is_refused) {
  char *sched = written_schedule("s.csv");
  struct ds_schedule *s = sample_schedule();
  struct ds_trace *t;
  cr_assert_eq(ds_trace_new("real", &t), DS_OK);
  for (uint32_t i = 0; i < s->n_ops; i++) {
    struct ds_trace_row row = {s, i, (int32_t)(i % 2), 1000 * i, 1000 * i + 999};
    cr_assert_eq(ds_trace_add(t, &row), DS_OK);
  }
  struct ds_err err = {0};
  cr_assert_eq(ds_trace_write_csv(in_dir("t.csv"), t, &meta, &err), DS_OK, "%s", err.msg);
  char *trace = strdup(slurp(in_dir("t.csv")));
  ds_trace_free(t);
  ds_schedule_free(s);
  const char *path = in_dir("cut.csv");
  for (int is_trace = 0; is_trace < 2; is_trace++) {
    const char *whole = is_trace ? trace : sched;
    size_t len = strlen(whole);
    for (size_t n = 0; n + 1 < len; n++) {
      FILE *fp = fopen(path, "w");
      cr_assert_not_null(fp);
      fwrite(whole, 1, n, fp);
      fclose(fp);
      ds_status st;
      if (is_trace) {
        struct ds_trace *back = NULL;
        st = ds_trace_read_csv(path, &back, &err);
        ds_trace_free(back);
      } else {
        struct ds_schedule *back = NULL;
        st = ds_schedule_read_csv(path, &back, &err);
        ds_schedule_free(back);
      }
      cr_assert_eq(st, DS_EINPUT, "%s cut to %zu of %zu bytes was read",
                   is_trace ? "trace" : "schedule", n, len);
      char want[600];
      snprintf(want, sizeof want, "%s:", path);
      size_t w = strlen(want);
      cr_assert(strncmp(err.msg, want, w) == 0 && err.msg[w] >= '1' && err.msg[w] <= '9',
                "cut to %zu: %s", n, err.msg);
    }
  }
  free(sched);
  free(trace);
}
