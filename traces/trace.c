/*
 * Schedule and trace CSV files (schema in traces/SCHEMA.md).
 *
 * The columns are listed once, in DS_SCHED_COLUMNS and
 * DS_TRACE_EXTRA_COLUMNS; the writer loops over that list and the reader
 * maps header names back to it, and both switch over the generated enum, so
 * a column added to the list without a writer or reader case is a compiler
 * warning. Key invariant: what the writer prints, the reader parses back to
 * the identical value (integers exactly, doubles in shortest round-trip
 * form, times as integer nanoseconds printed as microseconds with exactly
 * three decimals and parsed back without floating point).
 */
#include "traces/trace.h"
#include "traces/trace_keys.h"

#include <csv.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/atomic_file.h"
#include "base/csvread.h"
#include "base/textout.h"
#include "base/units.h"

/* X(ENUM, "name"): the schedule columns in file order. */
#define DS_SCHED_COLUMNS(X) \
  X(ID, "id")               \
  X(RANK, "rank")           \
  X(STREAM, "stream")       \
  X(KIND, "kind")           \
  X(NAME, "name")           \
  X(LAYER, "layer")         \
  X(BUCKET, "bucket")       \
  X(COLL, "coll")           \
  X(ROOT, "root")           \
  X(ALGO, "algo")           \
  X(BYTES, "bytes")         \
  X(FLOPS, "flops")         \
  X(DUR_US, "dur_us")       \
  X(DEPS, "deps")

/* X(ENUM, "name"): the columns a trace file has after the schedule ones. */
#define DS_TRACE_EXTRA_COLUMNS(X) \
  X(SOURCE, "source")             \
  X(ITER, "iter")                 \
  X(START_US, "start_us")         \
  X(END_US, "end_us")

enum col {
#define COL_ENUM(e, s) COL_##e,
  DS_SCHED_COLUMNS(COL_ENUM) DS_TRACE_EXTRA_COLUMNS(COL_ENUM)
#undef COL_ENUM
  N_TRACE_COLS
};

/* The schedule columns come first, so a schedule file has the first
 * N_SCHED_COLS of them. */
enum {
#define COL_COUNT(e, s) +1
  N_SCHED_COLS = 0 DS_SCHED_COLUMNS(COL_COUNT)
#undef COL_COUNT
};

static const char *const col_names[] = {
#define COL_NAME(e, s) s,
    DS_SCHED_COLUMNS(COL_NAME) DS_TRACE_EXTRA_COLUMNS(COL_NAME)
#undef COL_NAME
};

/* Longest text quoted back in an error message. */
#define ERR_TEXT_MAX 80

/* ---- trace container -------------------------------------------------- */

static int valid_source(const char *source) {
  return strcmp(source, "sim") == 0 || strcmp(source, "real") == 0;
}

ds_status ds_trace_new(const char *source, struct ds_trace **out) {
  if (!source || !valid_source(source)) return DS_EINTERNAL;
  struct ds_trace *t = calloc(1, sizeof *t);
  if (!t) return DS_ENOMEM;
  snprintf(t->source, sizeof t->source, "%s", source);
  *out = t;
  return DS_OK;
}

void ds_trace_free(struct ds_trace *t) {
  if (!t) return;
  free(t->rows);
  ds_schedule_free(t->owned);
  free(t);
}

ds_status ds_trace_add(struct ds_trace *t, const struct ds_trace_row *row) {
  if (t->n_rows == t->cap_rows) {
    size_t cap = t->cap_rows ? 2 * t->cap_rows : 256;
    if (cap > SIZE_MAX / sizeof *t->rows) return DS_ENOMEM;
    struct ds_trace_row *rows = realloc(t->rows, cap * sizeof *rows);
    if (!rows) return DS_ENOMEM;
    t->rows = rows;
    t->cap_rows = cap;
  }
  t->rows[t->n_rows++] = *row;
  return DS_OK;
}

