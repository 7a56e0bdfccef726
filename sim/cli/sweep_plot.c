/*
 * The sweep plot (see sweep_plot.h). The data go to one temporary file in
 * gnuplot's blocks: index 0 the predicted points (x, iteration, exposed
 * communication, throughput, label), index 1 the best one, index 2 the
 * measured points ("-" where a value was not measured); the script comes
 * through gnuplot's standard input.
 */
#include "sim/cli/sweep_plot.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/atomic_file.h"
#include "base/gnuplot.h"
#include "sim/cli/report.h"
#include "sim/cli/sweep.h"

static const char *const var_label[DS_VAR_COUNT] = {
    [DS_VAR_WORLD_SIZE] = "world size (ranks)",
    [DS_VAR_BATCH] = "batch per GPU",
    [DS_VAR_NO_SYNC] = "no_sync K (micro-steps per synchronised step)",
    [DS_VAR_PS_SERVERS] = "parameter servers",
    [DS_VAR_DP_OUTPUT_DEVICE] = "DataParallel output device (GPU)",
    [DS_VAR_STRAGGLER] = "straggler factor (its compute time x)",
    [DS_VAR_JITTER] = "jitter: coefficient of variation of compute kernels",
    [DS_VAR_RING_CHUNKS] = "ring chunks per step",
    [DS_VAR_COMM_HOOK] = "DDP communication hook",
    [DS_VAR_FIRST_BUCKET_MB] = "first bucket cap (MiB)",
    [DS_VAR_BUCKET_MB] = "bucket cap (MiB)"};

static int is_integer_var(enum ds_sweep_var v) {
  return v != DS_VAR_STRAGGLER && v != DS_VAR_JITTER && v != DS_VAR_FIRST_BUCKET_MB &&
         v != DS_VAR_BUCKET_MB && v != DS_VAR_COMM_HOOK;
}

int ds_sweep_plot_log_x(enum ds_sweep_var var, int log_spaced, const struct ds_sweep_point *pts,
                        int32_t n) {
  if (var == DS_VAR_COMM_HOOK || n < 2) return 0;
  double lo = pts[0].x, hi = pts[0].x;
  for (int32_t i = 1; i < n; i++) {
    lo = fmin(lo, pts[i].x);
    hi = fmax(hi, pts[i].x);
  }
  /* an integer option up to 8 (world sizes 1, 2, 4, 8) stays linear, even
   * from a logN range: on a log axis linear scaling looks super-linear */
  if (is_integer_var(var) && hi <= 8) return 0;
  if (log_spaced) return 1;
  return lo > 0 && hi >= 8 * lo;
}

int ds_sweep_plot_zoom_y(enum ds_sweep_var var, const struct ds_sweep_point *pts, int32_t n) {
  if (ds_sweep_per_sample(var) || n < 2) return 0;
  double lo = pts[0].iter_ms, hi = pts[0].iter_ms;
  for (int32_t i = 1; i < n; i++) {
    lo = fmin(lo, pts[i].iter_ms);
    hi = fmax(hi, pts[i].iter_ms);
  }
  return hi > 0 && hi - lo < 0.1 * hi;
}

static ds_status write_data(const char *path, const struct ds_sweep_point *pts,
                            const struct ds_summary *rows, int32_t n, int32_t best,
                            const struct ds_measured *m, struct ds_err *err) {
  FILE *fp = fopen(path, "w");
  if (!fp) return ds_err_set(err, DS_EIO, "--plot: cannot write %s: %s", path,
                             strerror(errno));
  fputs("# x iter_ms exposed_comm_ms samples_per_s label\n", fp);
  for (int32_t i = 0; i < n; i++)
    fprintf(fp, "%.9g %.6f %.6f %.3f \"%s\"\n", pts[i].x, pts[i].iter_ms,
            pts[i].exposed_comm_ms, ds_sweep_rank_samples_per_s(&rows[i]), pts[i].label);
  /* none fits in memory: row 0 keeps the blocks' numbering, not drawn */
  fprintf(fp, "\n\n%.9g %.6f\n", pts[best >= 0 ? best : 0].x, pts[best >= 0 ? best : 0].iter_ms);
  if (m) {
    fputs("\n\n", fp);
    for (int32_t k = 0; k < m->n; k++) {
      fprintf(fp, "%.9g %.6f ", m->p[k].x, m->p[k].iter_ms);
      if (isnan(m->p[k].exposed_comm_ms)) fputs("-\n", fp);
      else fprintf(fp, "%.6f\n", m->p[k].exposed_comm_ms);
    }
  }
  if (fclose(fp) != 0)
    return ds_err_set(err, DS_EIO, "--plot: cannot write %s: %s", path, strerror(errno));
  return DS_OK;
}

