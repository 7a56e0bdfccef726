/*
 * Measured points beside a predicted sweep (see sweep_measured.h). The
 * table is read by base/csvread.h, so every row knows the line it began
 * on; the comparison judges the optimum by the same cost as the sweep's
 * closing line, so "the optima match" means the prediction would have
 * chosen the configuration the measurements favour.
 */
#include "sim/cli/sweep_measured.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/csvread.h"
#include "base/textout.h"
#include "base/units.h"

/* Room for a hook's name: "none", "fp16", "bf16" or "powersgd:RANK"
 * (comm_hook.c ds_comm_hook_name), at most 20 bytes. */
#define HOOK_NAME_MAX 32

/* The iteration times a table may give, in ms: from 1 us, the printed
 * resolution (%.3f ms; below it a row prints 0.000 and its error is
 * astronomical), to 1e6 s, the bound of every time a topology or
 * calibration gives (DS_UNITS_TIME_MAX_NS); past it a row printed 300
 * digits. */
#define MEASURED_MIN_MS 1e-3
#define MEASURED_MAX_MS (DS_UNITS_TIME_MAX_NS / 1e6)

/* The columns and the values of the row being read. */
struct reader {
  const struct ds_options *o;
  enum ds_sweep_var var;
  struct ds_measured *out;
  int x_col, iter_col, exposed_col;
  double x, iter, exposed;
};

/* The index of the swept hook named text ("fp16", " powersgd:4 "), or -1. */
static int hook_index(const struct ds_options *o, const char *text) {
  char buf[64], name[HOOK_NAME_MAX];
  struct ds_comm_hook h;
  struct ds_err e;
  while (*text == ' ' || *text == '\t') text++;
  snprintf(buf, sizeof buf, "%s", text);
  for (size_t n = strlen(buf); n > 0 && (buf[n - 1] == ' ' || buf[n - 1] == '\t' ||
                                         buf[n - 1] == '\r');)
    buf[--n] = '\0';
  if (ds_comm_hook_parse("comm_hook", buf, &h, &e) != DS_OK) return -1;
  for (int32_t k = 0; k < o->sweep[DS_VAR_COMM_HOOK].n; k++) {
    char have[HOOK_NAME_MAX];
    ds_comm_hook_name(&o->comm_hooks[k], have, sizeof have);
    ds_comm_hook_name(&h, name, sizeof name);
    if (strcmp(have, name) == 0) return (int)k;
  }
  return -1;
}

static void on_header(struct ds_csvread *t) {
  struct reader *r = t->ctx;
  /* names trimmed and each named once by base/csvread.c */
  const char *xname = ds_options_var_column(r->var);
  r->x_col = ds_csvread_column(t, xname);
  r->iter_col = ds_csvread_column(t, "iter_ms");
  r->exposed_col = ds_csvread_column(t, "exposed_comm_ms");
  r->out->has_exposed = r->exposed_col >= 0;
  /* ddpsim's own --format json is the likeliest such file: say so, since
   * "no column" alone sends the user looking for a misspelt name */
  int json = t->n_cols > 0 && (t->names[0][0] == '{' || t->names[0][0] == '[');
  if (r->x_col < 0 || r->iter_col < 0)
    t->st = ds_err_set(t->err, DS_EINPUT,
                       "%s:%zu: the header row has no %s column (expected %s, the swept "
                       "option %s's value, and iter_ms; exposed_comm_ms optional)%s",
                       t->path, t->row_line, r->x_col < 0 ? xname : "iter_ms", xname,
                       ds_options_var_flag(r->var),
                       json ? "; this looks like JSON: give a CSV table (ddpsim's "
                              "--format csv output is one)" : "");
}

