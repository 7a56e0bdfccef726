/*
 * The comparison as text, CSV and JSON (compare.h; columns and metric
 * definitions in docs/analysis.md). Every number comes from struct
 * ds_compare; nothing is computed here but differences and ratios. Machine
 * formats print ms with six decimals (the traces' nanosecond) and relative
 * errors as fractions; an undefined ratio (measured 0, or a `_pct`
 * metric's, whose error is in points) is empty in CSV, null in JSON and
 * "n/a" in text, and so is an undefined value (ddp_overlap_pct without
 * communication). One trace alone prints its own values in
 * the same formats, without the measured and error columns.
 */
#include <math.h>
#include <string.h>

#include "analysis/compare.h"
#include "base/textout.h"


/* The text tables' name column: "%-28s", a trace's op name (user text)
 * with its control characters shown as '?' (ds_textout_put_printable). */
#define OP_NAME_WIDTH 28

static double rel(double pred, double meas) {
  return meas != 0 ? (pred - meas) / meas : NAN;
}

/* A metric's relative error; none for a percentage (`_pct`): its error is
 * already in points (58.19 vs 1.81 % is +56.4 points, not "+3122.9 %"). */
static double metric_rel(const struct ds_metric *m) {
  size_t n = strlen(m->name);
  if (n >= 4 && strcmp(m->name + n - 4, "_pct") == 0) return NAN;
  return rel(m->pred, m->meas);
}

/* A number, or the format's empty value when it is not finite. */
static void num(FILE *fp, double v, const char *empty) {
  if (isfinite(v)) fprintf(fp, "%.6f", v);
  else fputs(empty, fp);
}

static void print_csv_metrics(FILE *fp, const struct ds_compare *c) {
  fputs("metric,predicted,measured,abs_error,rel_error\n", fp);
  for (size_t i = 0; i < c->n_metrics; i++) {
    const struct ds_metric *m = &c->metrics[i];
    fprintf(fp, "%s,", m->name);
    num(fp, m->pred, "");
    fputc(',', fp);
    num(fp, m->meas, "");
    fputc(',', fp);
    num(fp, m->pred - m->meas, "");
    fputc(',', fp);
    num(fp, metric_rel(m), "");
    fputc('\n', fp);
  }
  struct {
    const char *name;
    const struct ds_dist *abs, *rel;
  } d[] = {{"op_dur_error", &c->dur_abs_ms, &c->dur_rel},
           {"op_start_error", &c->start_abs_ms, NULL},
           {"op_spread", &c->spread_sd_ms, &c->spread_cv}};
  for (size_t i = 0; i < sizeof d / sizeof *d; i++) {
    const char *stat[] = {"mean", "median", "p95", "max"};
    double a[] = {d[i].abs->mean, d[i].abs->median, d[i].abs->p95, d[i].abs->max};
    double r[4] = {NAN, NAN, NAN, NAN};
    if (d[i].rel && d[i].rel->n > 0) {
      r[0] = d[i].rel->mean;
      r[1] = d[i].rel->median;
      r[2] = d[i].rel->p95;
      r[3] = d[i].rel->max;
    }
    if (d[i].abs->n == 0) continue;
    for (int s = 0; s < 4; s++) {
      fprintf(fp, "%s_%s,,,%.6f,", d[i].name, stat[s], a[s]);
      num(fp, r[s], "");
      fputc('\n', fp);
    }
  }
}

static void print_csv_ops(FILE *fp, const struct ds_compare *c) {
  fputs("rank,id,stream,kind,name,bucket,pred_start_ms,pred_dur_ms,"
        "meas_start_ms,meas_dur_ms,meas_dur_sd_ms,dur_error_ms,dur_rel_error,"
        "start_error_ms\n", fp);
  for (size_t i = 0; i < c->n_ops; i++) {
    const struct ds_compare_op *o = &c->ops[i];
    fprintf(fp, "%d,%lld,%s,%s,", o->op->rank, (long long)o->op->id,
            ds_stream_name(o->op->stream), ds_op_kind_name(o->op->kind));
    ds_textout_csv_field(fp, o->op->name);
    fprintf(fp, ",%d,%.6f,%.6f,%.6f,%.6f,%.6f,%.6f,", o->op->bucket,
            o->pred_start_ms, o->pred_dur_ms, o->meas_start_ms, o->meas_dur_ms,
            o->meas_dur_sd_ms, o->pred_dur_ms - o->meas_dur_ms);
    num(fp, rel(o->pred_dur_ms, o->meas_dur_ms), "");
    fprintf(fp, ",%.6f\n", o->pred_start_ms - o->meas_start_ms);
  }
}

