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
#include <sys/stat.h>

static void field_cb(void *data, size_t len, void *ctx) {
  struct ds_csvread *r = ctx;
  const char *text = data ? data : "";
  int c = r->field++;
  if (r->st != DS_OK) return;
  /* a NUL would cut the field short for every reader of its text */
  const char *nul = len ? memchr(text, '\0', len) : NULL;
  if (nul) {
    r->st = ds_err_set(r->err, DS_EINPUT, "%s:%zu:%d: field %d contains a NUL byte (byte "
                       "%zu)", r->path, r->row_line, c + 1, c + 1, (size_t)(nul - text) + 1);
    return;
  }
  if (!r->header_done) {
    if (c < DS_CSVREAD_MAX_COLS) {
      snprintf(r->names[c], DS_CSVREAD_NAME_MAX, "%.*s", (int)len, text);
      r->name_cut[c] = len >= DS_CSVREAD_NAME_MAX;
    }
    return;
  }
  if (r->on_field) r->on_field(r, c, text, len);
}

/* A header written by hand may pad its names: blanks around each are
 * dropped. Then no name may come twice, which would leave to chance which
 * column a reader takes. A name cut to DS_CSVREAD_NAME_MAX - 1 bytes is
 * left out of the comparison (and ds_csvread_column never finds it): two
 * long names with one beginning would otherwise be "the same". */