static void on_field(struct ds_csvread *t, int c, const char *text, size_t len) {
  struct reader *r = t->ctx;
  if (c == r->x_col) {
    if (r->var == DS_VAR_COMM_HOOK) {
      int k = hook_index(r->o, text);
      /* every swept hook's name, whole: up to DS_MAX_SWEEP of them */
      char swept[DS_MAX_SWEEP * (HOOK_NAME_MAX + 2)] = "";
      size_t used = 0;
      for (int32_t j = 0; k < 0 && j < r->o->sweep[DS_VAR_COMM_HOOK].n; j++) {
        char name[HOOK_NAME_MAX];
        ds_comm_hook_name(&r->o->comm_hooks[j], name, sizeof name);
        ds_textout_append(swept, sizeof swept, &used, "%s%s", j ? ", " : "", name);
      }
      char what[sizeof swept + 32];
      snprintf(what, sizeof what, "one of the swept hooks (%s)", swept);
      if (k < 0) ds_csvread_bad_value(t, c, what, text, len);
      else r->x = k;
    } else if (ds_csvread_number(text, &r->x) != 0 || r->x < 0) {
      ds_csvread_bad_value(t, c, "a number >= 0", text, len);
    }
  } else if (c == r->iter_col) {
    if (ds_csvread_number(text, &r->iter) != 0 || !(r->iter >= MEASURED_MIN_MS) ||
        r->iter > MEASURED_MAX_MS)
      ds_csvread_bad_value(t, c, "an iteration time in ms from 0.001 to 1e9", text, len);
  } else if (c == r->exposed_col) {
    if (ds_csvread_blank(text)) r->exposed = NAN; /* not measured for this row */
    else if (ds_csvread_number(text, &r->exposed) != 0 || r->exposed < 0 ||
             r->exposed > MEASURED_MAX_MS)
      ds_csvread_bad_value(t, c, "a time in ms from 0 to 1e9, or nothing", text, len);
  }
}

static void on_row(struct ds_csvread *t) {
  struct reader *r = t->ctx;
  struct ds_measured *m = r->out;
  /* communication not hidden under compute is part of the iteration */
  if (r->exposed_col >= 0 && r->exposed > r->iter) {
    t->st = ds_err_set(t->err, DS_EINPUT,
                       "%s:%zu:%d: column 'exposed_comm_ms': %g ms exceeds the row's "
                       "iter_ms, %g ms (exposed communication is part of the iteration)",
                       t->path, t->row_line, r->exposed_col + 1, r->exposed, r->iter);
    return;
  }
  if (m->n == m->cap) {
    int32_t cap = m->cap ? 2 * m->cap : 16;
    struct ds_measured_point *p = realloc(m->p, (size_t)cap * sizeof *p);
    if (!p) {
      t->st = ds_err_set(t->err, DS_ENOMEM, "%s: out of memory", t->path);
      return;
    }
    m->p = p;
    m->cap = cap;
  }
  m->p[m->n++] = (struct ds_measured_point){r->x, r->iter,
                                            r->exposed_col >= 0 ? r->exposed : NAN,
                                            (int64_t)t->row_line};
}

ds_status ds_measured_load(const struct ds_options *o, struct ds_measured *out,
                           struct ds_err *err) {
  memset(out, 0, sizeof *out);
  int var = ds_sweep_single_var(o);
  if (var < 0)
    return ds_err_set(err, DS_EUSAGE, "option --measured needs a sweep of exactly one option");
  struct reader r = {.o = o, .var = (enum ds_sweep_var)var, .out = out};
  struct ds_csvread t = {.path = o->measured, .err = err, .max_cols = DS_CSVREAD_MAX_COLS,
                         .on_header = on_header, .on_field = on_field, .on_row = on_row,
                         .ctx = &r};
  ds_status st = ds_csvread_file(&t, "--measured");
  if (st != DS_OK) ds_measured_release(out);
  return st;
}

void ds_measured_release(struct ds_measured *m) {
  if (!m) return;
  free(m->p);
  memset(m, 0, sizeof *m);
}

static int same_x(double a, double b) {
  return fabs(a - b) <= 1e-9 * fmax(1.0, fmax(fabs(a), fabs(b)));
}

static double cost(int per_sample, double x, double ms) {
  return per_sample && x > 0 ? ms / x : ms;
}

/* The predicted time and exposed communication at x. */
static void predict(const struct ds_sweep_point *pred, int32_t n, double x,
                    struct ds_measured_error *e) {
  int32_t lo = -1, hi = -1;
  e->where = DS_MEASURED_OUTSIDE;
  e->predicted_ms = e->predicted_exposed_ms = NAN;
  for (int32_t i = 0; i < n; i++) {
    if (same_x(pred[i].x, x)) {
      e->where = DS_MEASURED_EXACT;
      e->predicted_ms = pred[i].iter_ms;
      e->predicted_exposed_ms = pred[i].exposed_comm_ms;
      return;
    }
    if (pred[i].x < x && (lo < 0 || pred[i].x > pred[lo].x)) lo = i;
    if (pred[i].x > x && (hi < 0 || pred[i].x < pred[hi].x)) hi = i;
  }
  if (lo < 0 || hi < 0) return;
  double t = (x - pred[lo].x) / (pred[hi].x - pred[lo].x);
  e->where = DS_MEASURED_INTERPOLATED;
  e->predicted_ms = pred[lo].iter_ms + t * (pred[hi].iter_ms - pred[lo].iter_ms);
  e->predicted_exposed_ms =
      pred[lo].exposed_comm_ms + t * (pred[hi].exposed_comm_ms - pred[lo].exposed_comm_ms);
}