struct script_ctx {
  const char *data;
  const struct ds_options *o;
  enum ds_sweep_var var;
  const struct ds_sweep_point *pts;
  const struct ds_summary *rows;
  int32_t n, best;
  const struct ds_measured *m;
};

static void write_script(FILE *gp, const char *term, const char *out,
                         const struct script_ctx *x) {
  const struct ds_summary *b = &x->rows[x->best >= 0 ? x->best : 0];
  enum ds_sweep_var var = x->var;
  int log_x = ds_sweep_plot_log_x(var, x->o->sweep[var].log_spaced, x->pts, x->n);
  int hooks = var == DS_VAR_COMM_HOOK, y2 = ds_sweep_per_sample(var);
  /* both fit: the model's and topology's names are under DS_NAME_CAP
   * (base/config.c ds_cnode_name), a label under 24 bytes, a time in ms
   * under 20 digits (int64 ns), the precision under 30, the rest under
   * 100 bytes */
  char title[512], mark[256];
  fprintf(gp, "set terminal %s size 1000,600 noenhanced font ',11'\nset output ", term);
  ds_gnuplot_string(gp, out);
  snprintf(title, sizeof title, "ddpsim: %s %s on %s, %s, %s sweep%s%s", b->strategy,
           b->model, b->topology, ds_report_precision(b), ds_options_var_flag(var),
           x->m ? ", predicted and measured" : "",
           x->best < 0 ? " (none fits in the GPU's memory)" : "");
  fputs("\nset title ", gp);
  ds_gnuplot_string(gp, title);
  fputs("\nset xlabel ", gp);
  ds_gnuplot_string(gp, var_label[var]);
  /* the key below, off the data, whatever the curves */
  fputs("\nset grid\nset key below horizontal\nset datafile missing '-'\n", gp);
  /* iteration times within a tenth of each other: the axis from 0 would
   * flatten the curve (BERT-base's caps differ by 0.6 %), so it spans the
   * times, its label says so, and exposed communication (near 0) moves to
   * the right axis, which holds no throughput in such a sweep */
  int zoom = ds_sweep_plot_zoom_y(var, x->pts, x->n);
  if (zoom)
    fputs("set ylabel 'iteration (ms; axis not from 0)'\nset yrange [*:*]\n"
          "set y2label 'exposed communication (ms, from 0)'\nset y2tics\n"
          "set y2range [0:*]\nset ytics nomirror\n", gp);
  else fputs("set ylabel 'ms'\nset yrange [0:*]\n", gp);
  /* every time the same is an empty range, which gnuplot's autoscale warns
   * about on our standard error: a percent on each side instead */
  double lo = x->pts[0].iter_ms, hi = lo;
  for (int32_t i = 1; i < x->n; i++)
    lo = fmin(lo, x->pts[i].iter_ms), hi = fmax(hi, x->pts[i].iter_ms);
  for (int32_t i = 0; x->m && i < x->m->n; i++)
    lo = fmin(lo, x->m->p[i].iter_ms), hi = fmax(hi, x->m->p[i].iter_ms);
  if (zoom && lo == hi) fprintf(gp, "set yrange [%.17g:%.17g]\n", 0.99 * lo, 1.01 * hi);
  /* and no exposed communication anywhere is the right axis's [0:0] */
  double exposed = 0;
  for (int32_t i = 0; i < x->n; i++) exposed = fmax(exposed, x->pts[i].exposed_comm_ms);
  for (int32_t i = 0; x->m && i < x->m->n; i++)
    if (!isnan(x->m->p[i].exposed_comm_ms)) exposed = fmax(exposed, x->m->p[i].exposed_comm_ms);
  if (zoom && exposed == 0) fputs("set y2range [0:1]\n", gp);
  const char *exposed_axes = zoom ? " axes x1y2" : "";
  if (hooks) fputs("set xrange [-0.5:*]\nset offsets 0, 0.5, 0, 0\n", gp);
  else fputs("set autoscale xfix\nset offsets graph 0.02, graph 0.02, 0, 0\n", gp);
  if (log_x) fputs("set logscale x\n", gp);
  if (log_x && is_integer_var(var) && x->n <= 16) {
    /* a log axis's own tics (1, 10, 100) would hide the integers swept */
    fputs("set xtics (", gp);
    for (int32_t i = 0; i < x->n; i++) fprintf(gp, "%s%.9g", i ? ", " : "", x->pts[i].x);
    fputs(")\n", gp);
  }
  if (y2) fputs("set y2label 'samples/s'\nset y2tics\nset y2range [0:*]\nset ytics nomirror\n",
                gp);
  snprintf(mark, sizeof mark, "best: %s%s, %.3f ms per iteration%s",
           x->pts[x->best >= 0 ? x->best : 0].label,
           var == DS_VAR_BUCKET_MB || var == DS_VAR_FIRST_BUCKET_MB ? " MiB" : "",
           ds_sweep_rank_ms(b), y2 ? " (least time per sample)" : "");
  const char *xcol = hooks ? "1:2:xtic(5)" : "1:2";
  fputs("plot ", gp);
  ds_gnuplot_string(gp, x->data);
  fprintf(gp, " index 0 using %s with linespoints lw 2 pt 7 title 'iteration', \\\n"
              "  '' index 0 using 1:3%s with linespoints lw 2 pt 5 title 'exposed communication%s'",
          xcol, exposed_axes, zoom ? " (right axis)" : "");
  if (y2)
    fputs(", \\\n  '' index 0 using 1:4 axes x1y2 with linespoints lw 1 dt 2 pt 4 "
          "title 'throughput (samples/s, right axis)'", gp);
  if (x->best >= 0) {
    fputs(", \\\n  '' index 1 using 1:2 with points pt 6 ps 3 lw 2 lc rgb 'black' title ", gp);
    ds_gnuplot_string(gp, mark);
  }
  if (x->m) {
    fputs(", \\\n  '' index 2 using 1:2 with points pt 9 ps 2 lc rgb 'dark-red' "
          "title 'measured iteration'", gp);
    if (x->m->has_exposed)
      fprintf(gp, ", \\\n  '' index 2 using 1:3%s with points pt 11 ps 2 lc rgb 'dark-green' "
              "title 'measured exposed communication'", exposed_axes);
  }
  fputc('\n', gp);
}

