/*
 * base/csvread.c, the table reader of `--measured` and `--reference`, on
 * what a hand-made or exported table brings: a directory or an empty file
 * (said so, exit 2, no "line 0"), a UTF-8 byte order mark (Excel's "CSV
 * UTF-8"), a NUL byte in a field, numbers strtod takes but no table means
 * (hexadecimal, inf, nan), a column named twice, long names that share
 * their first 63 bytes, and lines ended by a carriage return alone. The
 * reader under test takes a column "v" of numbers; the end-to-end cases
 * run $DDPSIM_BIN.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/csvread.h"
#include "tests/support.h"

#define TINY "--topo tests/data/tiny-topo.yaml --model tests/data/tiny-model.yaml "

struct table {
  int v_col;
  double sum;
  int rows;
};

static void on_header(struct ds_csvread *t) {
  struct table *tb = t->ctx;
  tb->v_col = ds_csvread_column(t, "v");
  if (tb->v_col < 0)
    t->st = ds_err_set(t->err, DS_EINPUT, "%s:%zu: no column v", t->path, t->row_line);
}

static void on_field(struct ds_csvread *t, int c, const char *text, size_t len) {
  struct table *tb = t->ctx;
  double x;
  if (c != tb->v_col) return;
  if (ds_csvread_number(text, &x) != 0) ds_csvread_bad_value(t, c, "a number", text, len);
  else tb->sum += x;
}

static void on_row(struct ds_csvread *t) { ((struct table *)t->ctx)->rows++; }

/* Reads len bytes of text as a table (written to a temporary file, whose
 * name goes into path, 64 bytes): its status, the message in err. */
static ds_status read_bytes(const char *text, size_t len, struct table *tb, struct ds_err *err,
                            char *path) {
  strcpy(path, "/tmp/ddpsim-csvread-XXXXXX");
  ds_test_write_temp(path, "");
  FILE *fp = fopen(path, "wb");
  cr_assert_not_null(fp);
  cr_assert_eq(fwrite(text, 1, len, fp), len);
  cr_assert_eq(fclose(fp), 0);
  *tb = (struct table){.v_col = -1};
  struct ds_csvread t = {.path = path, .err = err, .max_cols = 64, .on_header = on_header,
                         .on_field = on_field, .on_row = on_row, .ctx = tb};
  ds_status st = ds_csvread_file(&t, "--measured");
  unlink(path);
  return st;
}

static ds_status read_text(const char *text, struct table *tb, struct ds_err *err,
                           char *path) {
  return read_bytes(text, strlen(text), tb, err, path);
}

/* Expects the table refused with "PATH" followed by want. */
#define REFUSED(literal, want) expect_refused(literal, sizeof literal - 1, want)
static void expect_refused(const char *text, size_t len, const char *want) {
  struct table tb;
  struct ds_err err = {0};
  char path[64], full[256];
  cr_assert_eq(read_bytes(text, len, &tb, &err, path), DS_EINPUT, "accepted: %s", want);
  snprintf(full, sizeof full, "%s%s", path, want);
  cr_assert(strstr(err.msg, full), "%s (want %s)", err.msg, full);
}

/* A directory is no table: exit 2 saying so (it was "PATH:0: read failed:
 * Is a directory", exit 1); an empty file is said to be empty (it was
 * "PATH:0: no header row"). Neither message has a line 0. */
Test(csvread, a_directory_or_an_empty_file_is_said_so) {
  char dir[] = "/tmp/ddpsim-csvdir-XXXXXX", args[512], want[256];
  cr_assert_not_null(mkdtemp(dir));
  snprintf(args, sizeof args, TINY "--bucket-mb 1,25 --measured %s", dir);
  snprintf(want, sizeof want, "--measured %s: is a directory; expected a CSV file", dir);
  ds_test_ddpsim_refuses(args, want);
  snprintf(args, sizeof args, "collective --topo tests/data/tiny-topo.yaml --plot %s/p.png "
           "--reference %s", dir, dir);
  snprintf(want, sizeof want, "--reference %s: is a directory; expected a CSV file", dir);
  ds_test_ddpsim_refuses(args, want);
  cr_assert_eq(rmdir(dir), 0, "a file was left in %s", dir);
  struct table tb;
  struct ds_err err = {0};
  char path[64];
  cr_assert_eq(read_text("", &tb, &err, path), DS_EINPUT);
  cr_assert(strstr(err.msg, "the file is empty; expected a header row"), "%s", err.msg);
  cr_assert_null(strstr(err.msg, ":0"), "%s", err.msg);
}

