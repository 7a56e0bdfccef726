/*
 * The collective's busbw plot and its reference table (see
 * collbench_plot.h). The reference reader feeds libcsv line by line, as
 * traces/trace.c does, so every row knows the line it began on.
 */
#include "collbench_plot.h"

#include <csv.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../traces/gnuplot.h"

ds_status ds_busbw_add(struct ds_busbw_set *s, const char *group, double size_bytes,
                       double busbw_gbps) {
  int32_t g = 0;
  while (g < s->n_groups && strcmp(s->groups[g], group) != 0) g++;
  if (g == s->n_groups) {
    if (g == DS_BUSBW_MAX_GROUPS) g--; /* more curves than a legend can hold: merge */
    else snprintf(s->groups[s->n_groups++], DS_BUSBW_GROUP_MAX, "%s", group);
  }
  if (s->n == s->cap) {
    size_t cap = s->cap ? 2 * s->cap : 64;
    struct ds_busbw_point *p = realloc(s->p, cap * sizeof *p);
    if (!p) return DS_ENOMEM;
    s->p = p;
    s->cap = cap;
  }
  s->p[s->n++] = (struct ds_busbw_point){size_bytes, busbw_gbps, g};
  return DS_OK;
}

void ds_busbw_release(struct ds_busbw_set *s) {
  if (!s) return;
  free(s->p);
  memset(s, 0, sizeof *s);
}

/* Column names accepted for the two values, in order of preference. */
static const char *const size_names[] = {"size_bytes", "size_bytes_assumed_2^k", "size", NULL};
static const char *const busbw_names[] = {"busbw_gbps", "busbw_GBps_inplace_published",
                                          "busbw", NULL};

#define MAX_COLS 64
#define MAX_NAME 64
#define ERR_TEXT_MAX 40

struct reader {
  const char *path;
  struct ds_busbw_set *out;
  struct ds_err *err;
  ds_status st;
  size_t line, row_line;
  int at_row_start, header_done;
  char names[MAX_COLS][MAX_NAME];
  int n_cols, field, size_col, bw_col;
  double size, bw;
};

static int find_col(const struct reader *r, const char *const *names) {
  for (int k = 0; names[k]; k++)
    for (int c = 0; c < r->n_cols; c++)
      if (strcmp(r->names[c], names[k]) == 0) return c;
  return -1;
}

/* A finite number, the whole field. */
static int parse_number(const char *text, double *out) {
  char *end;
  errno = 0;
  *out = strtod(text, &end);
  while (*end == ' ' || *end == '\t') end++;
  return end != text && *end == '\0' && errno == 0 && isfinite(*out) ? 0 : -1;
}

static void on_field(void *data, size_t len, void *ctx) {
  struct reader *r = ctx;
  const char *text = data ? data : "";
  int c = r->field++;
  if (r->st != DS_OK) return;
  if (!r->header_done) {
    if (c < MAX_COLS) snprintf(r->names[c], MAX_NAME, "%.*s", (int)len, text);
    return;
  }
  if (c != r->size_col && c != r->bw_col) return;
  double v;
  int is_size = c == r->size_col;
  if (parse_number(text, &v) != 0 || (is_size ? v <= 0 : v < 0))
    r->st = ds_err_set(r->err, DS_EINPUT,
                       "%s:%zu:%d: column '%s': expected %s, got \"%.*s%s\"", r->path,
                       r->row_line, c + 1, r->names[c],
                       is_size ? "a size in bytes > 0" : "a bandwidth in GB/s >= 0",
                       (int)(len > ERR_TEXT_MAX ? ERR_TEXT_MAX : len), text,
                       len > ERR_TEXT_MAX ? "..." : "");
  else if (is_size) r->size = v;
  else r->bw = v;
}

static void on_row(int term, void *ctx) {
  struct reader *r = ctx;
  (void)term;
  int fields = r->field;
  r->field = 0;
  r->at_row_start = 1;
  if (r->st != DS_OK) return;
  if (!r->header_done) {
    r->header_done = 1;
    r->n_cols = fields;
    if (fields > MAX_COLS) {
      r->st = ds_err_set(r->err, DS_EINPUT, "%s:%zu: %d columns; at most %d", r->path,
                         r->row_line, fields, MAX_COLS);
      return;
    }
    r->size_col = find_col(r, size_names);
    r->bw_col = find_col(r, busbw_names);
    if (r->size_col < 0 || r->bw_col < 0)
      r->st = ds_err_set(r->err, DS_EINPUT,
                         "%s:%zu: the header row has no %s column (expected one of %s)",
                         r->path, r->row_line, r->size_col < 0 ? "size" : "busbw",
                         r->size_col < 0 ? "size_bytes, size_bytes_assumed_2^k, size"
                                         : "busbw_gbps, busbw_GBps_inplace_published, "
                                           "busbw");
    return;
  }
  if (fields != r->n_cols) {
    r->st = ds_err_set(r->err, DS_EINPUT, "%s:%zu: %d fields, but the header row has %d",
                       r->path, r->row_line, fields, r->n_cols);
    return;
  }
  if (ds_busbw_add(r->out, r->out->groups[0], r->size, r->bw) != DS_OK)
    r->st = ds_err_set(r->err, DS_ENOMEM, "%s: out of memory", r->path);
}

static int is_blank(const char *line) {
  for (; *line; line++)
    if (*line != ' ' && *line != '\t' && *line != '\r' && *line != '\n') return 0;
  return 1;
}