static void script(FILE *gp, const char *term, const char *out, void *ctx) {
  write_script(gp, term, out, ctx);
}

ds_status ds_sweep_plot(const struct ds_options *o, const struct ds_summary *rows,
                        int32_t n, const struct ds_measured *measured, struct ds_err *err) {
  int var = ds_sweep_single_var(o);
  if (var < 0 || n < 2)
    return ds_err_set(err, DS_EUSAGE, "--plot needs a sweep of exactly one option");
  struct ds_sweep_point *pts = malloc((size_t)n * sizeof *pts);
  if (!pts) return ds_err_set(err, DS_ENOMEM, "--plot: out of memory");
  ds_sweep_points(o, rows, n, pts);
  char data[4096];
  int fd = ds_temp_mkstemp_in_dir("ddpsim-sweep", data, sizeof data);
  if (fd < 0) {
    free(pts);
    return ds_err_set(err, DS_EIO, "--plot: cannot create a temporary file in %s (TMPDIR): %s",
                      ds_temp_dir(), strerror(errno));
  }
  close(fd);
  int32_t best = ds_sweep_best_row(o, rows, n);
  ds_status st = write_data(data, pts, rows, n, best, measured, err);
  struct script_ctx x = {data, o, (enum ds_sweep_var)var, pts, rows, n, best, measured};
  if (st == DS_OK) st = ds_gnuplot_draw(o->plot, script, &x, err);
  ds_temp_remove(data);
  free(pts);
  return st;
}
