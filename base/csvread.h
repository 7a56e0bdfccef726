/*
 * Reading a table of named columns from CSV (RFC 4180, libcsv): `#` lines
 * and blank lines between rows skipped, a header row naming the columns,
 * then data rows of as many fields as the header. The file is fed to libcsv
 * line by line, so every row knows the line it began on and every error
 * names FILE:LINE. What the columns mean is the caller's: it finds them in
 * the header and takes each data row's fields through callbacks. Shared by
 * `--measured` (sim/cli/sweep_measured.c) and `--reference`
 * (sim/cmd/collbench_plot.c). The trace schema's reader (traces/trace_read.c: a
 * schema line, comments only above the header, its own columns) shares the
 * loop that feeds libcsv (ds_csvread_lines), not the table above it.
 */
#ifndef DS_CSVREAD_H
#define DS_CSVREAD_H

#include <stddef.h>
#include <stdio.h>

#include "base/status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define DS_CSVREAD_MAX_COLS 256
#define DS_CSVREAD_NAME_MAX 64

/* A value's text is cut to this many characters in error messages. */
#define DS_CSVREAD_TEXT_MAX 40

struct ds_csvread;

/* A callback reports an error by setting r->st (ds_err_set into r->err);
 * no callback runs after that. */
typedef void (*ds_csvread_fn)(struct ds_csvread *r);
typedef void (*ds_csvread_field_fn)(struct ds_csvread *r, int col, const char *text,
                                    size_t len);

struct ds_csvread {
  /* Set by the caller. */
  const char *path;
  struct ds_err *err;             /* borrowed */
  int max_cols;                   /* a header of more columns is an error; at most
                                     DS_CSVREAD_MAX_COLS */
  ds_csvread_fn on_header;        /* names[0 .. n_cols) are the header's, trimmed
                                     and each named once (checked first) */
  ds_csvread_field_fn on_field;   /* field col of a data row, NUL-terminated (col may
                                     pass the header's in a row then refused) */
  ds_csvread_fn on_row;           /* a data row ended, with n_cols fields */
  void *ctx;                      /* the callbacks' */
  /* Filled in as it reads. */
  ds_status st;                   /* DS_OK until the first error */
  size_t line;                    /* the line being read (1-based) */
  size_t row_line;                /* the line the current row began on */
  int at_row_start, header_done;
  int n_cols, field, n_rows;      /* n_rows: data rows read */
  /* the header's names, blanks around them dropped; a longer name is cut
   * to DS_CSVREAD_NAME_MAX - 1 bytes and name_cut set: such a column is
   * never found by name */
  char names[DS_CSVREAD_MAX_COLS][DS_CSVREAD_NAME_MAX];
  char name_cut[DS_CSVREAD_MAX_COLS];
};

/* The one CSV read loop (both table readers': ds_csvread_file and
 * traces/trace_read.c's): feeds fp to libcsv line by line from its current
 * position; a blank line or a `#` line while libcsv is between rows is
 * skipped, or with comment_ok returning 0 refused ("comment lines are
 * allowed only before the header row"), so a `#` inside a quoted field
 * stays data. The reader's own state is borrowed through pointers: the
 * loop stops once *st is not DS_OK, advances *line, sets *row_line to the
 * line each row begins on and clears *at_row_start there (the reader's row
 * callback sets it again). A carriage return not followed by a line feed
 * ends a line as a line feed does (old Mac files: each line counted), and
 * a UTF-8 byte order mark before the file's first line (*line 0) is
 * skipped. comment_ok sees the `#` line (a trace's end line
 * is one) and may also refuse it with its own message: it sets *st and
 * returns 0. Errors (into *st and err): malformed CSV, DS_EINPUT naming
 * PATH:LINE; a read failure, DS_EIO; a quoted field not closed at the end,
 * DS_EINPUT naming the line the row began on. */
struct ds_csvread_lines {
  const char *path;
  struct ds_err *err;
  ds_status *st;
  size_t *line, *row_line;
  int *at_row_start;
  /* NULL: `#` lines are skipped anywhere; len: the line's length, NUL
   * bytes and its line break included */
  int (*comment_ok)(void *ctx, const char *line, size_t len);
  void (*on_field)(void *data, size_t len, void *ctx); /* libcsv's callbacks */
  void (*on_row)(int term, void *ctx);
  void *ctx;
};
ds_status ds_csvread_lines(FILE *fp, const struct ds_csvread_lines *l);

/* "-" names standard input for the CSV tables one process reads once
 * (ddpsim analyze's traces, --measured, --reference): files found by name
 * or read again by path (YAML, GPU tables, ddpreal's schedule) refuse it
 * (ds_cli_refuse_stdin). ds_csvread_input_name: "standard input" for "-",
 * else path, the name messages give; ds_csvread_open_input: stdin for "-",
 * else fopen(path, "r") (NULL and errno when it fails);
 * ds_csvread_close_input closes it, leaving stdin open. */
const char *ds_csvread_input_name(const char *path);
FILE *ds_csvread_open_input(const char *path);
void ds_csvread_close_input(FILE *fp);

/* Reads r->path ("-": standard input, named so in messages; flag names
 * the option that gave it, for "FLAG PATH:
 * cannot open", "FLAG PATH: is a directory; ...", "FLAG PATH: the file is
 * empty; ..."). r->path is left as that name: "standard input" for "-"
 * (ds_csvread_input_name), so callers' own messages after the read name it
 * alike. A UTF-8 byte order mark before the first line is skipped;
 * a carriage return alone ends a line (ds_csvread_lines). Errors are
 * DS_EINPUT naming FILE:LINE (a file with no header row or no data row is
 * one, and so are a NUL byte in a field and a header naming a column
 * twice; a file that cannot be opened or read, standard input closed
 * among them, is one too: exit 2), DS_ENOMEM; the status is also left in
 * r->st. */
ds_status ds_csvread_file(struct ds_csvread *r, const char *flag);

/* The index of the header's column named name, or -1. */
int ds_csvread_column(const struct ds_csvread *r, const char *name);

/* Sets the error "FILE:LINE:FIELD: column 'NAME': expected WHAT, got
 * \"TEXT\"" (DS_EINPUT) for field col of the current row. */
void ds_csvread_bad_value(struct ds_csvread *r, int col, const char *what, const char *text,
                          size_t len);

/* A finite decimal number, the whole of text (blanks around it allowed;
 * hexadecimal, "inf" and "nan" refused): 0, else -1. */
int ds_csvread_number(const char *text, double *out);

/* Whether s is only blanks (spaces, tabs, line ends). */
int ds_csvread_blank(const char *s);

#ifdef __cplusplus
}
#endif

#endif /* DS_CSVREAD_H */
