/*
 * The schedule and trace writers (schema in traces/SCHEMA.md): the
 * preamble, the header row from the column list, one row per op, the end
 * line, all into an atomic file. Numbers are printed so that the reader
 * (trace_read.c, trace_fields.c) parses back the identical value.
 */
#include "traces/trace.h"
#include "traces/trace_impl.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/atomic_file.h"
#include "base/textout.h"

/* ---- number formatting ------------------------------------------------ */

/* The shortest of %.15g, %.16g, %.17g that reads back as the same double:
 * 26214400 stays "26214400", 0.1 stays "0.1", and every value round-trips
 * because 17 significant digits always do. */
static void fmt_double(char *buf, size_t n, double v) {
  for (int prec = 15; prec <= 17; prec++) {
    snprintf(buf, n, "%.*g", prec, v);
    if (strtod(buf, NULL) == v) return;
  }
}

/* Integer nanoseconds as microseconds with exactly three decimals, printed
 * from integers so no digit is lost. */
void ds__trace_fmt_time_ns(char *buf, size_t n, int64_t ns) {
  uint64_t mag = ns < 0 ? (uint64_t)0 - (uint64_t)ns : (uint64_t)ns;
  snprintf(buf, n, "%s%" PRIu64 ".%03" PRIu64, ns < 0 ? "-" : "", mag / 1000,
           mag % 1000);
}

/* ---- writer ----------------------------------------------------------- */

/* A text field: quoted only where it must be (base/textout.h). */
static int write_text(FILE *fp, const char *s) { return ds_textout_csv_field(fp, s) == 0 ? 0 : -1; }

/* A `#` line; line breaks in the value would end the comment early. */
static void write_comment(FILE *fp, const char *key, const char *value) {
  fprintf(fp, "# %s: ", key);
  for (const char *p = value; *p; p++)
    fputc(*p == '\n' || *p == '\r' ? ' ' : *p, fp);
  fputc('\n', fp);
}

/* Free-form provenance lines (device, ranks, library versions): each line
 * becomes one `#` line, so nothing in it can end the preamble early. */
static void write_extra(FILE *fp, const char *extra) {
  for (const char *p = extra; *p;) {
    size_t len = strcspn(p, "\r\n");
    const char *line = p;
    p += len;
    p += strspn(p, "\r\n");
    while (len && (*line == ' ' || *line == '\t')) line++, len--;
    if (len == 0) continue;
    if (*line == '#')
      fprintf(fp, "%.*s\n", (int)len, line);
    else
      fprintf(fp, "# %.*s\n", (int)len, line);
  }
}

static void write_preamble(FILE *fp, const char *schema,
                           const struct ds_csv_meta *meta, size_t n_cols) {
  fprintf(fp, "# %s v%d\n", schema, DS_SCHEMA_VERSION);
  if (meta) {
    if (meta->program) write_comment(fp, "program", meta->program);
    if (meta->inputs) write_comment(fp, "inputs", meta->inputs);
    if (!meta->no_seed) fprintf(fp, "# seed: %" PRIu64 "\n", meta->seed);
    if (meta->extra) write_extra(fp, meta->extra);
  }
  for (size_t c = 0; c < n_cols; c++)
    fprintf(fp, "%s%s", c ? "," : "", ds__trace_col_names[c]);
  fputc('\n', fp);
}

/* The end line, after the last row: a file cut short anywhere (between rows,
 * inside one, inside this line) lacks it, and one that lost or gained rows
 * counts them wrong, so a reader refuses both (SCHEMA.md, "The end line"). */
static int write_end(FILE *fp, size_t n_rows) {
  return fprintf(fp, "# end: %zu row%s\n", n_rows, n_rows == 1 ? "" : "s") < 0 ? -1 : 0;
}

/* Writes one field; trace-only columns need t and row. */
static int write_field(FILE *fp, enum col c, const struct ds_schedule *s,
                       const struct ds_op *o, const struct ds_trace *t,
                       const struct ds_trace_row *row) {
  char buf[64];
  switch (c) {
    case COL_ID: return fprintf(fp, "%" PRId64, o->id) < 0 ? -1 : 0;
    case COL_RANK: return fprintf(fp, "%" PRId32, o->rank) < 0 ? -1 : 0;
    case COL_STREAM: return write_text(fp, ds_stream_name(o->stream));
    case COL_KIND: return write_text(fp, ds_op_kind_name(o->kind));
    case COL_NAME: return write_text(fp, o->name ? o->name : "");
    case COL_LAYER: return fprintf(fp, "%" PRId32, o->layer) < 0 ? -1 : 0;
    case COL_BUCKET: return fprintf(fp, "%" PRId32, o->bucket) < 0 ? -1 : 0;
    case COL_COLL: return fprintf(fp, "%" PRId64, o->coll) < 0 ? -1 : 0;
    case COL_ROOT: return fprintf(fp, "%" PRId32, o->root) < 0 ? -1 : 0;
    case COL_ALGO: return write_text(fp, o->algo ? o->algo : "");
    case COL_BYTES: fmt_double(buf, sizeof buf, o->bytes); break;
    case COL_FLOPS: fmt_double(buf, sizeof buf, o->flops); break;
    case COL_DUR_US: fmt_double(buf, sizeof buf, o->dur_us); break;
    case COL_DEPS: {
      const int64_t *deps = ds_schedule_deps(s, o);
      for (uint32_t k = 0; k < o->dep_count; k++)
        if (fprintf(fp, "%s%" PRId64, k ? " " : "", deps[k]) < 0) return -1;
      return 0;
    }
    case COL_SOURCE: return write_text(fp, t->source);
    case COL_ITER: return fprintf(fp, "%" PRId32, row->iter) < 0 ? -1 : 0;
    case COL_START_US: ds__trace_fmt_time_ns(buf, sizeof buf, row->start_ns); break;
    case COL_END_US: ds__trace_fmt_time_ns(buf, sizeof buf, row->end_ns); break;
    case N_TRACE_COLS: return -1;
  }
  return fputs(buf, fp) < 0 ? -1 : 0;
}

