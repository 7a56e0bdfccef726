/*
 * The timeline plot (export.h): gnuplot draws a Gantt chart from a data
 * file this module writes; the script goes to gnuplot's standard input
 * (base/gnuplot.h, which writes the picture atomically). Every op is a
 * box from its start to its end on its (side, rank, stream) row, times in
 * ms from its iteration's start, so the predicted and the measured
 * iteration share one axis. One trace alone is one side: its rows only.
 */
#include "analysis/export.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/atomic_file.h"
#include "base/gnuplot.h"

#define MAX_PATH 4096

/* The chart's series, one colour each, from Okabe and Ito's colour-blind-
 * safe palette ("Color Universal Design", 2002, jfly.uni-koeln.de/color):
 * every pair stays apart under protanopia, deuteranopia and tritanopia as
 * well (the seaborn colours before drew loss's purple next to forward's
 * blue, and apart by CIEDE2000 2.2 under protanopia; these, 10.9 at the
 * least). The boxes and the key both read this table. */
enum series { SERIES_FWD, SERIES_BWD, SERIES_LOSS, SERIES_STEP, SERIES_COMM, SERIES_OTHER,
              SERIES_COUNT };
static const struct {
  unsigned rgb;
  const char *title; /* SERIES_COMM's is comm_title's */
} series[SERIES_COUNT] = {
    [SERIES_FWD] = {0x0072B2, "forward"},         /* blue */
    [SERIES_BWD] = {0xE69F00, "backward"},        /* orange */
    [SERIES_LOSS] = {0xCC79A7, "loss"},           /* reddish purple */
    [SERIES_STEP] = {0x009E73, "optimizer step"}, /* bluish green */
    [SERIES_COMM] = {0xD55E00, NULL},             /* vermillion */
    [SERIES_OTHER] = {0x56B4E9, "copy, other"},   /* sky blue */
};

static enum series series_of(const struct ds_op *o) {
  if (o->stream == DS_STREAM_COMM) return SERIES_COMM;
  switch (o->kind) {
  case DS_OP_FWD: return SERIES_FWD;
  case DS_OP_BWD: return SERIES_BWD;
  case DS_OP_LOSS: return SERIES_LOSS;
  case DS_OP_STEP: return SERIES_STEP;
  default: return SERIES_OTHER;
  }
}

struct lane {
  int32_t rank;
  int stream;
};

/* Rows of the chart: the (rank, stream) pairs that have ops, rank-major,
 * from one marking pass over the ops (seen: world_size * DS_STREAM_COUNT
 * bytes, zeroed). */
static size_t lanes(const struct ds_compare *c, unsigned char *seen, struct lane *out) {
  for (size_t i = 0; i < c->n_ops; i++) {
    const struct ds_op *o = c->ops[i].op;
    seen[(size_t)o->rank * DS_STREAM_COUNT + (size_t)o->stream] = 1;
  }
  size_t n = 0;
  for (int32_t r = 0; r < c->world_size; r++)
    for (int s = 0; s < DS_STREAM_COUNT; s++)
      if (seen[(size_t)r * DS_STREAM_COUNT + (size_t)s]) out[n++] = (struct lane){r, s};
  return n;
}

/* The lane of op o, or -1: a binary search, the lanes being sorted by
 * (rank, stream). */
static int lane_of(const struct lane *l, size_t n, const struct ds_op *o) {
  size_t lo = 0, hi = n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (l[mid].rank < o->rank || (l[mid].rank == o->rank && l[mid].stream < (int)o->stream))
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo < n && l[lo].rank == o->rank && l[lo].stream == (int)o->stream ? (int)lo : -1;
}

/* The sides drawn: predicted above measured, or one trace alone. */
static int n_sides(const struct ds_compare *c) {
  return c->meas ? 2 : 1;
}

/* Lane i of side `side` (0 the upper) of `sides` is drawn at this y. */
static int lane_y(int sides, int side, size_t nl, int i) {
  return (sides - 1 - side) * (int)(nl + 1) + (int)nl - 1 - i;
}

/* The picture's height in pixels: a margin and 36 per lane, both sides. */
static long plot_height(int sides, size_t nl) {
  return 160 + 36L * (lane_y(sides, 0, nl, 0) + 1);
}

/* cairo's largest image surface is 32767 pixels a side (MAX_IMAGE_SIZE in
 * cairo-image-surface.c): a taller PNG failed in gnuplot, "Cairo is
 * unhappy: invalid value (typically too big) for the size of the input",
 * after the whole simulation (a 512-rank timeline, 1,536 lanes). ddpsim's
 * own timeline is refused before its simulation too (run_schedule.c). */
#define PNG_SIDE_MAX_PX 32767L

/* One row of an iteration, by what the boxes are drawn in order of. */
struct drawn_row {
  int32_t rank;
  int64_t id;
  uint32_t row;
};

static int cmp_drawn_row(const void *a, const void *b) {
  const struct drawn_row *x = a, *y = b;
  if (x->rank != y->rank) return x->rank < y->rank ? -1 : 1;
  if (x->id != y->id) return x->id < y->id ? -1 : 1;
  return (x->row > y->row) - (x->row < y->row);
}

