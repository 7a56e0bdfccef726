/*
 * One field of a schedule or trace row, its text to its value: integers,
 * numbers, times, the enums' names, the dependency list. What the writer
 * prints (trace_write.c) parses back to the identical value; anything else
 * is refused, the message naming the file, line and column.
 */
#include "traces/trace_impl.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/textout.h"
#include "base/units.h"

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

void ds__trace_field_error(struct reader *r, enum col c, const char *what,
                           const char *text) {
  size_t len = strlen(text);
  r->st = ds_err_set(r->err, DS_EINPUT,
                     "%s:%zu: column '%s': expected %s, got \"%.*s%s\"",
                     r->path, r->row_line, ds__trace_col_names[c], what,
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

void ds__trace_parse_field(struct reader *r, enum col c, const char *text) {
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
                           r->path, r->row_line, ds__trace_col_names[c], (unsigned char)*invalid,
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
      if (!ds__trace_valid_source(text))
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
  if (bad) ds__trace_field_error(r, c, bad, text);
}