/* A UTF-8 byte order mark before the header is not part of the first
 * name: "v" is found (it read as "\xEF\xBB\xBFv", "no column v"). In a
 * later line the same bytes are data. */
Test(csvread, a_byte_order_mark_is_skipped) {
  struct table tb;
  struct ds_err err = {0};
  char path[64];
  cr_assert_eq(read_text("\xEF\xBB\xBFv,w\n1,2\n3,4\n", &tb, &err, path), DS_OK, "%s", err.msg);
  cr_assert_eq(tb.rows, 2);
  cr_assert_float_eq(tb.sum, 4.0, 1e-12);
  REFUSED("v\n\xEF\xBB\xBF" "1\n", ":2:1: column 'v': expected a number");
  /* ddpsim's own --measured reader, end to end */
  char m[] = "/tmp/ddpsim-bom-XXXXXX", args[512];
  ds_test_write_temp(m, "\xEF\xBB\xBF" "bucket_mb,iter_ms\n1,30\n25,28\n");
  snprintf(args, sizeof args, TINY "--bucket-mb 1,25 --measured %s", m);
  struct ds_test_result r = ds_test_run("", ds_test_ddpsim(), args);
  cr_assert_eq(r.status, 0, "%s", r.err);
  ds_test_release(&r);
  unlink(m);
  /* a trace's schema line (traces/trace_read.c): `ddpsim analyze` reads
   * the copy with a mark as the trace itself (it was "expected the schema
   * line") */
  char *trace = ds_test_slurp("bench/results/gpu-2026-11-23-h100/p2.csv");
  char t[] = "/tmp/ddpsim-bomtrace-XXXXXX", *marked = malloc(strlen(trace) + 4);
  cr_assert_not_null(marked);
  snprintf(marked, strlen(trace) + 4, "\xEF\xBB\xBF%s", trace);
  ds_test_write_temp(t, marked);
  snprintf(args, sizeof args, "analyze %s --format csv", t);
  r = ds_test_run("", ds_test_ddpsim(), args);
  cr_assert_eq(r.status, 0, "%s", r.err);
  struct ds_test_result plain =
      ds_test_run("", ds_test_ddpsim(), "analyze bench/results/gpu-2026-11-23-h100/p2.csv "
                  "--format csv");
  cr_assert_str_eq(r.out, plain.out);
  ds_test_release(&plain);
  ds_test_release(&r);
  unlink(t);
  free(marked);
  free(trace);
}

/* A NUL byte in a field is refused, naming line, field and byte ("40\0junk"
 * read as 40 before); in a header name too. */
Test(csvread, a_nul_byte_in_a_field_is_refused) {
  static const char row[] = "v,w\n40\0junk,1\n";
  REFUSED(row, ":2:1: field 1 contains a NUL byte (byte 3)");
  static const char head[] = "v,w\0x\n1,2\n";
  REFUSED(head, ":1:2: field 2 contains a NUL byte (byte 2)");
}

/* A number is decimal: hexadecimal ("0x28" was 40), inf and nan are
 * refused; blanks around it, signs, exponents and a bare point are taken. */
Test(csvread, a_number_is_decimal) {
  static const char *const bad[] = {"0x28", "0X1p3", "inf", "nan", "INFINITY", "1e999", "",
                                    " ", "4 0", "40abc", "--1", "1,5"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    double x = -7;
    cr_assert_eq(ds_csvread_number(bad[i], &x), -1, "\"%s\" read as %g", bad[i], x);
  }
  static const struct { const char *text; double want; } good[] = {
      {"40", 40}, {" 40 ", 40}, {"\t40\r", 40}, {"-2.5", -2.5}, {"+3", 3}, {"1e3", 1000},
      {"2.5E-1", 0.25}, {".5", 0.5}, {"5.", 5}};
  for (size_t i = 0; i < sizeof good / sizeof *good; i++) {
    double x = -7;
    cr_assert_eq(ds_csvread_number(good[i].text, &x), 0, "\"%s\" refused", good[i].text);
    cr_assert_float_eq(x, good[i].want, 1e-12, "\"%s\"", good[i].text);
  }
  REFUSED("v\n0x28\n", ":2:1: column 'v': expected a number, got \"0x28\"");
}