/* Row indices of iteration iter of t sorted by (rank, id): *rows is
 * malloc'ed (caller frees); *t0_ns is the iteration's first start (0 for
 * none). DS_ENOMEM. */
static ds_status iter_rows(const struct ds_trace *t, int32_t iter, uint32_t **rows, size_t *n,
                           int64_t *t0_ns) {
  struct drawn_row *k = malloc((t->n_rows + 1) * sizeof *k);
  uint32_t *r = malloc((t->n_rows + 1) * sizeof *r);
  if (!k || !r) {
    free(k);
    free(r);
    return DS_ENOMEM;
  }
  size_t m = 0;
  int64_t t0 = INT64_MAX;
  for (size_t i = 0; i < t->n_rows; i++) {
    const struct ds_trace_row *row = &t->rows[i];
    if (row->iter != iter) continue;
    const struct ds_op *o = &row->sched->ops[row->op];
    k[m++] = (struct drawn_row){o->rank, o->id, (uint32_t)i};
    if (row->start_ns < t0) t0 = row->start_ns;
  }
  qsort(k, m, sizeof *k, cmp_drawn_row);
  for (size_t i = 0; i < m; i++) r[i] = k[i].row;
  free(k);
  *rows = r;
  *n = m;
  *t0_ns = m ? t0 : 0;
  return DS_OK;
}

/* Boxes (index 0) and bucket labels (index 1) of one side. */
static void side_data(FILE *fp, const struct ds_trace *t, int32_t iter,
                      const struct lane *l, size_t nl, int sides, int side,
                      int labels) {
  uint32_t *rows = NULL;
  size_t n = 0;
  int64_t t0 = 0;
  if (iter_rows(t, iter, &rows, &n, &t0) != DS_OK) return;
  for (size_t i = 0; i < n; i++) {
    const struct ds_trace_row *r = &t->rows[rows[i]];
    const struct ds_op *o = &r->sched->ops[r->op];
    int k = lane_of(l, nl, o);
    if (k < 0) continue;
    double y = (double)lane_y(sides, side, nl, k);
    double x0 = (double)(r->start_ns - t0) / 1e6, x1 = (double)(r->end_ns - t0) / 1e6;
    if (labels && o->bucket >= 0 && o->stream == DS_STREAM_COMM)
      fprintf(fp, "%.6f %.1f \"b%d\"\n", (x0 + x1) / 2, y + 0.45, o->bucket);
    else if (!labels)
      fprintf(fp, "%.6f %.6f %.1f %u\n", x0, x1, y, series[series_of(o)].rgb);
  }
  free(rows);
}

static ds_status write_data(const char *data_path, const struct ds_compare *c,
                            const struct lane *l, size_t nl, struct ds_err *err) {
  FILE *fp = fopen(data_path, "w");
  if (!fp) return ds_err_set(err, DS_EIO, "--plot: cannot write %s: %s", data_path,
                             strerror(errno));
  for (int labels = 0; labels < 2; labels++) {
    if (labels) fputs("\n\n", fp);
    fputs("# x0_ms x1_ms y rgb | x_ms y label\n", fp);
    side_data(fp, c->pred, c->pred_iter, l, nl, n_sides(c), 0, labels);
    if (c->meas) side_data(fp, c->meas, c->plot_meas_iter, l, nl, 2, 1, labels);
  }
  if (fclose(fp) != 0)
    return ds_err_set(err, DS_EIO, "--plot: cannot write %s: %s", data_path, strerror(errno));
  return DS_OK;
}

/* Whether any comm op carries a bucket label, whether every comm op is
 * an all-reduce (DDP) rather than dp's or ps's other collectives, and
 * whether any op is of SERIES_OTHER (a copy, a push or pull off the comm
 * stream), whose key entry is drawn only then. */
static void comm_kinds(const struct ds_compare *c, int *labels, int *all_ar, int *other) {
  *labels = 0;
  *all_ar = 1;
  *other = 0;
  for (size_t i = 0; i < c->n_ops; i++) {
    const struct ds_op *o = c->ops[i].op;
    *other |= series_of(o) == SERIES_OTHER;
    if (o->stream != DS_STREAM_COMM) continue;
    *labels |= o->bucket >= 0;
    *all_ar &= o->kind == DS_OP_ALLREDUCE;
  }
}