static void json_dist(FILE *fp, const char *name, const struct ds_dist *d,
                      const char *sep) {
  fprintf(fp, "    \"%s\": {\"n\": %zu, \"mean\": %.6f, \"median\": %.6f, "
          "\"p95\": %.6f, \"max\": %.6f}%s\n", name, d->n, d->mean, d->median,
          d->p95, d->max, sep);
}

static void json_op(FILE *fp, const struct ds_compare_op *o) {
  fprintf(fp, "{\"rank\": %d, \"id\": %lld, \"stream\": \"%s\", \"kind\": \"%s\", "
          "\"name\": ", o->op->rank, (long long)o->op->id,
          ds_stream_name(o->op->stream), ds_op_kind_name(o->op->kind));
  ds_textout_json_string(fp, o->op->name);
  fprintf(fp, ", \"bucket\": %d, \"predicted_start_ms\": %.6f, "
          "\"predicted_ms\": %.6f, \"measured_start_ms\": %.6f, "
          "\"measured_ms\": %.6f, \"measured_sd_ms\": %.6f, \"error_ms\": %.6f, "
          "\"rel_error\": ", o->op->bucket, o->pred_start_ms, o->pred_dur_ms,
          o->meas_start_ms, o->meas_dur_ms, o->meas_dur_sd_ms,
          o->pred_dur_ms - o->meas_dur_ms);
  num(fp, rel(o->pred_dur_ms, o->meas_dur_ms), "null");
  fputc('}', fp);
}

static void print_json(FILE *fp, const struct ds_compare *c, int per_op) {
  fputs("{\n  \"predicted\": {\"file\": ", fp);
  ds_textout_json_string(fp, c->pred_path);
  fprintf(fp, ", \"source\": \"%s\", \"iteration\": %d},\n", c->pred->source,
          c->pred_iter);
  fputs("  \"measured\": {\"file\": ", fp);
  ds_textout_json_string(fp, c->meas_path);
  fprintf(fp, ", \"source\": \"%s\", \"iterations\": [", c->meas->source);
  for (size_t i = 0; i < c->n_meas_iters; i++)
    fprintf(fp, "%s%d", i ? ", " : "", c->meas_iters[i]);
  fputs("], \"left_out\": [", fp);
  for (size_t i = 0; i < c->n_left_out; i++)
    fprintf(fp, "%s%d", i ? ", " : "", c->left_out[i]);
  fprintf(fp, "], \"skipped\": %d, \"iter_ms_sd\": %.6f},\n", c->n_skipped,
          c->meas_iter_sd_ms);
  fprintf(fp, "  \"world_size\": %d,\n  \"ops_joined\": %zu,\n  \"metrics\": [\n",
          c->world_size, c->n_ops);
  for (size_t i = 0; i < c->n_metrics; i++) {
    const struct ds_metric *m = &c->metrics[i];
    fprintf(fp, "    {\"metric\": \"%s\", \"predicted\": ", m->name);
    num(fp, m->pred, "null");
    fputs(", \"measured\": ", fp);
    num(fp, m->meas, "null");
    fputs(", \"abs_error\": ", fp);
    num(fp, m->pred - m->meas, "null");
    fputs(", \"rel_error\": ", fp);
    num(fp, metric_rel(m), "null");
    fprintf(fp, "}%s\n", i + 1 < c->n_metrics ? "," : "");
  }
  fputs("  ],\n  \"op_errors\": {\n", fp);
  json_dist(fp, "dur_abs_ms", &c->dur_abs_ms, ",");
  json_dist(fp, "dur_rel", &c->dur_rel, ",");
  json_dist(fp, "start_abs_ms", &c->start_abs_ms, "");
  fprintf(fp, "  },\n  \"spread\": {\n    \"iterations\": %zu,\n", c->n_meas_iters);
  json_dist(fp, "sd_ms", &c->spread_sd_ms, ",");
  json_dist(fp, "cv", &c->spread_cv, ",");
  fprintf(fp, "    \"ops_within_one_sd\": %zu\n  },\n  \"top_ops\": [\n",
          c->n_within_spread);
  for (size_t i = 0; i < c->n_top; i++) {
    fputs("    ", fp);
    json_op(fp, &c->ops[c->top[i]]);
    fprintf(fp, "%s\n", i + 1 < c->n_top ? "," : "");
  }
  fprintf(fp, "  ]%s\n", per_op ? "," : "");
  if (per_op) {
    fputs("  \"ops\": [\n", fp);
    for (size_t i = 0; i < c->n_ops; i++) {
      fputs("    ", fp);
      json_op(fp, &c->ops[i]);
      fprintf(fp, "%s\n", i + 1 < c->n_ops ? "," : "");
    }
    fputs("  ]\n", fp);
  }
  fputs("}\n", fp);
}