/* A column named twice is refused by every table reader (only --measured's
 * refused it; --reference took the first), blanks around names aside. */
Test(csvread, a_column_named_twice_is_refused) {
  REFUSED("w,v, v\n1,2,3\n", ":1: the header row names v twice (columns 2 and 3)");
  char dir[] = "/tmp/ddpsim-csvdup-XXXXXX", ref[300], args[768];
  cr_assert_not_null(mkdtemp(dir));
  snprintf(ref, sizeof ref, "%s/ref.csv", dir);
  FILE *fp = fopen(ref, "w");
  cr_assert_not_null(fp);
  fputs("size_bytes,busbw_gbps,busbw_gbps\n1024,0.5,7\n", fp);
  fclose(fp);
  snprintf(args, sizeof args, "collective --topo tests/data/tiny-topo.yaml -b 1K -e 4K "
           "--plot %s/p.png --reference %s", dir, ref);
  char want[400];
  snprintf(want, sizeof want, "%s:1: the header row names busbw_gbps twice (columns 2 and 3)",
           ref);
  ds_test_ddpsim_refuses(args, want);
  unlink(ref);
  cr_assert_eq(rmdir(dir), 0, "a file was left in %s", dir);
}

/* Two names of 70 bytes that differ after byte 63 are two columns (their
 * first 63 bytes, all that is kept, made them "the same"); a name cut so
 * is never found by a shorter one it begins with. */
Test(csvread, long_names_are_not_cut_into_one) {
  char text[400], name[80];
  memset(name, 'a', 69);
  name[69] = '\0';
  snprintf(text, sizeof text, "v,%sx,%sy\n1,2,3\n", name, name);
  struct table tb;
  struct ds_err err = {0};
  char path[64];
  cr_assert_eq(read_text(text, &tb, &err, path), DS_OK, "%s", err.msg);
  cr_assert_float_eq(tb.sum, 1.0, 1e-12);
  /* a 63-byte name and a longer one beginning with it: the short one is
   * found, the cut one is not taken for it */
  memset(name, 'v', 63);
  name[63] = '\0';
  snprintf(text, sizeof text, "%s,%sz\n1,2\n", name, name);
  strcpy(path, "/tmp/ddpsim-csvread-XXXXXX");
  ds_test_write_temp(path, text);
  struct ds_csvread t = {.path = path, .err = &err, .max_cols = 64};
  cr_assert_eq(ds_csvread_file(&t, "--measured"), DS_OK, "%s", err.msg);
  unlink(path);
  cr_assert_eq(ds_csvread_column(&t, name), 0);
  /* end to end: --measured took them for one column named twice */
  char m[] = "/tmp/ddpsim-longnames-XXXXXX", args[512];
  memset(name, 'a', 69);
  name[69] = '\0';
  snprintf(text, sizeof text, "bucket_mb,iter_ms,%sx,%sy\n1,30,a,b\n25,28,c,d\n", name, name);
  ds_test_write_temp(m, text);
  snprintf(args, sizeof args, TINY "--bucket-mb 1,25 --measured %s", m);
  struct ds_test_result r = ds_test_run("", ds_test_ddpsim(), args);
  cr_assert_eq(r.status, 0, "%s", r.err);
  ds_test_release(&r);
  unlink(m);
}

/* Lines ended by a carriage return alone (old Mac files) are lines: an
 * error names its own line (every row was line 1), and the rows read as
 * with \n or \r\n. */
Test(csvread, carriage_returns_alone_end_lines) {
  struct table tb;
  struct ds_err err = {0};
  char path[64];
  cr_assert_eq(read_text("# made by hand\rv,w\r1,2\r\r3,4\r", &tb, &err, path), DS_OK, "%s",
               err.msg);
  cr_assert_eq(tb.rows, 2);
  cr_assert_float_eq(tb.sum, 4.0, 1e-12);
  REFUSED("v,w\r1,2\rx,3\r", ":3:1: column 'v': expected a number");
  REFUSED("v,w\r1,2\r3\r", ":3: 1 fields, but the header row has 2");
  /* a carriage return inside a quoted field stays in it */
  cr_assert_eq(read_text("v,w\r1,\"a\rb\"\r2,c\r", &tb, &err, path), DS_OK, "%s", err.msg);
  cr_assert_eq(tb.rows, 2);
  cr_assert_float_eq(tb.sum, 3.0, 1e-12);
}