ds_status ds_trace_detach(const struct ds_trace *t, struct ds_trace **out) {
  struct ds_trace *c = NULL;
  struct ds_schedule *s = NULL;
  ds_status st;
  *out = NULL;
  DS_CHECK_GOTO(ds_trace_new(t->source, &c), st, fail);
  DS_CHECK_GOTO(ds_schedule_new(1, &s), st, fail);
  c->owned = s;
  int32_t max_rank = 0;
  for (size_t i = 0; i < t->n_rows; i++) {
    const struct ds_trace_row *r = &t->rows[i];
    if (!r->sched || r->op >= r->sched->n_ops) {
      st = DS_EINTERNAL;
      goto fail;
    }
    const struct ds_op *o = &r->sched->ops[r->op];
    size_t idx;
    DS_CHECK_GOTO(ds_schedule_add(s, o, ds_schedule_deps(r->sched, o), o->dep_count, &idx),
                  st, fail);
    struct ds_trace_row row = {s, (uint32_t)idx, r->iter, r->start_ns, r->end_ns};
    DS_CHECK_GOTO(ds_trace_add(c, &row), st, fail);
    if (o->rank > max_rank) max_rank = o->rank;
  }
  s->world_size = max_rank + 1;
  *out = c;
  return DS_OK;
fail:
  ds_trace_free(c);
  return st;
}

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
static void fmt_time_ns(char *buf, size_t n, int64_t ns) {
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
    fprintf(fp, "%s%s", c ? "," : "", col_names[c]);
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
    case COL_START_US: fmt_time_ns(buf, sizeof buf, row->start_ns); break;
    case COL_END_US: fmt_time_ns(buf, sizeof buf, row->end_ns); break;
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

ds_status ds_trace_write_csv(const char *path, const struct ds_trace *t,
                             const struct ds_csv_meta *meta,
                             struct ds_err *err) {
  for (size_t i = 0; i < t->n_rows; i++) {
    const struct ds_trace_row *r = &t->rows[i];
    if (!r->sched || r->op >= r->sched->n_ops)
      return ds_err_set(err, DS_EINTERNAL,
                        "%s: trace row %zu names op %" PRIu32
                        " of a schedule that does not have it",
                        path, i, r->op);
  }
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

/* ---- value parsers ---------------------------------------------------- */

/* Decimal integer in [lo, hi]; no blanks, no '+', no leading junk. */
static int parse_int(const char *s, int64_t lo, int64_t hi, int64_t *out) {
  const char *p = s;
  int neg = *p == '-';
  if (neg) p++;
  if (*p < '0' || *p > '9') return -1;
  uint64_t mag = 0;
  for (; *p >= '0' && *p <= '9'; p++) {
    if (mag > (UINT64_MAX - 9) / 10) return -1;
    mag = mag * 10 + (uint64_t)(*p - '0');
  }
  if (*p) return -1;
  if (mag > (uint64_t)INT64_MAX + (neg ? 1u : 0u)) return -1;
  int64_t v = neg ? (mag == (uint64_t)INT64_MAX + 1u ? INT64_MIN : -(int64_t)mag)
                  : (int64_t)mag;
  if (v < lo || v > hi) return -1;
  *out = v;
  return 0;
}

/* A finite decimal number >= 0. strtod alone would also take "inf",
 * "nan" and hexadecimal, which no writer produces. Its ERANGE is not a
 * refusal: on overflow the value is HUGE_VAL, refused as not finite, but
 * on underflow it is the nearest double, a subnormal fmt_double writes
 * (4.9406564584124654e-324) or 0, which must read back. */
static int parse_number(const char *s, double *out) {
  if (!*s || strspn(s, "0123456789.eE+-") != strlen(s)) return -1;
  char *end;
  double v = strtod(s, &end);
  if (*end || end == s || !isfinite(v) || v < 0) return -1;
  *out = v;
  return 0;
}

/* Microseconds with at most three decimals, to exact integer nanoseconds
 * in [0, DS_UNITS_NS_MAX]: parsed digit by digit because 123456.789 has no
 * exact double. */
static int parse_time_ns(const char *s, int64_t *out) {
  const char *p = s;
  if (*p < '0' || *p > '9') return -1;
  uint64_t us = 0;
  for (; *p >= '0' && *p <= '9'; p++) {
    if (us > (UINT64_MAX - 9) / 10) return -1;
    us = us * 10 + (uint64_t)(*p - '0');
  }
  uint64_t frac = 0;
  int n_frac = 0;
  if (*p == '.') {
    for (p++; *p >= '0' && *p <= '9'; p++) {
      if (++n_frac > 3) return -1;
      frac = frac * 10 + (uint64_t)(*p - '0');
    }
  }
  if (*p) return -1;
  for (int k = n_frac; k < 3; k++) frac *= 10;
  /* at most the longest simulated time (base/units.h), as dur_us: what
   * reads past it no run produced, and the analysis adds times up */
  if (us > ((uint64_t)DS_UNITS_NS_MAX - frac) / 1000) return -1;
  *out = (int64_t)(us * 1000 + frac);
  return 0;
}

/* ---- reader ----------------------------------------------------------- */

struct reader {
  const char *path;
  struct ds_err *err;
  ds_status st;
  int is_trace;
  size_t n_cols;
  /* position */
  size_t line;      /* 1-based number of the line being fed to libcsv */
  size_t row_line;  /* line on which the current row began */
  int at_row_start; /* the parser is between rows */
  int header_done;
  size_t end_line;  /* the line of "# end: N rows", 0 before it */
  enum col col_of_field[N_TRACE_COLS];
  size_t n_fields;
  /* field text, NUL-terminated (libcsv's buffer is reused) */
  char *text;
  size_t text_cap;
  /* the current row */
  struct ds_op op;
  int64_t *deps;
  size_t n_deps, cap_deps;
  int32_t iter;
  int64_t start_ns, end_ns;
  char source[8];
  /* results */
  struct ds_schedule *s;
  struct ds_trace *t;
  int32_t max_rank, max_bucket;
  size_t max_rank_line, max_bucket_line;
  size_t *op_line;  /* [op index] the line each row began on */
  size_t op_line_cap;
};

static void field_error(struct reader *r, enum col c, const char *what,
                        const char *text) {
  size_t len = strlen(text);
  r->st = ds_err_set(r->err, DS_EINPUT,
                     "%s:%zu: column '%s': expected %s, got \"%.*s%s\"",
                     r->path, r->row_line, col_names[c], what,
                     (int)(len > ERR_TEXT_MAX ? ERR_TEXT_MAX : len), text,
                     len > ERR_TEXT_MAX ? "..." : "");
}

/* "one of a, b or c" for the enum names, generated from the X-macros. */
static void name_list(char *buf, size_t n, const char *(*name)(int), int count) {
  size_t used = (size_t)snprintf(buf, n, "one of ");
  for (int i = 0; i < count && used < n; i++)
    used += (size_t)snprintf(buf + used, n - used, "%s%s",
                             i == 0 ? "" : i == count - 1 ? " or " : ", ",
                             name(i));
}

static const char *stream_name_i(int i) {
  return ds_stream_name((enum ds_stream)i);
}

static const char *kind_name_i(int i) {
  return ds_op_kind_name((enum ds_op_kind)i);
}

static void intern_field(struct reader *r, const char *text,
                         const char **out) {
  if (ds_schedule_intern(r->s, text, out) != DS_OK)
    r->st = ds_err_set(r->err, DS_ENOMEM, "%s:%zu: out of memory", r->path,
                       r->row_line);
}

/* Returns -1 when text is not a list of ids separated by single spaces
 * (SCHEMA.md; what the writer prints: no leading, trailing or doubled
 * space), 0 otherwise (an out-of-memory failure is recorded in r and
 * returns 0). */
static int parse_deps(struct reader *r, const char *text) {
  const char *p = text;
  r->n_deps = 0;
  while (*p) {
    if (p != text && *p++ != ' ') return -1; /* the separator */
    if (*p == ' ' || *p == '\0') return -1;   /* an empty id */
    char id[24];
    size_t n = strcspn(p, " ");
    int64_t v;
    if (n >= sizeof id) return -1;
    memcpy(id, p, n);
    id[n] = '\0';
    if (parse_int(id, 0, INT64_MAX, &v) != 0) return -1;
    if (r->n_deps == r->cap_deps) {
      size_t cap = r->cap_deps ? 2 * r->cap_deps : 16;
      int64_t *d = realloc(r->deps, cap * sizeof *d);
      if (!d) {
        r->st = ds_err_set(r->err, DS_ENOMEM, "%s:%zu: out of memory", r->path,
                           r->row_line);
        return 0;
      }
      r->deps = d;
      r->cap_deps = cap;
    }
    r->deps[r->n_deps++] = v;
    p += n;
  }
  return 0;
}

static void parse_field(struct reader *r, enum col c, const char *text) {
  int64_t v = 0;
  char list[256];
  const char *bad = NULL; /* what was expected, when text is not it */
  struct ds_op *o = &r->op;
  switch (c) {
    case COL_ID:
      if (parse_int(text, 0, INT64_MAX, &v) != 0) bad = "an integer >= 0";
      o->id = v;
      break;
    case COL_RANK:
      if (parse_int(text, 0, INT32_MAX - 1, &v) != 0)
        bad = "a rank (an integer >= 0)";
      o->rank = (int32_t)v;
      break;
    case COL_STREAM:
      if (ds_stream_parse(text, &o->stream) != 0) {
        name_list(list, sizeof list, stream_name_i, DS_STREAM_COUNT);
        bad = list;
      }
      break;
    case COL_KIND:
      if (ds_op_kind_parse(text, &o->kind) != 0) {
        name_list(list, sizeof list, kind_name_i, DS_OP_KIND_COUNT);
        bad = list;
      }
      break;
    case COL_NAME:
    case COL_ALGO: {
      /* Text that reaches the outputs: the JSON writer would replace bad
       * bytes, but the file is wrong, so say where. */
      const char *invalid = ds_textout_utf8_invalid(text);
      if (invalid != NULL) {
        r->st = ds_err_set(r->err, DS_EINPUT,
                           "%s:%zu: column '%s': invalid UTF-8 (byte 0x%02x at byte %zu of "
                           "the field): save the file as UTF-8",
                           r->path, r->row_line, col_names[c], (unsigned char)*invalid,
                           (size_t)(invalid - text) + 1);
        break;
      }
      intern_field(r, text, c == COL_NAME ? &o->name : &o->algo);
      break;
    }
    case COL_LAYER:
    case COL_BUCKET:
    case COL_ROOT:
      if (parse_int(text, -1, INT32_MAX, &v) != 0)
        bad = "an integer >= -1 (-1 for none)";
      *(c == COL_LAYER ? &o->layer : c == COL_BUCKET ? &o->bucket : &o->root) =
          (int32_t)v;
      break;
    case COL_COLL:
      if (parse_int(text, -1, INT64_MAX, &v) != 0)
        bad = "an integer >= -1 (-1 for none)";
      o->coll = v;
      break;
    case COL_BYTES:
    case COL_FLOPS:
      if (parse_number(text, c == COL_BYTES ? &o->bytes : &o->flops) != 0)
        bad = "a finite number >= 0";
      break;
    case COL_DUR_US:
      /* at most the longest simulated time (base/units.h), so that no
       * schedule ddpsim could have run is refused: ddpreal's devices turn
       * dur_us into int64_t nanoseconds (llround), which 2^63 ns bounds */
      if (parse_number(text, &o->dur_us) != 0 || o->dur_us * 1e3 > (double)DS_UNITS_NS_MAX)
        bad = "microseconds >= 0 and at most 1e15 (1e18 ns, the longest simulated time)";
      break;
    case COL_DEPS:
      if (parse_deps(r, text) != 0)
        bad = "op ids (integers >= 0) separated by single spaces";
      break;
    case COL_SOURCE:
      if (!valid_source(text))
        bad = "sim or real";
      else
        snprintf(r->source, sizeof r->source, "%s", text);
      break;
    case COL_ITER:
      if (parse_int(text, 0, INT32_MAX, &v) != 0) bad = "an integer >= 0";
      r->iter = (int32_t)v;
      break;
    case COL_START_US:
    case COL_END_US:
      if (parse_time_ns(text, c == COL_START_US ? &r->start_ns : &r->end_ns) != 0)
        bad = "microseconds >= 0 with at most 3 decimals, at most 1e15 (1e18 ns, the "
              "longest simulated time)";
      break;
    case N_TRACE_COLS: break;
  }
  if (bad) field_error(r, c, bad, text);
}

/* Header field k (0-based). Past the n_cols-th field every column was
 * named once already (an earlier unknown or repeated name stopped the
 * read), so a known name there is a repeat. */
static void header_field(struct reader *r, size_t k, const char *text) {
  for (size_t c = 0; c < r->n_cols; c++) {
    if (strcmp(text, col_names[c]) != 0) continue;
    for (size_t j = 0; j < k && j < r->n_cols; j++)
      if (r->col_of_field[j] == (enum col)c) {
        r->st = ds_err_set(r->err, DS_EINPUT,
                           "%s:%zu: column '%s' appears twice in the header",
                           r->path, r->row_line, text);
        return;
      }
    if (k < r->n_cols) r->col_of_field[k] = (enum col)c;
    return;
  }
  /* The header is where a missing header row or a newer schema shows, so
   * the message lists what this version expects. */
  char cols[512];
  size_t used = 0;
  for (size_t c = 0; c < r->n_cols && used < sizeof cols; c++)
    used += (size_t)snprintf(cols + used, sizeof cols - used, "%s%s",
                             c ? "," : "", col_names[c]);
  r->st = ds_err_set(r->err, DS_EINPUT,
                     "%s:%zu: unknown column '%.*s'; the header row of a %s "
                     "v%d file names the columns %s (in any order)",
                     r->path, r->row_line, ERR_TEXT_MAX, text,
                     r->is_trace ? DS_TRACE_SCHEMA : DS_SCHEDULE_SCHEMA,
                     DS_SCHEMA_VERSION, cols);
}

static void on_field(void *data, size_t len, void *ctx) {
  struct reader *r = ctx;
  if (r->st != DS_OK) return;
  size_t k = r->n_fields++;
  if (len + 1 > r->text_cap) {
    char *t = realloc(r->text, len + 1);
    if (!t) {
      r->st = ds_err_set(r->err, DS_ENOMEM, "%s:%zu: out of memory", r->path,
                         r->row_line);
      return;
    }
    r->text = t;
    r->text_cap = len + 1;
  }
  if (len) memcpy(r->text, data, len);
  r->text[len] = '\0';
  if (len && memchr(data, '\0', len)) {
    r->st = ds_err_set(r->err, DS_EINPUT, "%s:%zu: field %zu contains a NUL byte",
                       r->path, r->row_line, k + 1);
    return;
  }
  if (r->end_line) {
    r->st = ds_err_set(r->err, DS_EINPUT,
                       "%s:%zu: a row after the end line (line %zu); the end line "
                       "must be the file's last", r->path, r->row_line, r->end_line);
    return;
  }
  if (!r->header_done) {
    header_field(r, k, r->text);
    return;
  }
  if (k < r->n_cols) parse_field(r, r->col_of_field[k], r->text);
}

static void finish_header(struct reader *r) {
  for (size_t c = 0; c < r->n_cols; c++) {
    size_t k = 0;
    while (k < r->n_fields && r->col_of_field[k] != (enum col)c) k++;
    if (k == r->n_fields) {
      r->st = ds_err_set(r->err, DS_EINPUT, "%s:%zu: missing column '%s'",
                         r->path, r->row_line, col_names[c]);
      return;
    }
  }
  r->header_done = 1;
}

static void finish_row(struct reader *r) {
  if (r->n_fields != r->n_cols) {
    r->st = ds_err_set(r->err, DS_EINPUT,
                       "%s:%zu: expected %zu fields, got %zu", r->path,
                       r->row_line, r->n_cols, r->n_fields);
    return;
  }
  size_t idx;
  ds_status st = DS_OK;
  if (r->is_trace) {
    if (r->start_ns > r->end_ns) {
      char want[40], got[40];
      fmt_time_ns(want, sizeof want, r->start_ns);
      fmt_time_ns(got, sizeof got, r->end_ns);
      char what[64];
      snprintf(what, sizeof what, "a time >= start_us (%s)", want);
      field_error(r, COL_END_US, what, got);
      return;
    }
    /* One source per file: a trace is either simulated or measured. */
    if (r->t->n_rows == 0) {
      memcpy(r->t->source, r->source, sizeof r->source);
    } else if (strcmp(r->t->source, r->source) != 0) {
      char what[64];
      snprintf(what, sizeof what, "\"%s\" like the rows before it",
               r->t->source);
      field_error(r, COL_SOURCE, what, r->source);
      return;
    }
  }
  st = ds_schedule_add(r->s, &r->op, r->deps, r->n_deps, &idx);
  if (st == DS_OK && r->is_trace) {
    struct ds_trace_row row = {r->s, (uint32_t)idx, r->iter, r->start_ns,
                               r->end_ns};
    st = ds_trace_add(r->t, &row);
  }
  if (st != DS_OK) {
    r->st = ds_err_set(r->err, st, "%s:%zu: out of memory (or more than 2^32 "
                       "ops)", r->path, r->row_line);
    return;
  }
  if (r->op.rank > r->max_rank) r->max_rank = r->op.rank, r->max_rank_line = r->row_line;
  if (r->op.bucket > r->max_bucket)
    r->max_bucket = r->op.bucket, r->max_bucket_line = r->row_line;
  if (idx >= r->op_line_cap) {
    size_t cap = r->op_line_cap ? 2 * r->op_line_cap : 1024;
    size_t *p = realloc(r->op_line, cap * sizeof *p);
    if (!p) {
      r->st = ds_err_set(r->err, DS_ENOMEM, "%s:%zu: out of memory", r->path, r->row_line);
      return;
    }
    r->op_line = p;
    r->op_line_cap = cap;
  }
  r->op_line[idx] = r->row_line;
}

/* Ranks size every per-rank array downstream (world size = largest rank
 * + 1), so a rank no smaller than the number of rows cannot be dense
 * (every rank 0..R has a row) and is refused at its line: one row naming
 * rank 49,999,999 made `ddpsim analyze` allocate 5 GB (issue #15, defect 7).
 * Bucket numbers size the per-bucket spans of `ddpsim analyze` the same
 * way (analysis/compare.c, add_op_metrics): one row naming bucket 10^8
 * took 1.3 s and 4 GB of address space, and bucket 2*10^9 lost every
 * bucket metric without a word (the allocation failed). DDP numbers its
 * buckets 0..B-1 and every bucket has a collective, so the same rule
 * holds for them. */
static ds_status check_dense(struct reader *r, int32_t max, size_t line, const char *col) {
  if (max >= 0 && (size_t)max >= r->s->n_ops)
    return ds_err_set(r->err, DS_EINPUT,
                      "%s:%zu: column '%s': %s %" PRId32 " in a file of %zu rows; %ss "
                      "must be numbered 0, 1, ... without gaps",
                      r->path, line, col, col, max, r->s->n_ops, col);
  return DS_OK;
}

/* Every rank in 0..R is one that ran (after check_dense, so R is below
 * the row count): the first rank below the largest that no row has is
 * refused (a trace without rank 0 read as rank 0's metrics all 0: revana
 * finding 5). Buckets need not be dense: a rank's trace may hold some. */
static ds_status check_rank_gaps(struct reader *r) {
  if (r->max_rank < 0) return DS_OK;
  unsigned char *seen = calloc((size_t)r->max_rank + 1, 1);
  if (!seen) return ds_err_set(r->err, DS_ENOMEM, "%s: out of memory", r->path);
  for (size_t i = 0; i < r->s->n_ops; i++) seen[r->s->ops[i].rank] = 1;
  int32_t missing = 0;
  while (missing < r->max_rank && seen[missing]) missing++;
  free(seen);
  if (missing < r->max_rank)
    return ds_err_set(r->err, DS_EINPUT,
                      "%s:%zu: column 'rank': rank %" PRId32 ", but no row has rank %" PRId32
                      "; ranks must be numbered 0, 1, ... without gaps",
                      r->path, r->max_rank_line, r->max_rank, missing);
  return DS_OK;
}

static ds_status check_ranks_and_buckets(struct reader *r) {
  DS_CHECK(check_dense(r, r->max_rank, r->max_rank_line, "rank"));
  DS_CHECK(check_rank_gaps(r));
  return check_dense(r, r->max_bucket, r->max_bucket_line, "bucket");
}

static void on_row(int c, void *ctx) {
  struct reader *r = ctx;
  (void)c;
  r->at_row_start = 1;
  if (r->st == DS_OK) {
    if (!r->header_done)
      finish_header(r);
    else
      finish_row(r);
  }
  r->n_fields = 0;
  r->n_deps = 0;
}

/* How much of line a message quotes, and whether it was cut. */
static int quoted_len(const char *line) {
  size_t n = strcspn(line, "\r\n");
  return (int)(n > ERR_TEXT_MAX ? ERR_TEXT_MAX : n);
}
static const char *quoted_more(const char *line) {
  return strcspn(line, "\r\n") > ERR_TEXT_MAX ? "..." : "";
}

/* The first line names the schema and its version. */
static ds_status check_schema(struct reader *r, const char *line, size_t len) {
  const char *want = r->is_trace ? DS_TRACE_SCHEMA : DS_SCHEDULE_SCHEMA;
  const char *other = r->is_trace ? DS_SCHEDULE_SCHEMA : DS_TRACE_SCHEMA;
  if (!line)
    return ds_err_set(r->err, DS_EINPUT,
                      "%s:1: the file is empty; expected the schema line "
                      "\"# %s v%d\"",
                      r->path, want, DS_SCHEMA_VERSION);
  /* the checks below read a C string, which a NUL would cut short */
  const char *nul = memchr(line, '\0', len);
  if (nul)
    return ds_err_set(r->err, DS_EINPUT,
                      "%s:1: a NUL byte in the schema line (byte %zu); expected \"# %s v%d\"",
                      r->path, (size_t)(nul - line) + 1, want, DS_SCHEMA_VERSION);
  const char *p = line;
  if (*p == '#') {
    p++;
    p += strspn(p, " \t");
    size_t n = strcspn(p, " \t\r\n");
    const char *q = p + n;
    q += strspn(q, " \t");
    long version = -1;
    if (*q == 'v' && q[1] >= '0' && q[1] <= '9') {
      char *end;
      errno = 0;
      version = strtol(q + 1, &end, 10);
      if (errno || end[strspn(end, " \t\r\n")] != '\0') version = -1;
    }
    if (version >= 0 && n == strlen(other) && strncmp(p, other, n) == 0)
      return ds_err_set(r->err, DS_EINPUT,
                        "%s:1: this is a %s file, not a %s file", r->path,
                        other, want);
    if (version >= 0 && n == strlen(want) && strncmp(p, want, n) == 0) {
      if (version == DS_SCHEMA_VERSION) return DS_OK;
      /* v1 had no end line: a v1 file cut between rows reads as a whole one,
       * so none is trusted (SCHEMA.md, "Versioning"). */
      if (version == 1)
        return ds_err_set(r->err, DS_EINPUT,
                          "%s:1: %s version 1 is not read any more: it has no end "
                          "line, so a copy cut short cannot be told from a whole one; "
                          "write it again with this ddpsim or ddpreal (or, when you "
                          "know it is whole, change this line to \"# %s v%d\" and add "
                          "\"# end: N rows\" after its N rows)",
                          r->path, want, want, DS_SCHEMA_VERSION);
      return ds_err_set(r->err, DS_EINPUT,
                        "%s:1: %s version %ld is not supported; this ddpsim "
                        "reads version %d",
                        r->path, want, version, DS_SCHEMA_VERSION);
    }
  }
  return ds_err_set(r->err, DS_EINPUT,
                    "%s:1: expected the schema line \"# %s v%d\", got \"%.*s%s\"",
                    r->path, want, DS_SCHEMA_VERSION, quoted_len(line), line,
                    quoted_more(line));
}

/* A `#` line after the header row: -1 when it is not an end line ("# end:"
 * does not begin it), 0 when it is one but not "# end: N rows" ("# end: 1
 * row"; blanks free around the words), 1 when it is, with N in *n. The
 * plural follows N, so no prefix of one end line is another: "# end: 8
 * rows" cut to "# end: 8 row" is refused. */
static int parse_end(const char *line, uint64_t *n) {
  const char *p = line + 1;
  p += strspn(p, " \t");
  if (strncmp(p, "end:", 4) != 0) return -1;
  p += 4;
  p += strspn(p, " \t");
  size_t digits = strspn(p, "0123456789");
  if (digits == 0 || digits > 19) return 0;
  *n = strtoull(p, NULL, 10);
  p += digits;
  size_t blanks = strspn(p, " \t");
  if (blanks == 0 || strncmp(p + blanks, "row", 3) != 0) return 0;
  p += blanks + 3;
  if (*n != 1 && *p++ != 's') return 0;
  return p[strspn(p, " \t\r\n")] == '\0';
}

/* `#` lines: before the header row provenance, skipped; after it only the
 * end line, once, counting the rows read. */
static int comment_ok(void *ctx, const char *line, size_t len) {
  struct reader *r = ctx;
  /* the checks below read C strings, which a NUL would cut short: "# end:
   * 1 row\0 and 5 more" would pass as the end line */
  if (memchr(line, '\0', len)) {
    r->st = ds_err_set(r->err, DS_EINPUT, "%s:%zu: a NUL byte in a comment line (byte %zu)",
                       r->path, r->line, (size_t)((const char *)memchr(line, '\0', len) - line) + 1);
    return 0;
  }
  if (!r->header_done) return 1;
  if (r->end_line) {
    r->st = ds_err_set(r->err, DS_EINPUT,
                       "%s:%zu: a line after the end line (line %zu), got \"%.*s%s\"; "
                       "the end line must be the file's last",
                       r->path, r->line, r->end_line, quoted_len(line), line,
                       quoted_more(line));
    return 0;
  }
  uint64_t n = 0;
  int end = parse_end(line, &n);
  if (end < 0) return 0; /* the loop's "comment lines are allowed only before ..." */
  if (end == 0) {
    r->st = ds_err_set(r->err, DS_EINPUT,
                       "%s:%zu: expected the end line \"# end: N rows\" (\"# end: 1 row\" "
                       "for one), got \"%.*s%s\"",
                       r->path, r->line, quoted_len(line), line, quoted_more(line));
    return 0;
  }
  r->end_line = r->line;
  if (n != r->s->n_ops) {
    r->st = ds_err_set(r->err, DS_EINPUT,
                       "%s:%zu: the end line counts %" PRIu64 " rows but the file has %zu: "
                       "rows were removed or added after it was written; write it again",
                       r->path, r->line, n, r->s->n_ops);
    return 0;
  }
  return 1;
}

/* The schema line, then the rest through the one CSV read loop
 * (ds_csvread_lines: every row knows the line it began on); `#` lines
 * before the header row are provenance and skipped, after it only the end
 * line is taken, and a file without one was cut short. */
static ds_status read_file(struct reader *r) {
  FILE *fp = fopen(r->path, "r");
  if (!fp)
    return ds_err_set(r->err, DS_EIO, "%s: cannot open: %s", r->path,
                      strerror(errno));
  char *line = NULL;
  size_t cap = 0;
  errno = 0;
  ssize_t len = getline(&line, &cap, fp);
  r->line = 1;
  /* a read that fails (a directory: EISDIR) is not an empty file */
  if (len < 0 && ferror(fp))
    r->st = ds_err_set(r->err, DS_EIO, "%s: cannot read: %s", r->path,
                       strerror(errno ? errno : EIO));
  else
    r->st = check_schema(r, len < 0 ? NULL : line, len < 0 ? 0 : (size_t)len);
  free(line);
  r->at_row_start = 1;
  if (r->st == DS_OK) {
    struct ds_csvread_lines l = {r->path, r->err, &r->st, &r->line, &r->row_line,
                                 &r->at_row_start, comment_ok, on_field, on_row, r};
    ds_csvread_lines(fp, &l);
  }
  const char *schema = r->is_trace ? DS_TRACE_SCHEMA : DS_SCHEDULE_SCHEMA;
  if (r->st == DS_OK && !r->header_done)
    r->st = ds_err_set(r->err, DS_EINPUT, "%s:%zu: no header row", r->path,
                       r->line);
  else if (r->st == DS_OK && !r->end_line)
    r->st = ds_err_set(r->err, DS_EINPUT,
                       "%s:%zu: the file ends without its end line \"# end: N rows\", "
                       "which every %s v%d file has after its last row: it was cut "
                       "short; write it again",
                       r->path, r->line, schema, DS_SCHEMA_VERSION);
  else if (r->st == DS_EINPUT && r->row_line > 0 && !r->end_line && getc(fp) == EOF &&
           r->err) {
    /* A row (or the header row) refused in the file's last line is most
     * likely one cut in two. */
    size_t used = strlen(r->err->msg);
    snprintf(r->err->msg + used, sizeof r->err->msg - used,
             " (the file ends there, without its end line \"# end: N rows\": was it "
             "cut short?)");
  }
  fclose(fp);
  free(r->text);
  free(r->deps);
  return r->st;
}

ds_status ds_schedule_read_csv(const char *path, struct ds_schedule **out,
                               struct ds_err *err) {
  struct reader r = {.path = path, .err = err, .n_cols = N_SCHED_COLS,
                     .max_rank = -1, .max_bucket = -1};
  ds_status st = ds_schedule_new(1, &r.s);
  if (st != DS_OK) return ds_err_set(err, st, "%s: out of memory", path);
  st = read_file(&r);
  if (st == DS_OK) st = check_ranks_and_buckets(&r);
  if (st == DS_OK) {
    /* The file has no world-size line: the ranks that have ops are it. */
    r.s->world_size = r.max_rank + 1 > 1 ? r.max_rank + 1 : 1;
    struct ds_err verr = {0};
    size_t bad;
    st = ds_schedule_validate_at(r.s, &bad, &verr);
    /* The message names the op; the line is where the user looks. */
    if (st != DS_OK && bad < r.s->n_ops)
      ds_err_set(err, st, "%s:%zu: %s", path, r.op_line[bad], verr.msg);
    else if (st != DS_OK)
      ds_err_set(err, st, "%s: %s", path, verr.msg);
  }
  free(r.op_line);
  if (st != DS_OK) {
    ds_schedule_free(r.s);
    return st;
  }
  *out = r.s;
  return DS_OK;
}

ds_status ds_trace_read_csv(const char *path, struct ds_trace **out,
                            struct ds_err *err) {
  struct reader r = {.path = path, .err = err, .n_cols = N_TRACE_COLS,
                     .is_trace = 1, .max_rank = -1, .max_bucket = -1};
  r.t = calloc(1, sizeof *r.t);
  ds_status st = r.t ? ds_schedule_new(1, &r.s) : DS_ENOMEM;
  if (st != DS_OK) {
    free(r.t);
    return ds_err_set(err, st, "%s: out of memory", path);
  }
  /* Ids repeat across iterations, so the owned schedule is not validated
   * as a schedule; every field was checked as it was read, and the keys
   * and dependencies as a whole below (trace_keys.h). */
  r.t->owned = r.s;
  st = read_file(&r);
  if (st == DS_OK) st = check_ranks_and_buckets(&r);
  if (st == DS_OK) {
    struct ds_err kerr = {0};
    size_t bad = 0, other = 0;
    st = ds_trace_check_keys(r.t, &bad, &other, &kerr);
    /* The line a row began on, through its op (one op per row). */
    size_t bad_line = st == DS_EINPUT ? r.op_line[r.t->rows[bad].op] : 0;
    if (st == DS_EINPUT && other != bad)
      ds_err_set(err, st, "%s:%zu: %s (first at line %zu)", path, bad_line, kerr.msg,
                 r.op_line[r.t->rows[other].op]);
    else if (st == DS_EINPUT)
      ds_err_set(err, st, "%s:%zu: %s", path, bad_line, kerr.msg);
    else if (st != DS_OK)
      ds_err_set(err, st, "%s: %s", path, kerr.msg);
  }
  if (st == DS_OK) {
    struct ds_err kerr = {0};
    size_t bad = 0, other = 0;
    st = ds_trace_check_iter_ends(r.t, &bad, &other, &kerr);
    if (st == DS_EINPUT)
      ds_err_set(err, st, "%s:%zu: %s (line %zu)", path, r.op_line[r.t->rows[bad].op],
                 kerr.msg, r.op_line[r.t->rows[other].op]);
    else if (st != DS_OK)
      ds_err_set(err, st, "%s: %s", path, kerr.msg);
  }
  free(r.op_line);
  if (st != DS_OK) {
    ds_trace_free(r.t);
    return st;
  }
  r.s->world_size = r.max_rank + 1 > 1 ? r.max_rank + 1 : 1;
  *out = r.t;
  return DS_OK;
}
