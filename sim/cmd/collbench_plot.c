/*
 * The collective's busbw plot and its reference table (see
 * collbench_plot.h). The reference is read by base/csvread.h, so every
 * row knows the line it began on.
 */
#include "sim/cmd/collbench_plot.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/atomic_file.h"
#include "base/csvread.h"
#include "base/gnuplot.h"

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
  s->p[s->n++] = (struct ds_busbw_point){size_bytes, busbw_gbps, g, 0};
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

static const char *const ranks_names[] = {"n_ranks", "nranks", "ranks", NULL};
/* ddpsim collective --format csv's op column, or a table's own */
static const char *const op_names[] = {"op", "collective", NULL};

/* The columns and the values of the row being read. */
struct reader {
  struct ds_busbw_set *out;
  int size_col, bw_col, ranks_col; /* ranks_col -1: the table has none */
  int op_col;                      /* -1: the table names no op */
  const char *op;                  /* the run's --op, or NULL: not checked */
  double size, bw, ranks;
};

static int find_col(const struct ds_csvread *t, const char *const *names) {
  for (int k = 0; names[k]; k++) {
    int c = ds_csvread_column(t, names[k]);
    if (c >= 0) return c;
  }
  return -1;
}

/* Whether a table's op (text, len) names op: case and '_' or '-' ignored,
 * so nccl-tests' all_reduce is allreduce. */
static int same_op(const char *text, size_t len, const char *op) {
  size_t i = 0;
  for (;; op++) {
    while (i < len && (text[i] == '_' || text[i] == '-' || text[i] == ' ')) i++;
    if (*op == '\0' || i == len) return *op == '\0' && i == len;
    if (tolower((unsigned char)text[i]) != tolower((unsigned char)*op)) return 0;
    i++;
  }
}

static void on_header(struct ds_csvread *t) {
  struct reader *r = t->ctx;
  r->size_col = find_col(t, size_names);
  r->bw_col = find_col(t, busbw_names);
  r->ranks_col = find_col(t, ranks_names);
  r->op_col = find_col(t, op_names);
  if (r->size_col < 0 || r->bw_col < 0)
    t->st = ds_err_set(t->err, DS_EINPUT,
                       "%s:%zu: the header row has no %s column (expected one of %s)",
                       t->path, t->row_line, r->size_col < 0 ? "size" : "busbw",
                       r->size_col < 0 ? "size_bytes, size_bytes_assumed_2^k, size"
                                       : "busbw_gbps, busbw_GBps_inplace_published, "
                                         "busbw");
}

static void on_field(struct ds_csvread *t, int c, const char *text, size_t len) {
  struct reader *r = t->ctx;
  if (c == r->op_col && r->op) {
    /* a busbw measured for another op is no comparison (all-gather's bus
     * factor is (n-1)/n, all-reduce's 2(n-1)/n): nccl-tests' names
     * ("all_reduce") and ddpsim's ("allreduce") both taken, case ignored */
    int shown = (int)(len > DS_CSVREAD_TEXT_MAX ? DS_CSVREAD_TEXT_MAX : len);
    const char *more = len > DS_CSVREAD_TEXT_MAX ? "..." : "";
    if (!same_op(text, len, r->op))
      t->st = ds_err_set(t->err, DS_EINPUT,
                         "%s:%zu:%d: column '%s': the table was measured for %.*s%s, the run "
                         "times %s (option --op): one op's busbw is no measure of another's; "
                         "give --op %.*s%s, or a table of %s",
                         t->path, t->row_line, c + 1, t->names[c], shown, text, more, r->op,
                         shown, text, more, r->op);
    return;
  }
  if (c != r->size_col && c != r->bw_col && c != r->ranks_col) return;
  double v;
  if (c == r->ranks_col) {
    if (ds_csvread_number(text, &v) != 0 || v < 1 || v > INT32_MAX || v != floor(v))
      ds_csvread_bad_value(t, c, "a rank count, a whole number >= 1", text, len);
    else r->ranks = v;
    return;
  }
  int is_size = c == r->size_col;
  if (ds_csvread_number(text, &v) != 0 || (is_size ? v <= 0 : v < 0))
    ds_csvread_bad_value(t, c, is_size ? "a size in bytes > 0" : "a bandwidth in GB/s >= 0",
                         text, len);
  else if (is_size) r->size = v;
  else r->bw = v;
}