/* A metric's value in text after a space, 12 wide (signed: an error), or "n/a"
 * right-aligned when undefined (ddp_overlap_pct without communication). */
static void text_value(FILE *fp, double v, int sign) {
  if (!isfinite(v)) fprintf(fp, " %12s", "n/a");
  else if (sign) fprintf(fp, " %+12.4f", v);
  else fprintf(fp, " %12.4f", v);
}

static void text_rel(FILE *fp, double r) {
  if (isfinite(r)) fprintf(fp, " %+8.1f %%", 100 * r);
  else fputs("      n/a", fp);
}

static void text_dist(FILE *fp, const char *label, const struct ds_dist *d,
                      double scale) {
  fprintf(fp, "  %-24s %10.3f %10.3f %10.3f %10.3f   (%zu ops)\n", label,
          d->mean * scale, d->median * scale, d->p95 * scale, d->max * scale, d->n);
}

static void print_text(FILE *fp, const struct ds_compare *c, int per_op) {
  /* paths and labels as given, their control characters shown as '?' */
  fputs("predicted  ", fp);
  ds_textout_put_printable(fp, c->pred_path, 0);
  fprintf(fp, " (%s): iteration %d", c->pred->source, c->pred_iter);
  if (c->iter_choice == DS_ITER_MEDIAN) { /* a measured first trace (compare.c) */
    char note[128];
    ds__compare_iter_note(c, note, sizeof note);
    fprintf(fp, " (%s)", note);
  }
  fputc('\n', fp);
  fputs("measured   ", fp);
  ds_textout_put_printable(fp, c->meas_path, 0);
  fprintf(fp, " (%s): %zu iteration%s (%d..%d); metrics and op times: "
          "the mean over them\n",
          c->meas->source, c->n_meas_iters,
          c->n_meas_iters == 1 ? "" : "s", c->meas_iters[0],
          c->meas_iters[c->n_meas_iters - 1]);
  if (c->n_skipped > 0)
    fprintf(fp, "skipped    the first %d measured iteration%s (--skip-measured)\n",
            c->n_skipped, c->n_skipped == 1 ? "" : "s");
  if (c->n_left_out > 0) {
    fprintf(fp, "left out   measured iteration%s ", c->n_left_out == 1 ? "" : "s");
    for (size_t i = 0; i < c->n_left_out; i++)
      fprintf(fp, "%s%d", i ? ", " : "", c->left_out[i]);
    fprintf(fp, ": not predicted iteration %d's schedule%s\n", c->pred_iter,
            strcmp(c->meas->source, "sim") == 0
                ? " (a ddpsim trace's iterations up to DDP's bucket rebuild)" : "");
  }
  fprintf(fp, "joined     %zu ops on %d rank%s by (rank, op id); times from each "
          "iteration's start\n\n", c->n_ops, c->world_size,
          c->world_size == 1 ? "" : "s");
  fprintf(fp, "%-24s %12s %12s %12s %10s\n", "metric", "predicted", "measured",
          "error", "rel");
  for (size_t i = 0; i < c->n_metrics; i++) {
    const struct ds_metric *m = &c->metrics[i];
    fprintf(fp, "%-24s", m->name);
    text_value(fp, m->pred, 0);
    text_value(fp, m->meas, 0);
    text_value(fp, m->pred - m->meas, 1);
    text_rel(fp, metric_rel(m));
    fputc('\n', fp);
  }
  /* the measured column holds means; ddpreal's p50 and --plot's iteration
   * are the median one: both, so neither reads as the other */
  fprintf(fp, "(ms unless _pct; measured: the mean over the %zu measured iteration%s; "
          "error = predicted - measured)\n", c->n_meas_iters,
          c->n_meas_iters == 1 ? "" : "s");
  fprintf(fp, "measured iter_ms: mean %.4f, median %.4f (iteration %d, which --plot draws), "
          "stddev %.4f ms\n\n", ds_compare_metric(c, "iter_ms")->meas,
          c->meas_iter_median_ms, c->plot_meas_iter, c->meas_iter_sd_ms);
  fprintf(fp, "op errors (over ops)       %10s %10s %10s %10s\n", "mean", "median",
          "p95", "max");
  text_dist(fp, "|duration error| us", &c->dur_abs_ms, 1e3);
  text_dist(fp, "|duration error| %", &c->dur_rel, 100);
  text_dist(fp, "|start error| us", &c->start_abs_ms, 1e3);
  if (c->n_meas_iters > 1) {
    fprintf(fp, "run-to-run spread over %zu measured iterations:\n", c->n_meas_iters);
    text_dist(fp, "per-op stddev us", &c->spread_sd_ms, 1e3);
    text_dist(fp, "per-op stddev/mean %", &c->spread_cv, 100);
    int larger = c->dur_rel.median > c->spread_cv.median;
    fprintf(fp, "  the prediction error (median %.2f %%) is %s than the run-to-run "
            "spread (median %.2f %%); %zu of %zu ops are within one stddev\n",
            100 * c->dur_rel.median, larger ? "larger" : "not larger",
            100 * c->spread_cv.median, c->n_within_spread, c->n_ops);
  } else {
    fputs("run-to-run spread: one measured iteration, none to report\n", fp);
  }
  fprintf(fp, "\nlargest duration errors\n  %8s %5s %-7s %-10s %-28s %12s %12s %12s\n",
          "op id", "rank", "stream", "kind", "name", "predicted us", "measured us", "error us");
  for (size_t i = 0; i < c->n_top; i++) {
    const struct ds_compare_op *o = &c->ops[c->top[i]];
    fprintf(fp, "  %8lld %5d %-7s %-10s ", (long long)o->op->id, o->op->rank,
            ds_stream_name(o->op->stream), ds_op_kind_name(o->op->kind));
    ds_textout_put_printable(fp, o->op->name, OP_NAME_WIDTH);
    fprintf(fp, " %12.3f %12.3f %+12.3f\n", o->pred_dur_ms * 1e3, o->meas_dur_ms * 1e3,
            (o->pred_dur_ms - o->meas_dur_ms) * 1e3);
  }
  if (!per_op) return;
  fprintf(fp, "\nper op (ms from the iteration start)\n  %5s %8s %-7s %-10s %-28s %10s "
          "%10s %10s %10s %10s\n", "rank", "op id", "stream", "kind", "name", "pred start",
          "pred dur", "meas start", "meas dur", "meas sd");
  for (size_t i = 0; i < c->n_ops; i++) {
    const struct ds_compare_op *o = &c->ops[i];
    fprintf(fp, "  %5d %8lld %-7s %-10s ", o->op->rank, (long long)o->op->id,
            ds_stream_name(o->op->stream), ds_op_kind_name(o->op->kind));
    ds_textout_put_printable(fp, o->op->name, OP_NAME_WIDTH);
    fprintf(fp, " %10.4f %10.4f %10.4f %10.4f %10.4f\n", o->pred_start_ms, o->pred_dur_ms,
            o->meas_start_ms, o->meas_dur_ms, o->meas_dur_sd_ms);
  }
}