ds_status ds_measured_compare(const struct ds_sweep_point *pred, int32_t n_pred,
                              int per_sample, const struct ds_measured *m,
                              struct ds_measured_cmp *cmp, struct ds_err *err) {
  memset(cmp, 0, sizeof *cmp);
  cmp->pred_best_measured = -1;
  cmp->e = calloc((size_t)(m->n > 0 ? m->n : 1), sizeof *cmp->e);
  if (!cmp->e) return ds_err_set(err, DS_ENOMEM, "--measured: out of memory");
  /* the predicted optimum among the points that fit in memory, as the
   * closing line's best (sweep.h); over all when none fits */
  int any_fit = 0;
  for (int32_t i = 0; i < n_pred; i++) any_fit |= !pred[i].over_memory;
  cmp->pred_best = -1;
  for (int32_t i = 0; i < n_pred; i++)
    if ((!any_fit || !pred[i].over_memory) &&
        (cmp->pred_best < 0 || cost(per_sample, pred[i].x, pred[i].iter_ms) <
                                   cost(per_sample, pred[cmp->pred_best].x,
                                        pred[cmp->pred_best].iter_ms)))
      cmp->pred_best = i;
  if (cmp->pred_best < 0) cmp->pred_best = 0;
  /* The measured best is over every measured point, those outside the
   * predicted range too (the measurements may favour a value the sweep did
   * not reach: the optima then differ); the prediction's pick is over the
   * compared ones. */
  for (int32_t k = 0; k < m->n; k++) {
    const struct ds_measured_point *p = &m->p[k];
    struct ds_measured_error *e = &cmp->e[k];
    if (cost(per_sample, p->x, p->iter_ms) <
        cost(per_sample, m->p[cmp->meas_best].x, m->p[cmp->meas_best].iter_ms))
      cmp->meas_best = k;
    predict(pred, n_pred, p->x, e);
    if (e->where == DS_MEASURED_OUTSIDE) {
      e->err_ms = e->err_rel = NAN;
      continue;
    }
    e->err_ms = e->predicted_ms - p->iter_ms;
    e->err_rel = e->err_ms / p->iter_ms;
    cmp->n_compared++;
    cmp->mean_abs_ms += fabs(e->err_ms);
    cmp->mean_abs_rel += fabs(e->err_rel);
    if (fabs(e->err_ms) > cmp->max_abs_ms) cmp->max_abs_ms = fabs(e->err_ms);
    if (fabs(e->err_rel) > cmp->max_abs_rel) cmp->max_abs_rel = fabs(e->err_rel);
    /* of rows repeating one x (equal predictions), the best measured */
    int32_t b = cmp->pred_best_measured;
    if (b < 0 ||
        cost(per_sample, p->x, e->predicted_ms) <
            cost(per_sample, m->p[b].x, cmp->e[b].predicted_ms) ||
        (same_x(p->x, m->p[b].x) &&
         cost(per_sample, p->x, p->iter_ms) < cost(per_sample, m->p[b].x, m->p[b].iter_ms)))
      cmp->pred_best_measured = k;
  }
  if (cmp->n_compared > 0) {
    cmp->mean_abs_ms /= cmp->n_compared;
    cmp->mean_abs_rel /= cmp->n_compared;
  }
  cmp->match = cmp->pred_best_measured >= 0 &&
               same_x(m->p[cmp->pred_best_measured].x, m->p[cmp->meas_best].x);
  return DS_OK;
}

void ds_measured_cmp_release(struct ds_measured_cmp *cmp) {
  if (!cmp) return;
  free(cmp->e);
  cmp->e = NULL;
}

/* A value of the swept option as text: a hook's name, else %g. */
static void x_text(const struct ds_options *o, enum ds_sweep_var var, double x, char *buf,
                   size_t cap) {
  if (var == DS_VAR_COMM_HOOK && x >= 0 && x < o->sweep[DS_VAR_COMM_HOOK].n)
    ds_comm_hook_name(&o->comm_hooks[(int)x], buf, cap);
  else snprintf(buf, cap, "%g", x);
}