static void on_row(struct ds_csvread *t) {
  struct reader *r = t->ctx;
  if (ds_busbw_add(r->out, r->out->groups[0], r->size, r->bw) != DS_OK)
    t->st = ds_err_set(t->err, DS_ENOMEM, "%s: out of memory", t->path);
  else
    r->out->p[r->out->n - 1].ranks = r->ranks_col >= 0 ? (int32_t)r->ranks : 0;
}

ds_status ds_busbw_keep_ranks(struct ds_busbw_set *s, const char *path, int32_t ranks,
                              const char *ranks_from, size_t *dropped, struct ds_err *err) {
  size_t kept = 0;
  int32_t lo = 0, hi = 0;
  for (size_t i = 0; i < s->n; i++) {
    int32_t r = s->p[i].ranks;
    if (r != 0 && (lo == 0 || r < lo)) lo = r;
    if (r > hi) hi = r;
    if (r == 0 || r == ranks) s->p[kept++] = s->p[i];
  }
  *dropped = s->n - kept;
  s->n = kept;
  if (kept > 0 || *dropped == 0) return DS_OK;
  char counts[48];
  if (lo == hi) snprintf(counts, sizeof counts, "%d", lo);
  else snprintf(counts, sizeof counts, "%d to %d", lo, hi);
  return ds_err_set(err, DS_EINPUT, "%s: no row at %d ranks (%s); its rank column has %s: "
                    "a busbw is compared at the rank count it was measured with (give -g "
                    "with one of those)", path, ranks, ranks_from, counts);
}

ds_status ds_busbw_reference_load(const char *path, const char *op, struct ds_busbw_set *out,
                                  struct ds_err *err) {
  memset(out, 0, sizeof *out);
  const char *name = ds_csvread_input_name(path), *base = strrchr(name, '/');
  snprintf(out->groups[0], DS_BUSBW_GROUP_MAX, "reference: %s", base ? base + 1 : name);
  out->n_groups = 1;
  struct reader r = {.out = out, .op = op};
  struct ds_csvread t = {.path = path, .err = err, .max_cols = 64, .on_header = on_header,
                         .on_field = on_field, .on_row = on_row, .ctx = &r};
  ds_status st = ds_csvread_file(&t, "--reference");
  if (st != DS_OK) ds_busbw_release(out);
  return st;
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
        "set ylabel 'busbw (GB/s)'\nset yrange [0:*]\nset key top left\nset grid\n", gp);
  /* one size (-b equal to -e, no other reference size) is an empty x range,
   * which gnuplot's autoscale warns about on our standard error: an octave
   * on each side instead */
  double lo = 0, hi = 0;
  int any = 0;
  for (int k = 0; k < 2; k++) {
    const struct ds_busbw_set *set = k ? x->ref : x->sim;
    for (size_t i = 0; set && i < set->n; i++, any = 1) {
      double v = set->p[i].size_bytes;
      if (!any || v < lo) lo = v;
      if (!any || v > hi) hi = v;
    }
  }
  if (any && lo == hi) fprintf(gp, "set xrange [%.17g:%.17g]\n", lo / 2, hi * 2);
  fputs("plot ", gp);
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
  if (fclose(fp) != 0)
    return ds_err_set(err, DS_EIO, "--plot: cannot write %s: %s", path, strerror(errno));
  return DS_OK;
}

ds_status ds_busbw_plot(const char *path, const char *title, const struct ds_busbw_set *sim,
                        const struct ds_busbw_set *ref, struct ds_err *err) {
  char data[4096];
  int fd = ds_temp_mkstemp_in_dir("ddpsim-busbw", data, sizeof data);
  if (fd < 0)
    return ds_err_set(err, DS_EIO, "--plot: cannot create a temporary file in %s (TMPDIR): %s",
                      ds_temp_dir(), strerror(errno));
  close(fd);
  ds_status st = write_data(data, sim, ref, err);
  struct script_ctx x = {data, title, sim, ref};
  if (st == DS_OK) st = ds_gnuplot_draw(path, script, &x, err);
  ds_temp_remove(data);
  return st;
}
