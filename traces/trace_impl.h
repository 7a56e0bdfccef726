/*
 * Internal to the schedule and trace CSV files (traces/trace.c, the trace
 * container and the column names; traces/trace_write.c, the writer;
 * traces/trace_fields.c, one field's text to its value; traces/trace_read.c,
 * the reader): the column list, the reader's state and what they share.
 * Not for other modules.
 */
#ifndef DS_TRACE_IMPL_H
#define DS_TRACE_IMPL_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "traces/trace.h"

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

/* [enum col]: each column's name in the header row. */
extern const char *const ds__trace_col_names[];

/* Longest text quoted back in an error message. */
#define ERR_TEXT_MAX 80

/* A trace's source: "sim" or "real". */
static inline int ds__trace_valid_source(const char *source) {
  return strcmp(source, "sim") == 0 || strcmp(source, "real") == 0;
}

/* The reader's state over one file (trace_read.c), the current row's
 * fields included (trace_fields.c). */
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

/* Integer nanoseconds as microseconds with exactly three decimals (the
 * writer's; the reader quotes times in messages the same way). */
void ds__trace_fmt_time_ns(char *buf, size_t n, int64_t ns);

/* Records in r a refusal of column c's field text: "expected what". */
void ds__trace_field_error(struct reader *r, enum col c, const char *what,
                           const char *text);

/* Parses the current row's field of column c into r's row, or records in r
 * why it cannot. */
void ds__trace_parse_field(struct reader *r, enum col c, const char *text);

#endif /* DS_TRACE_IMPL_H */
