/*
 * Tests for traces/trace*.c and base/atomic_file.c: schedule and trace
 * files round-trip every field exactly, start with the schema and
 * provenance lines, writes are atomic, and every file ends with its row
 * count, so a file cut short or edited is refused. The readers' other
 * refusals: test_trace_read.c.
 *
 * Every test works in its own fresh directory under /tmp
 * (tests/trace_files.h).
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
#include "tests/trace_files.h"

static char *slurp(const char *path) {
  FILE *fp = fopen(path, "r");
  cr_assert_not_null(fp, "cannot open %s", path);
  static char buf[1 << 16];
  size_t n = fread(buf, 1, sizeof buf - 1, fp);
  buf[n] = '\0';
  fclose(fp);
  return buf;
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

/* A trace written as the run goes (--strategy ps) reports a failed write
 * at the row that fails, so that the run stops there (ps.h on_iter), not
 * minutes later at the commit; /dev/full fails every write once stdio's
 * buffer fills (a few KB of rows). The commit and abort after it are safe. */
Test(trace, a_streamed_trace_reports_a_failed_write_at_its_row) {
  struct ds_schedule *s = sample_schedule();
  struct ds_trace_writer *w;
  struct ds_err err = {0};
  cr_assert_eq(ds_trace_writer_open("/dev/full", "sim", &meta, &w, &err), DS_OK, "%s", err.msg);
  ds_status st = DS_OK;
  int32_t i;
  for (i = 0; i < 100000 && st == DS_OK; i++) {
    struct ds_trace_row row = {s, (uint32_t)(i % (int32_t)s->n_ops), i, i, i + 1};
    st = ds_trace_writer_add(w, &row, &err);
  }
  cr_assert_eq(st, DS_EIO, "%d rows written to /dev/full", i);
  cr_assert_lt(i, 10000, "%d rows before the failure came back", i);
  cr_assert(strstr(err.msg, "/dev/full: write failed: No space left on device"), "%s",
            err.msg);
  ds_trace_writer_abort(w);
  ds_schedule_free(s);
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