void ds__compare_iter_note(const struct ds_compare *c, char *buf, size_t cap) {
  switch (c->iter_choice) {
  case DS_ITER_MEDIAN:
    snprintf(buf, cap, "median iteration time of %zu, %d..%d", c->n_iters,
             c->first_iter, c->last_iter);
    break;
  case DS_ITER_LAST:
    snprintf(buf, cap, "the last of %d..%d", c->first_iter, c->last_iter);
    break;
  default:
    snprintf(buf, cap, "as given; iterations %d..%d", c->first_iter, c->last_iter);
    break;
  }
}

static const char *const choice_names[] = {"given", "last", "median"};

/* One trace alone (compare.h): its own values, no measured side. */
static void print_one_csv(FILE *fp, const struct ds_compare *c, int per_op) {
  if (!per_op) {
    fputs("metric,value\n", fp);
    for (size_t i = 0; i < c->n_metrics; i++) {
      fprintf(fp, "%s,", c->metrics[i].name);
      num(fp, c->metrics[i].pred, "");
      fputc('\n', fp);
    }
    return;
  }
  fputs("rank,id,stream,kind,name,bucket,start_ms,dur_ms\n", fp);
  for (size_t i = 0; i < c->n_ops; i++) {
    const struct ds_compare_op *o = &c->ops[i];
    fprintf(fp, "%d,%lld,%s,%s,", o->op->rank, (long long)o->op->id,
            ds_stream_name(o->op->stream), ds_op_kind_name(o->op->kind));
    ds_textout_csv_field(fp, o->op->name);
    fprintf(fp, ",%d,%.6f,%.6f\n", o->op->bucket, o->pred_start_ms, o->pred_dur_ms);
  }
}

