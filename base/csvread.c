/*
 * A CSV table with a header row (see csvread.h). libcsv is fed one line at
 * a time and told nothing of comments: a line is skipped only while the
 * parser is between rows, so a `#` or a blank line inside a quoted field
 * stays data, and row_line is the line each row began on.
 */
#include "base/csvread.h"

#include <csv.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void field_cb(void *data, size_t len, void *ctx) {
  struct ds_csvread *r = ctx;
  const char *text = data ? data : "";
  int c = r->field++;
  if (r->st != DS_OK) return;
  if (!r->header_done) {
    if (c < DS_CSVREAD_MAX_COLS)
      snprintf(r->names[c], DS_CSVREAD_NAME_MAX, "%.*s", (int)len, text);
    return;
  }
  if (r->on_field) r->on_field(r, c, text, len);
}

static void row_cb(int term, void *ctx) {
  struct ds_csvread *r = ctx;
  (void)term;
  int fields = r->field;
  r->field = 0;
  r->at_row_start = 1;
  if (r->st != DS_OK) return;
  if (!r->header_done) {
    r->header_done = 1;
    r->n_cols = fields;
    if (fields > r->max_cols) {
      r->st = ds_err_set(r->err, DS_EINPUT, "%s:%zu: %d columns; at most %d", r->path,
                         r->row_line, fields, r->max_cols);
      return;
    }
    if (r->on_header) r->on_header(r);
    return;
  }
  if (fields != r->n_cols) {
    r->st = ds_err_set(r->err, DS_EINPUT, "%s:%zu: %d fields, but the header row has %d",
                       r->path, r->row_line, fields, r->n_cols);
    return;
  }
  r->n_rows++;
  if (r->on_row) r->on_row(r);
}

ds_status ds_csvread_lines(FILE *fp, const struct ds_csvread_lines *l) {
  struct csv_parser p;
  if (csv_init(&p, CSV_STRICT | CSV_STRICT_FINI | CSV_APPEND_NULL) != 0)
    return *l->st = ds_err_set(l->err, DS_ENOMEM, "%s: out of memory", l->path);
  char *line = NULL;
  size_t cap = 0;
  ssize_t len;
  while (*l->st == DS_OK && (len = getline(&line, &cap, fp)) >= 0) {
    ++*l->line;
    if (*l->at_row_start) {
      /* a NUL byte is never blank: the line goes on to be refused */
      if (ds_csvread_blank(line) && !memchr(line, '\0', (size_t)len)) continue;
      if (line[0] == '#') {
        if (!l->comment_ok || l->comment_ok(l->ctx, line, (size_t)len)) continue;
        if (*l->st != DS_OK) break; /* refused with the reader's own message */
        *l->st = ds_err_set(l->err, DS_EINPUT, "%s:%zu: comment lines are allowed only "
                            "before the header row", l->path, *l->line);
        break;
      }
      *l->row_line = *l->line;
      *l->at_row_start = 0;
    }
    if (csv_parse(&p, line, (size_t)len, l->on_field, l->on_row, l->ctx) != (size_t)len &&
        *l->st == DS_OK)
      *l->st = ds_err_set(l->err, DS_EINPUT, "%s:%zu: malformed CSV (%s): a quote inside "
                          "an unquoted field, or text after a closing quote?", l->path,
                          *l->line, csv_strerror(csv_error(&p)));
  }
  if (*l->st == DS_OK && ferror(fp))
    *l->st = ds_err_set(l->err, DS_EIO, "%s:%zu: read failed: %s", l->path, *l->line,
                        strerror(errno));
  if (*l->st == DS_OK && csv_fini(&p, l->on_field, l->on_row, l->ctx) != 0 &&
      *l->st == DS_OK)
    *l->st = ds_err_set(l->err, DS_EINPUT, "%s:%zu: malformed CSV: a quoted field is not "
                        "closed", l->path, *l->row_line);
  csv_free(&p);
  free(line);
  return *l->st;
}

ds_status ds_csvread_file(struct ds_csvread *r, const char *flag) {
  const char *path = r->path;
  r->st = DS_OK;
  r->line = r->row_line = 0;
  r->at_row_start = 1;
  r->header_done = r->n_cols = r->field = r->n_rows = 0;
  FILE *fp = fopen(path, "r");
  if (!fp)
    return r->st = ds_err_set(r->err, DS_EINPUT, "%s %s: cannot open: %s", flag, path,
                              strerror(errno));
  struct ds_csvread_lines l = {path, r->err, &r->st, &r->line, &r->row_line,
                               &r->at_row_start, NULL, field_cb, row_cb, r};
  ds_csvread_lines(fp, &l);
  if (r->st == DS_OK && r->n_rows == 0)
    r->st = ds_err_set(r->err, DS_EINPUT, "%s:%zu: %s", path, r->line,
                       r->header_done ? "no data rows after the header row" : "no header row");
  fclose(fp);
  return r->st;
}

int ds_csvread_column(const struct ds_csvread *r, const char *name) {
  for (int c = 0; c < r->n_cols && c < DS_CSVREAD_MAX_COLS; c++)
    if (strcmp(r->names[c], name) == 0) return c;
  return -1;
}

void ds_csvread_bad_value(struct ds_csvread *r, int col, const char *what, const char *text,
                          size_t len) {
  r->st = ds_err_set(r->err, DS_EINPUT, "%s:%zu:%d: column '%s': expected %s, got \"%.*s%s\"",
                     r->path, r->row_line, col + 1, r->names[col], what,
                     (int)(len > DS_CSVREAD_TEXT_MAX ? DS_CSVREAD_TEXT_MAX : len), text,
                     len > DS_CSVREAD_TEXT_MAX ? "..." : "");
}

int ds_csvread_number(const char *text, double *out) {
  char *end;
  errno = 0;
  *out = strtod(text, &end);
  while (*end == ' ' || *end == '\t' || *end == '\r') end++;
  return end != text && *end == '\0' && errno == 0 && isfinite(*out) ? 0 : -1;
}

int ds_csvread_blank(const char *s) {
  for (; *s; s++)
    if (*s != ' ' && *s != '\t' && *s != '\r' && *s != '\n') return 0;
  return 1;
}
