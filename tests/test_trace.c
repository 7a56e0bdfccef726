/*
 * Tests for traces/trace.c and base/atomic_file.c: schedule and trace
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
                                        "topo=tiny.yaml bucket_mb=25", 42, NULL};

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
      "# ddpsim-schedule v1\n"
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
  struct ds_csv_meta m = {NULL, "a\nb", 7, NULL};
  cr_assert_eq(ds_schedule_write_csv(in_dir("a.csv"), s, &m, &err), DS_OK);
  cr_assert_str_eq(slurp(in_dir("a.csv")),
                   "# ddpsim-schedule v1\n# inputs: a b\n# seed: 7\n"
                   "id,rank,stream,kind,name,layer,bucket,coll,root,algo,"
                   "bytes,flops,dur_us,deps\n");
  cr_assert_eq(ds_schedule_write_csv(in_dir("b.csv"), s, NULL, &err), DS_OK);
  cr_assert_eq(strncmp(slurp(in_dir("b.csv")), "# ddpsim-schedule v1\nid,", 24), 0);
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
                          "# device: cpu\n\n  ranks: 2\r\n#launcher: mpi"};
  cr_assert_eq(ds_schedule_write_csv(in_dir("x.csv"), s, &m, &err), DS_OK);
  cr_assert_str_eq(slurp(in_dir("x.csv")),
                   "# ddpsim-schedule v1\n# program: ddpreal 0.1.0\n# seed: 0\n"
                   "# device: cpu\n# ranks: 2\n#launcher: mpi\n"
                   "id,rank,stream,kind,name,layer,bucket,coll,root,algo,"
                   "bytes,flops,dur_us,deps\n");
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
    struct ds_trace_row row = {i < 3 ? s : s2, (uint32_t)(i + 1), (int32_t)(i / 3),
                               starts[i], starts[i] + (int64_t)i * 7};
    cr_assert_eq(ds_trace_add(t, &row), DS_OK);
  }
  struct ds_err err = {0};
  const char *path = in_dir("trace.csv");
  cr_assert_eq(ds_trace_write_csv(path, t, &meta, &err), DS_OK, "%s", err.msg);
  const char *text = slurp(path);
  cr_assert_eq(strncmp(text, "# ddpsim-trace v1\n# program: ddpsim 0.1.0\n", 41), 0);
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
       "# ddpsim-trace v1\n"
       "iter,id,rank,stream,kind,name,layer,bucket,coll,root,algo,bytes,flops,"
       "dur_us,deps,source,start_us,end_us\n"
       "0,1,0,compute,fwd,l,0,-1,-1,-1,,0,0,1,,sim,0,1.5\n"
       "1,1,0,compute,fwd,l,0,-1,-1,-1,,0,0,1,,sim,2,3.25\n");
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
  expect_read_error(0, "# ddpsim-trace v1\n" TRACE_HEADER,
                    ":1: this is a ddpsim-trace file, not a ddpsim-schedule file");
  expect_read_error(1, "# ddpsim-schedule v1\n" SCHED_HEADER,
                    ":1: this is a ddpsim-schedule file, not a ddpsim-trace file");
}

/* A later version may change meanings, so version 2 is refused by name. */
Test(trace, reader_wrong_version) {
  expect_read_error(0, "# ddpsim-schedule v2\n" SCHED_HEADER,
                    ":1: ddpsim-schedule version 2 is not supported; this "
                    "ddpsim reads version 1");
}

/* A file without the schema line (or an empty one) is refused on line 1. */
Test(trace, reader_missing_schema_line) {
  expect_read_error(0, SCHED_HEADER,
                    ":1: expected the schema line \"# ddpsim-schedule v1\", got "
                    "\"id,rank,");
  expect_read_error(0, "", ":1: the file is empty");
}

/* Every column is required; the first missing one is named. */
Test(trace, reader_missing_column) {
  expect_read_error(0,
                    "# ddpsim-schedule v1\n# seed: 1\n"
                    "id,rank,stream,kind,name,layer,bucket,coll,root,algo,bytes,"
                    "flops,dur_us\n",
                    ":3: missing column 'deps'");
  /* A trace missing its four extra columns names the first of them. */
  expect_read_error(1, "# ddpsim-trace v1\n" SCHED_HEADER,
                    ":2: missing column 'source'");
}