static void write_script(FILE *gp, const char *term, const char *out,
                         const char *data, const struct ds_compare *c,
                         const struct lane *l, size_t nl) {
  int sides = n_sides(c), labels, all_ar, other;
  comm_kinds(c, &labels, &all_ar, &other);
  int top = lane_y(sides, 0, nl, 0); /* the highest lane's y */
  long height = plot_height(sides, nl);
  fprintf(gp, "set terminal %s size 1600,%ld noenhanced font ',10'\n", term, height);
  fputs("set output ", gp);
  ds_gnuplot_string(gp, out);
  fputs("\nset title ", gp);
  char title[2 * MAX_PATH + 256], note[128];
  if (c->meas) {
    snprintf(title, sizeof title, "predicted %s iteration %d (above) vs measured %s "
             "iteration %d (median of %zu)", c->pred_path, c->pred_iter, c->meas_path,
             c->plot_meas_iter, c->n_meas_iters);
  } else {
    ds__compare_iter_note(c, note, sizeof note);
    snprintf(title, sizeof title, "%s %s iteration %d (%s)",
             strcmp(c->pred->source, "real") == 0 ? "measured" : "predicted", c->label,
             c->pred_iter, note);
  }
  ds_gnuplot_string(gp, title);
  fputs("\nset xlabel 'ms from the iteration start'\nset grid xtics\n"
        "set key outside right top\nset style fill solid 1.0 noborder\n", gp);
  fprintf(gp, "set yrange [-0.7:%d.7]\nset ytics (", top);
  for (int side = 0; side < sides; side++)
    for (size_t i = 0; i < nl; i++) {
      char label[96];
      snprintf(label, sizeof label, "%s%sr%d %s", sides == 1 ? "" : side ? "measured" :
               "predicted", sides == 1 ? "" : " ", l[i].rank,
               ds_stream_name((enum ds_stream)l[i].stream));
      fputs(side || i ? ", " : "", gp);
      ds_gnuplot_string(gp, label);
      fprintf(gp, " %d", lane_y(sides, side, nl, (int)i));
    }
  fputs(")\n", gp);
  if (sides == 2)
    fprintf(gp, "set arrow from graph 0, first %zu to graph 1, first %zu nohead dt 2\n",
            nl, nl);
  fputs("plot ", gp);
  ds_gnuplot_string(gp, data);
  fputs(" index 0 using (($1+$2)/2):3:(($2-$1)/2):(0.35):4 with boxxyerror "
        "lc rgb variable notitle, \\\n", gp);
  /* gnuplot warns about an empty data block: no labels, no clause. */
  if (labels) fputs("  '' index 1 using 1:2:3 with labels font ',8' notitle, \\\n", gp);
  for (int k = 0; k < SERIES_COUNT; k++) {
    if (k == SERIES_OTHER && !other) continue;
    fprintf(gp, "%s  keyentry with boxes lc rgb '#%06X' title '", k ? ", \\\n" : "",
            series[k].rgb);
    if (k == SERIES_COMM)
      fprintf(gp, "%s (bN: bucket)", all_ar ? "all-reduce" : "communication");
    else
      fputs(series[k].title, gp);
    fputc('\'', gp);
  }
  fputc('\n', gp);
}

struct script_ctx {
  const char *data;
  const struct ds_compare *c;
  const struct lane *l;
  size_t nl;
};

static void script(FILE *gp, const char *term, const char *out, void *ctx) {
  const struct script_ctx *x = ctx;
  write_script(gp, term, out, x->data, x->c, x->l, x->nl);
}

ds_status ds_plot_check_size(const char *path, size_t lanes_per_side, int sides,
                             struct ds_err *err) {
  long height = plot_height(sides, lanes_per_side);
  const char *term = ds_gnuplot_terminal(path);
  if (height <= PNG_SIDE_MAX_PX || !term || strcmp(term, "pngcairo") != 0) return DS_OK;
  return ds_err_set(err, DS_EUSAGE, "--plot %s: the timeline has %zu lanes (a rank's stream "
                    "each) and would be %ld pixels tall, past a PNG's %ld (cairo); write "
                    ".svg, or --chrome FILE.json for Perfetto, or plot fewer ranks",
                    path, lanes_per_side * (size_t)sides, height, PNG_SIDE_MAX_PX);
}

ds_status ds_plot_write(const char *path, const struct ds_compare *c,
                        struct ds_err *err) {
  if (!ds_gnuplot_terminal(path))
    return ds_err_set(err, DS_EUSAGE, "--plot %s: expected a file name ending in "
                      ".png or .svg", path);
  ds_status st = DS_OK;
  size_t n_pairs = (size_t)(c->world_size + 1) * DS_STREAM_COUNT;
  struct lane *l = malloc(n_pairs * sizeof *l);
  unsigned char *seen = calloc(n_pairs, 1);
  char data[4096];
  int data_made = 0;
  if (!l || !seen) {
    free(l);
    free(seen);
    return ds_err_set(err, DS_ENOMEM, "--plot: out of memory");
  }
  size_t nl = lanes(c, seen, l);
  free(seen);
  DS_CHECK_GOTO(ds_plot_check_size(path, nl, n_sides(c), err), st, out);
  int fd = ds_temp_mkstemp_in_dir("ddpsim-plot", data, sizeof data);
  if (fd < 0) {
    st = ds_err_set(err, DS_EIO, "--plot: cannot create a temporary file in %s (TMPDIR): %s",
                    ds_temp_dir(), strerror(errno));
    goto out;
  }
  close(fd);
  data_made = 1;
  DS_CHECK_GOTO(write_data(data, c, l, nl, err), st, out);
  struct script_ctx x = {data, c, l, nl};
  st = ds_gnuplot_draw(path, script, &x, err);
out:
  if (data_made) ds_temp_remove(data);
  free(l);
  return st;
}