void ds_measured_print(FILE *out, const struct ds_options *o, const struct ds_sweep_point *pred,
                       int32_t n_pred, const struct ds_measured *m,
                       const struct ds_measured_cmp *cmp) {
  enum ds_sweep_var var = (enum ds_sweep_var)ds_sweep_single_var(o);
  const char *col = ds_options_var_column(var);
  int per_sample = ds_sweep_per_sample(var);
  double lo = pred[0].x, hi = pred[0].x;
  for (int32_t i = 1; i < n_pred; i++) {
    lo = fmin(lo, pred[i].x);
    hi = fmax(hi, pred[i].x);
  }
  fprintf(out, "\nmeasured: %s, %d point%s (error = predicted - measured)\n",
          ds_csvread_input_name(o->measured),
          m->n, m->n == 1 ? "" : "s");
  fprintf(out, "  %16s  %12s  %12s  %10s  %8s", col, "measured ms", "predicted ms",
          "error ms", "error %");
  if (m->has_exposed) fprintf(out, "  %12s  %12s", "exposed meas", "exposed pred");
  fputc('\n', out);
  for (int32_t k = 0; k < m->n; k++) {
    const struct ds_measured_point *p = &m->p[k];
    const struct ds_measured_error *e = &cmp->e[k];
    char xs[32];
    x_text(o, var, p->x, xs, sizeof xs);
    fprintf(out, "  %16s  %12.3f", xs, p->iter_ms);
    if (e->where == DS_MEASURED_OUTSIDE) {
      fprintf(out, "  outside the predicted %g to %g: not compared\n", lo, hi);
      continue;
    }
    fprintf(out, "  %12.3f  %+10.3f  %+7.1f%%", e->predicted_ms, e->err_ms,
            100 * e->err_rel);
    if (m->has_exposed) {
      if (isnan(p->exposed_comm_ms)) fprintf(out, "  %12s", "-");
      else fprintf(out, "  %12.3f", p->exposed_comm_ms);
      fprintf(out, "  %12.3f", e->predicted_exposed_ms);
    }
    if (e->where == DS_MEASURED_INTERPOLATED) fputs("  (interpolated)", out);
    fputc('\n', out);
  }
  if (cmp->n_compared == 0) {
    fprintf(out, "  no measured %s lies within the predicted %g to %g\n", col, lo, hi);
    return;
  }
  fprintf(out, "  |error|: mean %.3f ms (%.1f%%), largest %.3f ms (%.1f%%), over %d of %d "
          "points\n", cmp->mean_abs_ms, 100 * cmp->mean_abs_rel, cmp->max_abs_ms,
          100 * cmp->max_abs_rel, cmp->n_compared, m->n);
  const struct ds_measured_point *mb = &m->p[cmp->meas_best],
                                  *pb = &m->p[cmp->pred_best_measured];
  char pbest[32], mbest[32], pmeas[32];
  x_text(o, var, pred[cmp->pred_best].x, pbest, sizeof pbest);
  x_text(o, var, mb->x, mbest, sizeof mbest);
  x_text(o, var, pb->x, pmeas, sizeof pmeas);
  fprintf(out, "optimum (%s): predicted %s=%s (%.3f ms); measured %s=%s (%.3f ms); of the "
          "measured points the prediction ranks %s=%s best: ",
          per_sample ? "least time per sample" : "least iteration time", col, pbest,
          pred[cmp->pred_best].iter_ms, col, mbest, mb->iter_ms, col, pmeas);
  if (cmp->match) {
    fputs("the optima match\n", out);
    return;
  }
  double cb = cost(per_sample, mb->x, mb->iter_ms), cp = cost(per_sample, pb->x, pb->iter_ms);
  fprintf(out, "they differ (measured there: %.3f ms, %.1f%% %s than the measured best)\n",
          pb->iter_ms, cb > 0 ? 100 * (cp - cb) / cb : 0.0,
          per_sample ? "more time per sample" : "slower");
}

ds_status ds_measured_report(FILE *out, const struct ds_options *o,
                             const struct ds_summary *rows, int32_t n,
                             const struct ds_measured *m, struct ds_err *err) {
  int var = ds_sweep_single_var(o);
  if (var < 0 || n < 1)
    return ds_err_set(err, DS_EUSAGE, "option --measured needs a sweep of exactly one option");
  struct ds_sweep_point *pts = malloc((size_t)n * sizeof *pts);
  struct ds_measured_cmp cmp = {0};
  if (!pts) return ds_err_set(err, DS_ENOMEM, "--measured: out of memory");
  ds_sweep_points(o, rows, n, pts);
  ds_status st = ds_measured_compare(pts, n, ds_sweep_per_sample((enum ds_sweep_var)var), m,
                                     &cmp, err);
  if (st == DS_OK) ds_measured_print(out, o, pts, n, m, &cmp);
  ds_measured_cmp_release(&cmp);
  free(pts);
  return st;
}