/* Unknown and repeated columns are errors that name the column: silently
 * ignoring one would hide a typo or a newer schema. */
Test(trace, reader_unknown_column) {
  expect_read_error(0,
                    "# ddpsim-schedule v1\n"
                    "id,rank,stream,kind,name,colour,layer,bucket,coll,root,"
                    "algo,bytes,flops,dur_us,deps\n",
                    ":2: unknown column 'colour'");
  expect_read_error(0,
                    "# ddpsim-schedule v1\n"
                    "id,rank,stream,kind,name,layer,bucket,coll,root,algo,bytes,"
                    "flops,dur_us,deps,id\n",
                    ":2: column 'id' appears twice");
  expect_read_error(0, "# ddpsim-schedule v1\n" TRACE_HEADER,
                    ":2: unknown column 'source'");
}

/* A kind outside the list is refused with the list of accepted names. */
Test(trace, reader_bad_kind) {
  expect_read_error(0,
                    "# ddpsim-schedule v1\n" SCHED_HEADER
                    "0,0,compute,fwd,a,0,-1,-1,-1,,0,0,1,\n"
                    "1,0,compute,forward,a,0,-1,-1,-1,,0,0,1,0\n",
                    ":4: column 'kind': expected one of fwd, bwd, loss, step, "
                    "allreduce");
  expect_read_error(0,
                    "# ddpsim-schedule v1\n" SCHED_HEADER
                    "0,0,gpu,fwd,a,0,-1,-1,-1,,0,0,1,\n",
                    ":3: column 'stream': expected one of compute, comm, copy "
                    "or host, got \"gpu\"");
}

/* Numbers are checked in full: trailing junk, negatives, inf/nan, overflow,
 * and malformed id lists are all refused with the column and the text. */
Test(trace, reader_bad_numbers) {
  const char *pre = "# ddpsim-schedule v1\n" SCHED_HEADER;
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
       ":3: column 'deps': expected op ids (integers >= 0) separated by spaces, "
       "got \"1;2\""},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    snprintf(text, sizeof text, "%s%s", pre, cases[i].row);
    expect_read_error(0, text, cases[i].want);
  }
}

/* A row with a field missing (or one too many) is refused naming its line;
 * the line counts blank lines and line breaks inside quoted names, so the
 * number is the one an editor shows. */
Test(trace, reader_short_row) {
  expect_read_error(0,
                    "# ddpsim-schedule v1\n" SCHED_HEADER
                    "0,0,compute,fwd,\"two\nlines\",0,-1,-1,-1,,0,0,1,\n"
                    "\n"
                    "1,0,compute,fwd,a,0,-1,-1,-1,,0,0,1\n",
                    ":6: expected 14 fields, got 13");
  expect_read_error(0,
                    "# ddpsim-schedule v1\n" SCHED_HEADER
                    "0,0,compute,fwd,a,0,-1,-1,-1,,0,0,1,,extra\n",
                    ":3: expected 14 fields, got 15");
}

/* An op cannot end before it starts; times need nanosecond resolution at
 * most, and a row may not change the trace's source. */
Test(trace, reader_bad_times) {
  expect_read_error(1,
                    "# ddpsim-trace v1\n" TRACE_HEADER
                    "0,0,compute,fwd,a,0,-1,-1,-1,,0,0,1,,sim,0,10.000,9.999\n",
                    ":3: column 'end_us': expected a time >= start_us (10.000), "
                    "got \"9.999\"");
  expect_read_error(1,
                    "# ddpsim-trace v1\n" TRACE_HEADER
                    "0,0,compute,fwd,a,0,-1,-1,-1,,0,0,1,,sim,0,1.0001,2\n",
                    ":3: column 'start_us': expected microseconds >= 0 with at "
                    "most 3 decimals, got \"1.0001\"");
  expect_read_error(1,
                    "# ddpsim-trace v1\n" TRACE_HEADER
                    "0,0,compute,fwd,a,0,-1,-1,-1,,0,0,1,,sim,0,-1,2\n",
                    ":3: column 'start_us'");
  expect_read_error(1,
                    "# ddpsim-trace v1\n" TRACE_HEADER
                    "0,0,compute,fwd,a,0,-1,-1,-1,,0,0,1,,sim,0,1,2\n"
                    "1,0,compute,fwd,a,0,-1,-1,-1,,0,0,1,,real,0,1,2\n",
                    ":4: column 'source': expected \"sim\" like the rows before "
                    "it, got \"real\"");
  expect_read_error(1,
                    "# ddpsim-trace v1\n" TRACE_HEADER
                    "0,0,compute,fwd,a,0,-1,-1,-1,,0,0,1,,gpu,0,1,2\n",
                    ":3: column 'source': expected sim or real");
}