static void print_one_json(FILE *fp, const struct ds_compare *c, int per_op) {
  fputs("{\n  \"trace\": {\"file\": ", fp);
  ds_textout_json_string(fp, c->pred_path);
  fprintf(fp, ", \"source\": \"%s\", \"iteration\": %d, \"chosen\": \"%s\", "
          "\"iterations\": {\"first\": %d, \"last\": %d, \"count\": %zu}},\n",
          c->pred->source, c->pred_iter, choice_names[c->iter_choice], c->first_iter,
          c->last_iter, c->n_iters);
  fprintf(fp, "  \"world_size\": %d,\n  \"n_ops\": %zu,\n  \"metrics\": [\n",
          c->world_size, c->n_ops);
  for (size_t i = 0; i < c->n_metrics; i++) {
    fprintf(fp, "    {\"metric\": \"%s\", \"value\": ", c->metrics[i].name);
    num(fp, c->metrics[i].pred, "null");
    fprintf(fp, "}%s\n", i + 1 < c->n_metrics ? "," : "");
  }
  fprintf(fp, "  ]%s\n", per_op ? "," : "");
  if (per_op) {
    fputs("  \"ops\": [\n", fp);
    for (size_t i = 0; i < c->n_ops; i++) {
      const struct ds_compare_op *o = &c->ops[i];
      fprintf(fp, "    {\"rank\": %d, \"id\": %lld, \"stream\": \"%s\", \"kind\": "
              "\"%s\", \"name\": ", o->op->rank, (long long)o->op->id,
              ds_stream_name(o->op->stream), ds_op_kind_name(o->op->kind));
      ds_textout_json_string(fp, o->op->name);
      fprintf(fp, ", \"bucket\": %d, \"start_ms\": %.6f, \"ms\": %.6f}%s\n",
              o->op->bucket, o->pred_start_ms, o->pred_dur_ms,
              i + 1 < c->n_ops ? "," : "");
    }
    fputs("  ]\n", fp);
  }
  fputs("}\n", fp);
}

static void print_one_text(FILE *fp, const struct ds_compare *c, int per_op) {
  char note[128];
  ds__compare_iter_note(c, note, sizeof note);
  fputs("trace      ", fp);
  ds_textout_put_printable(fp, c->label, 0);
  fprintf(fp, " (%s): iteration %d (%s)\n", c->pred->source, c->pred_iter, note);
  fprintf(fp, "ops        %zu ops on %d rank%s; times from the iteration's start\n\n",
          c->n_ops, c->world_size, c->world_size == 1 ? "" : "s");
  fprintf(fp, "%-24s %12s\n", "metric", "value");
  for (size_t i = 0; i < c->n_metrics; i++) {
    fprintf(fp, "%-24s", c->metrics[i].name);
    text_value(fp, c->metrics[i].pred, 0);
    fputc('\n', fp);
  }
  fputs("(ms unless _pct)\n", fp);
  if (!per_op) return;
  fprintf(fp, "\nper op (ms from the iteration start)\n  %5s %8s %-7s %-10s %-28s %6s "
          "%10s %10s\n", "rank", "op id", "stream", "kind", "name", "bucket", "start", "dur");
  for (size_t i = 0; i < c->n_ops; i++) {
    const struct ds_compare_op *o = &c->ops[i];
    fprintf(fp, "  %5d %8lld %-7s %-10s ", o->op->rank, (long long)o->op->id,
            ds_stream_name(o->op->stream), ds_op_kind_name(o->op->kind));
    ds_textout_put_printable(fp, o->op->name, OP_NAME_WIDTH);
    fprintf(fp, " %6d %10.4f %10.4f\n", o->op->bucket, o->pred_start_ms, o->pred_dur_ms);
  }
}

void ds_compare_print(FILE *fp, const struct ds_compare *c,
                      enum ds_compare_format fmt, int per_op) {
  switch (fmt) {
  case DS_COMPARE_CSV:
    if (!c->meas) print_one_csv(fp, c, per_op);
    else if (per_op) print_csv_ops(fp, c);
    else print_csv_metrics(fp, c);
    break;
  case DS_COMPARE_JSON:
    if (!c->meas) print_one_json(fp, c, per_op);
    else print_json(fp, c, per_op);
    break;
  default:
    if (!c->meas) print_one_text(fp, c, per_op);
    else print_text(fp, c, per_op);
    break;
  }
}