static int write_row(FILE *fp, size_t n_cols, const struct ds_schedule *s,
                     const struct ds_op *o, const struct ds_trace *t,
                     const struct ds_trace_row *row) {
  for (size_t c = 0; c < n_cols; c++) {
    if (c && fputc(',', fp) == EOF) return -1;
    if (write_field(fp, (enum col)c, s, o, t, row) != 0) return -1;
  }
  return fputc('\n', fp) == EOF ? -1 : 0;
}

/* Commits af when every write succeeded, otherwise aborts it; either way
 * a failure is reported as DS_EIO naming the path. */
static ds_status finish_write(struct ds_atomic_file *af, const char *path,
                              int failed, struct ds_err *err) {
  if (failed || ferror(af->fp)) {
    int e = errno;
    ds_atomic_file_abort(af);
    return ds_err_set(err, DS_EIO, "%s: write failed: %s", path, strerror(e));
  }
  return ds_atomic_file_commit(af, err);
}

ds_status ds_schedule_write_csv(const char *path, const struct ds_schedule *s,
                                const struct ds_csv_meta *meta,
                                struct ds_err *err) {
  struct ds_atomic_file af;
  DS_CHECK(ds_atomic_file_open(path, &af, err));
  write_preamble(af.fp, DS_SCHEDULE_SCHEMA, meta, N_SCHED_COLS);
  int failed = 0;
  for (size_t i = 0; i < s->n_ops && !failed; i++)
    failed = write_row(af.fp, N_SCHED_COLS, s, &s->ops[i], NULL, NULL) != 0;
  if (!failed) failed = write_end(af.fp, s->n_ops) != 0;
  return finish_write(&af, path, failed, err);
}

/* The check of ds_trace_write_csv and ds_trace_writer_add. */
static ds_status check_row(const char *path, size_t i, const struct ds_trace_row *r,
                           struct ds_err *err) {
  if (r->sched && r->op < r->sched->n_ops) return DS_OK;
  return ds_err_set(err, DS_EINTERNAL,
                    "%s: trace row %zu names op %" PRIu32 " of a schedule that does not have it",
                    path, i, r->op);
}

ds_status ds_trace_write_csv(const char *path, const struct ds_trace *t,
                             const struct ds_csv_meta *meta,
                             struct ds_err *err) {
  for (size_t i = 0; i < t->n_rows; i++) DS_CHECK(check_row(path, i, &t->rows[i], err));
  struct ds_atomic_file af;
  DS_CHECK(ds_atomic_file_open(path, &af, err));
  write_preamble(af.fp, DS_TRACE_SCHEMA, meta, N_TRACE_COLS);
  int failed = 0;
  for (size_t i = 0; i < t->n_rows && !failed; i++) {
    const struct ds_trace_row *r = &t->rows[i];
    failed = write_row(af.fp, N_TRACE_COLS, r->sched, &r->sched->ops[r->op], t,
                       r) != 0;
  }
  if (!failed) failed = write_end(af.fp, t->n_rows) != 0;
  return finish_write(&af, path, failed, err);
}

struct ds_trace_writer {
  struct ds_atomic_file af;
  char *path;
  struct ds_trace t; /* its source alone: no rows */
  size_t n_rows;
  int failed;
};

ds_status ds_trace_writer_open(const char *path, const char *source,
                               const struct ds_csv_meta *meta, struct ds_trace_writer **out,
                               struct ds_err *err) {
  struct ds_trace_writer *w = calloc(1, sizeof *w);
  *out = NULL;
  if (w) w->path = strdup(path);
  if (!w || !w->path) {
    free(w);
    return ds_err_set(err, DS_ENOMEM, "%s: out of memory", path);
  }
  snprintf(w->t.source, sizeof w->t.source, "%s", source);
  ds_status st = ds_atomic_file_open(path, &w->af, err);
  if (st != DS_OK) {
    free(w->path);
    free(w);
    return st;
  }
  write_preamble(w->af.fp, DS_TRACE_SCHEMA, meta, N_TRACE_COLS);
  *out = w;
  return DS_OK;
}

ds_status ds_trace_writer_add(struct ds_trace_writer *w, const struct ds_trace_row *row,
                              struct ds_err *err) {
  DS_CHECK(check_row(w->path, w->n_rows, row, err));
  /* a failed write is reported at its row, so that a long run stops there
   * rather than at the commit (and the commit fails as well) */
  if (w->failed ||
      write_row(w->af.fp, N_TRACE_COLS, row->sched, &row->sched->ops[row->op], &w->t, row) != 0 ||
      ferror(w->af.fp)) {
    int e = errno;
    w->failed = 1;
    return ds_err_set(err, DS_EIO, "%s: write failed: %s", w->path, strerror(e));
  }
  w->n_rows++;
  return DS_OK;
}

ds_status ds_trace_writer_commit(struct ds_trace_writer *w, struct ds_err *err) {
  if (!w) return DS_OK;
  int failed = w->failed || write_end(w->af.fp, w->n_rows) != 0;
  ds_status st = finish_write(&w->af, w->path, failed, err);
  free(w->path);
  free(w);
  return st;
}

void ds_trace_writer_abort(struct ds_trace_writer *w) {
  if (!w) return;
  ds_atomic_file_abort(&w->af);
  free(w->path);
  free(w);
}