static void check_names(struct ds_csvread *r) {
  for (int c = 0; c < r->n_cols; c++) {
    char *n = r->names[c];
    size_t k = strlen(n);
    while (k > 0 && (n[k - 1] == ' ' || n[k - 1] == '\t' || n[k - 1] == '\r')) n[--k] = '\0';
    size_t lead = strspn(n, " \t");
    memmove(n, n + lead, strlen(n + lead) + 1);
  }
  for (int c = 0; c < r->n_cols; c++)
    for (int d = 0; d < c; d++)
      if (r->names[c][0] && !r->name_cut[c] && !r->name_cut[d] &&
          strcmp(r->names[c], r->names[d]) == 0) {
        r->st = ds_err_set(r->err, DS_EINPUT,
                           "%s:%zu: the header row names %s twice (columns %d and %d); "
                           "expected each column once", r->path, r->row_line, r->names[c],
                           d + 1, c + 1);
        return;
      }
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
    check_names(r);
    if (r->st == DS_OK && r->on_header) r->on_header(r);
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

/* Whether the n bytes at s are all blanks (a NUL is not one). */
static int blank_n(const char *s, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r' && s[i] != '\n') return 0;
  return 1;
}

/* One line (text, len bytes, NUL-terminated after them) through the loop:
 * 0 to go on, -1 to stop. */
static int one_line(struct csv_parser *p, const struct ds_csvread_lines *l, const char *text,
                    size_t len) {
  ++*l->line;
  if (*l->at_row_start) {
    /* a NUL byte is never blank: the line goes on to be refused */
    if (blank_n(text, len)) return 0;
    if (text[0] == '#') {
      if (!l->comment_ok || l->comment_ok(l->ctx, text, len)) return 0;
      if (*l->st != DS_OK) return -1; /* refused with the reader's own message */
      *l->st = ds_err_set(l->err, DS_EINPUT, "%s:%zu: comment lines are allowed only "
                          "before the header row", l->path, *l->line);
      return -1;
    }
    *l->row_line = *l->line;
    *l->at_row_start = 0;
  }
  if (csv_parse(p, text, len, l->on_field, l->on_row, l->ctx) != len && *l->st == DS_OK)
    *l->st = ds_err_set(l->err, DS_EINPUT, "%s:%zu: malformed CSV (%s): a quote inside "
                        "an unquoted field, or text after a closing quote?", l->path,
                        *l->line, csv_strerror(csv_error(p)));
  return *l->st == DS_OK ? 0 : -1;
}

ds_status ds_csvread_lines(FILE *fp, const struct ds_csvread_lines *l) {
  struct csv_parser p;
  if (csv_init(&p, CSV_STRICT | CSV_STRICT_FINI | CSV_APPEND_NULL) != 0)
    return *l->st = ds_err_set(l->err, DS_ENOMEM, "%s: out of memory", l->path);
  char *line = NULL, *seg = NULL;
  size_t cap = 0, seg_cap = 0;
  ssize_t got;
  while (*l->st == DS_OK && (got = getline(&line, &cap, fp)) >= 0) {
    const char *text = line;
    size_t len = (size_t)got;
    /* A UTF-8 byte order mark (Excel's "CSV UTF-8") before the file's
     * first line is not part of its first field. */
    if (*l->line == 0 && len >= 3 && memcmp(text, "\xEF\xBB\xBF", 3) == 0) text += 3, len -= 3;
    /* A carriage return not followed by a line feed ends a line too (old
     * Mac files): each such line is fed, and counted, alone. */
    const char *cr;
    while ((cr = memchr(text, '\r', len)) && (size_t)(cr - text) + 1 < len && cr[1] != '\n') {
      size_t n = (size_t)(cr - text) + 1;
      if (n + 1 > seg_cap) {
        char *grown = realloc(seg, n + 1);
        if (!grown) {
          *l->st = ds_err_set(l->err, DS_ENOMEM, "%s: out of memory", l->path);
          break;
        }
        seg = grown;
        seg_cap = n + 1;
      }
      memcpy(seg, text, n);
      seg[n] = '\0';
      if (one_line(&p, l, seg, n) != 0) break;
      text += n;
      len -= n;
    }
    if (*l->st != DS_OK || one_line(&p, l, text, len) != 0) break;
  }
  if (*l->st == DS_OK && ferror(fp))
    *l->st = *l->line ? ds_err_set(l->err, DS_EIO, "%s:%zu: read failed: %s", l->path,
                                   *l->line, strerror(errno))
                      : ds_err_set(l->err, DS_EIO, "%s: read failed: %s", l->path,
                                   strerror(errno));
  if (*l->st == DS_OK && csv_fini(&p, l->on_field, l->on_row, l->ctx) != 0 &&
      *l->st == DS_OK)
    *l->st = ds_err_set(l->err, DS_EINPUT, "%s:%zu: malformed CSV: a quoted field is not "
                        "closed", l->path, *l->row_line);
  csv_free(&p);
  free(line);
  free(seg);
  return *l->st;
}

const char *ds_csvread_input_name(const char *path) {
  return strcmp(path, "-") == 0 ? "standard input" : path;
}

FILE *ds_csvread_open_input(const char *path) {
  return strcmp(path, "-") == 0 ? stdin : fopen(path, "r");
}

void ds_csvread_close_input(FILE *fp) {
  if (fp && fp != stdin) fclose(fp);
}

ds_status ds_csvread_file(struct ds_csvread *r, const char *flag) {
  FILE *fp = ds_csvread_open_input(r->path);
  int e = errno;
  /* the name every message below and the callers' give */
  const char *path = r->path = ds_csvread_input_name(r->path);
  r->st = DS_OK;
  r->line = r->row_line = 0;
  r->at_row_start = 1;
  r->header_done = r->n_cols = r->field = r->n_rows = 0;
  if (!fp)
    return r->st = ds_err_set(r->err, DS_EINPUT, "%s %s: cannot open: %s", flag, path,
                              strerror(e));
  struct stat st;
  if (fstat(fileno(fp), &st) == 0 && S_ISDIR(st.st_mode)) {
    ds_csvread_close_input(fp);
    return r->st = ds_err_set(r->err, DS_EINPUT, "%s %s: is a directory; expected a CSV "
                              "file", flag, path);
  }
  struct ds_csvread_lines l = {path, r->err, &r->st, &r->line, &r->row_line,
                               &r->at_row_start, NULL, field_cb, row_cb, r};
  ds_csvread_lines(fp, &l);
  /* a table that cannot be read is the user's input, as one that cannot be
   * opened (exit 2; analyze's traces alike): standard input closed (<&-)
   * reads EBADF */
  if (r->st == DS_EIO) {
    r->st = DS_EINPUT;
    if (r->err) r->err->status = r->st;
  }
  if (r->st == DS_OK && r->line == 0)
    r->st = ds_err_set(r->err, DS_EINPUT, "%s %s: the file is empty; expected a header row "
                       "naming the columns, then data rows", flag, path);
  else if (r->st == DS_OK && r->n_rows == 0)
    r->st = ds_err_set(r->err, DS_EINPUT, "%s:%zu: %s", path, r->line,
                       r->header_done ? "no data rows after the header row" : "no header row");
  ds_csvread_close_input(fp);
  return r->st;
}

int ds_csvread_column(const struct ds_csvread *r, const char *name) {
  for (int c = 0; c < r->n_cols && c < DS_CSVREAD_MAX_COLS; c++)
    if (!r->name_cut[c] && strcmp(r->names[c], name) == 0) return c;
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
  /* strtod alone would also take hexadecimal ("0x28"), "inf" and "nan":
   * only a decimal number's characters, blanks around it */
  const char *p = text + strspn(text, " \t");
  size_t n = strspn(p, "0123456789.eE+-");
  if (n == 0 || p[n + strspn(p + n, " \t\r")] != '\0') return -1;
  char *end;
  errno = 0;
  *out = strtod(p, &end);
  while (*end == ' ' || *end == '\t' || *end == '\r') end++;
  return end != p && *end == '\0' && errno == 0 && isfinite(*out) ? 0 : -1;
}

int ds_csvread_blank(const char *s) {
  for (; *s; s++)
    if (*s != ' ' && *s != '\t' && *s != '\r' && *s != '\n') return 0;
  return 1;
}