/* Comments are provenance and belong before the header; a stray quote is a
 * CSV syntax error on its line. */
Test(trace, reader_comment_after_header_and_bad_quotes) {
  expect_read_error(0,
                    "# ddpsim-schedule v1\n" SCHED_HEADER
                    "0,0,compute,fwd,a,0,-1,-1,-1,,0,0,1,\n# late\n",
                    ":4: comment lines are allowed only before the header row");
  expect_read_error(0,
                    "# ddpsim-schedule v1\n" SCHED_HEADER
                    "0,0,compute,fwd,a\"b,0,-1,-1,-1,,0,0,1,\n",
                    ":3: malformed CSV");
  expect_read_error(0,
                    "# ddpsim-schedule v1\n" SCHED_HEADER
                    "0,0,compute,fwd,\"open,0,-1,-1,-1,,0,0,1,\n",
                    ":3: malformed CSV: a quoted field is not closed");
}

/* The schedule reader validates: a dependency on another rank's op is
 * reported with the file name and the op id. */
Test(trace, schedule_reader_validates) {
  expect_read_error(0,
                    "# ddpsim-schedule v1\n" SCHED_HEADER
                    "0,0,compute,fwd,a,0,-1,-1,-1,,0,0,1,\n"
                    "1,1,compute,fwd,a,0,-1,-1,-1,,0,0,1,0\n",
                    ":4: op 1: dependency 0 is not an op of rank 1 that comes "
                    "earlier (it is on rank 0)");
}

/* A validation error names the line of the op's row, not only its id
 * (issue #15, defect 10): here the second row, line 4, repeats id 0. */
Test(trace, schedule_validation_errors_name_the_line) {
  expect_read_error(0,
                    "# ddpsim-schedule v1\n" SCHED_HEADER
                    "0,0,compute,fwd,a,0,-1,-1,-1,,0,0,1,\n"
                    "0,0,compute,fwd,b,0,-1,-1,-1,,0,0,1,\n",
                    ":4: op 0: id is used twice");
}

/* A rank no smaller than the number of rows cannot be dense; it used to
 * size every per-rank array (rank 49,999,999 cost `ddpsim analyze` 5 GB).
 * Refused at its line in both readers (issue #15, defect 7). */
Test(trace, an_absurd_rank_is_refused_at_its_line) {
  expect_read_error(0,
                    "# ddpsim-schedule v1\n" SCHED_HEADER
                    "0,0,compute,fwd,a,0,-1,-1,-1,,0,0,1,\n"
                    "1,49999999,compute,fwd,b,0,-1,-1,-1,,0,0,1,\n",
                    ":4: column 'rank': rank 49999999 in a file of 2 rows");
  expect_read_error(1,
                    "# ddpsim-trace v1\n" TRACE_HEADER
                    "0,49999999,compute,fwd,a,0,-1,-1,-1,,0,0,1,,real,0,0,1\n",
                    ":3: column 'rank': rank 49999999 in a file of 1 rows");
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
  cr_assert_eq(strncmp(slurp(path), "# ddpsim-schedule v1\n", 21), 0);
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
    struct ds_trace_row row = {i < 3 ? s : s2, (uint32_t)(i + 2) % 8, (int32_t)(i / 3),
                               (int64_t)i * 1000, (int64_t)i * 1000 + 7};
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