ds_status ds_busbw_reference_load(const char *path, struct ds_busbw_set *out,
                                  struct ds_err *err) {
  memset(out, 0, sizeof *out);
  const char *base = strrchr(path, '/');
  snprintf(out->groups[0], DS_BUSBW_GROUP_MAX, "reference: %s", base ? base + 1 : path);
  out->n_groups = 1;
  FILE *fp = fopen(path, "r");
  if (!fp)
    return ds_err_set(err, DS_EINPUT, "--reference %s: cannot open: %s", path,
                      strerror(errno));
  struct reader r = {.path = path, .out = out, .err = err, .at_row_start = 1};
  struct csv_parser p;
  if (csv_init(&p, CSV_STRICT | CSV_STRICT_FINI | CSV_APPEND_NULL) != 0) {
    fclose(fp);
    return ds_err_set(err, DS_ENOMEM, "%s: out of memory", path);
  }
  char *line = NULL;
  size_t cap = 0;
  ssize_t len;
  while (r.st == DS_OK && (len = getline(&line, &cap, fp)) >= 0) {
    r.line++;
    if (r.at_row_start) {
      if (is_blank(line) || line[0] == '#') continue;
      r.row_line = r.line;
      r.at_row_start = 0;
    }
    if (csv_parse(&p, line, (size_t)len, on_field, on_row, &r) != (size_t)len &&
        r.st == DS_OK)
      r.st = ds_err_set(err, DS_EINPUT, "%s:%zu: malformed CSV (%s)", path, r.line,
                        csv_strerror(csv_error(&p)));
  }
  if (r.st == DS_OK && ferror(fp))
    r.st = ds_err_set(err, DS_EIO, "%s:%zu: read failed: %s", path, r.line, strerror(errno));
  if (r.st == DS_OK && csv_fini(&p, on_field, on_row, &r) != 0 && r.st == DS_OK)
    r.st = ds_err_set(err, DS_EINPUT, "%s:%zu: malformed CSV: a quoted field is not closed",
                      path, r.row_line);
  if (r.st == DS_OK && out->n == 0)
    r.st = ds_err_set(err, DS_EINPUT, "%s:%zu: %s", path, r.line,
                      r.header_done ? "no data rows after the header row"
                                    : "no header row");
  csv_free(&p);
  free(line);
  fclose(fp);
  if (r.st != DS_OK) ds_busbw_release(out);
  return r.st;
}

struct script_ctx {
  const char *data;
  const char *title;
  const struct ds_busbw_set *sim, *ref;
};

static void script(FILE *gp, const char *term, const char *out, void *ctx) {
  const struct script_ctx *x = ctx;
  fprintf(gp, "set terminal %s size 900,560 noenhanced font ',11'\nset output ", term);
  ds_gnuplot_string(gp, out);
  fputs("\nset title ", gp);
  ds_gnuplot_string(gp, x->title);
  /* sizes are powers of two in nccl-tests sweeps: binary prefixes */
  fputs("\nset logscale x 2\nset format x '%.0b%BB'\nset xlabel 'size (bytes)'\n"
        "set ylabel 'busbw (GB/s)'\nset yrange [0:*]\nset key top left\nset grid\nplot ",
        gp);
  int32_t block = 0;
  for (int32_t g = 0; g < x->sim->n_groups; g++, block++) {
    if (g) fputs(", \\\n  ", gp);
    ds_gnuplot_string(gp, x->data);
    fprintf(gp, " index %d using 1:2 with linespoints lw 2 pt 5 title ", block);
    char t[DS_BUSBW_GROUP_MAX + 16];
    snprintf(t, sizeof t, "ddpsim %s", x->sim->groups[g]);
    ds_gnuplot_string(gp, t);
  }
  if (x->ref) {
    fputs(", \\\n  ", gp);
    ds_gnuplot_string(gp, x->data);
    fprintf(gp, " index %d using 1:2 with points pt 7 ps 1.3 lc rgb 'black' title ", block);
    ds_gnuplot_string(gp, x->ref->groups[0]);
  }
  fputc('\n', gp);
}

/* One index block per group of sim, then ref's points. */
static ds_status write_data(const char *path, const struct ds_busbw_set *sim,
                            const struct ds_busbw_set *ref, struct ds_err *err) {
  FILE *fp = fopen(path, "w");
  if (!fp) return ds_err_set(err, DS_EIO, "--plot: cannot write %s: %s", path,
                             strerror(errno));
  for (int32_t g = 0; g < sim->n_groups; g++) {
    fprintf(fp, "%s# size_bytes busbw_gbps: %s\n", g ? "\n\n" : "", sim->groups[g]);
    for (size_t i = 0; i < sim->n; i++)
      if (sim->p[i].group == g)
        fprintf(fp, "%.17g %.17g\n", sim->p[i].size_bytes, sim->p[i].busbw_gbps);
  }
  if (ref) {
    fputs("\n\n# reference\n", fp);
    for (size_t i = 0; i < ref->n; i++)
      fprintf(fp, "%.17g %.17g\n", ref->p[i].size_bytes, ref->p[i].busbw_gbps);
  }
  if (fclose(fp) != 0) return ds_err_set(err, DS_EIO, "--plot: cannot write %s", path);
  return DS_OK;
}

ds_status ds_busbw_plot(const char *path, const char *title, const struct ds_busbw_set *sim,
                        const struct ds_busbw_set *ref, struct ds_err *err) {
  char data[] = "/tmp/ddpsim-busbw-XXXXXX";
  int fd = mkstemp(data);
  if (fd < 0)
    return ds_err_set(err, DS_EIO, "--plot: cannot create a temporary file: %s",
                      strerror(errno));
  close(fd);
  ds_status st = write_data(data, sim, ref, err);
  struct script_ctx x = {data, title, sim, ref};
  if (st == DS_OK) st = ds_gnuplot_draw(path, script, &x, err);
  unlink(data);
  return st;
}
