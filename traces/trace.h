/*
 * Schedule and trace files: CSV (libcsv) in one versioned schema.
 *
 * The column list is written once (DS_SCHED_COLUMNS / DS_TRACE_EXTRA_COLUMNS
 * in trace_impl.h, documented in traces/SCHEMA.md) and used by both writer and
 * reader. Files begin with `#` comment lines: the schema line
 * "# ddpsim-schedule v2" or "# ddpsim-trace v2" first, then the program
 * version, the inputs and the seed; they end with "# end: N rows" after the
 * N rows. Readers reject an unknown schema or version, a missing or unknown
 * column, any malformed value, and a file whose end line is missing (cut
 * short) or counts other rows (edited), naming the file, line and column.
 *
 * Writers write to a temporary file next to the target and rename it into
 * place only when everything was written, so a failure never leaves a
 * half-written file.
 */
#ifndef DS_TRACE_H
#define DS_TRACE_H

#include <stddef.h>
#include <stdint.h>

#include "traces/schedule.h"
#include "base/status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define DS_SCHEDULE_SCHEMA "ddpsim-schedule"
#define DS_TRACE_SCHEMA "ddpsim-trace"
#define DS_SCHEMA_VERSION 2

/* Provenance written as `#` lines; any field may be NULL (then omitted). */
struct ds_csv_meta {
  const char *program;  /* "ddpsim 0.1.0" */
  const char *inputs;   /* "topo=topologies/4gpu.yaml model=... bucket_mb=25" */
  uint64_t seed;
  const char *extra;    /* further lines, newline-separated ("# device: cpu\n
                         * # ranks: 2"); each is written as a `#` line after
                         * the seed (a missing "# " is added, blank lines
                         * dropped) */
  int no_seed;          /* 1: no `# seed` line (ddpreal: nothing it runs is
                         * drawn from a seed) */
};

/* One executed op: which op (index into sched->ops), which iteration, and
 * when it ran. A trace row is the schedule op plus source, iter, start, end. */
struct ds_trace_row {
  const struct ds_schedule *sched; /* borrowed */
  uint32_t op;                     /* index into sched->ops */
  int32_t iter;
  int64_t start_ns;
  int64_t end_ns;
};

struct ds_trace {
  char source[8];              /* "sim" or "real" */
  struct ds_trace_row *rows;
  size_t n_rows;
  size_t cap_rows;
  struct ds_schedule *owned;   /* schedule owned by the trace (reader), or NULL */
};

/* Creates an empty trace with the given source ("sim" or "real"). */
ds_status ds_trace_new(const char *source, struct ds_trace **out);
/* Frees the trace, its rows and its owned schedule; NULL is allowed. */
void ds_trace_free(struct ds_trace *t);
/* Appends a row (copied). */
ds_status ds_trace_add(struct ds_trace *t, const struct ds_trace_row *row);

/* Writes the schedule to path atomically. */
ds_status ds_schedule_write_csv(const char *path, const struct ds_schedule *s,
                                const struct ds_csv_meta *meta,
                                struct ds_err *err);
/* Reads a schedule written by ds_schedule_write_csv (or by hand) and
 * validates it (ds_schedule_validate). *out is owned by the caller. Path
 * "-" reads standard input, "standard input" in messages (base/csvread.h),
 * here and in ds_trace_read_csv. */
ds_status ds_schedule_read_csv(const char *path, struct ds_schedule **out,
                               struct ds_err *err);
/* The same, and *op_line (owned by the caller, n_ops entries) the file line
 * of each op's row, for callers whose own checks name FILE:LINE. */
ds_status ds_schedule_read_csv_lines(const char *path, struct ds_schedule **out,
                                     size_t **op_line, struct ds_err *err);

/* A self-contained copy of t in *out (owned by the caller): every row's op
 * copied into a schedule the copy owns, one op per row, as the reader
 * builds it (world_size: the largest rank + 1), so the copy outlives the
 * schedules t's rows borrow and reads as the same trace written and read
 * back. */
ds_status ds_trace_detach(const struct ds_trace *t, struct ds_trace **out);

/* Writes the trace to path atomically, rows in the trace's order. */
ds_status ds_trace_write_csv(const char *path, const struct ds_trace *t,
                             const struct ds_csv_meta *meta,
                             struct ds_err *err);
/* A trace written row by row, for a run whose trace is too long to hold in
 * memory (--strategy ps): the file ds_trace_write_csv writes of the same
 * rows, atomically. open writes the preamble (source "sim" or "real");
 * add writes one row, its schedule borrowed for the call only (DS_EINTERNAL
 * for a row naming an op its schedule lacks; DS_EIO naming the path when
 * the write fails, and at every add after); commit writes the end line
 * and renames the file into place (DS_EIO naming the path when a write
 * failed); abort leaves the target as it was. commit and abort free w and
 * accept NULL. */
struct ds_trace_writer;
ds_status ds_trace_writer_open(const char *path, const char *source,
                               const struct ds_csv_meta *meta, struct ds_trace_writer **out,
                               struct ds_err *err);
ds_status ds_trace_writer_add(struct ds_trace_writer *w, const struct ds_trace_row *row,
                              struct ds_err *err);
ds_status ds_trace_writer_commit(struct ds_trace_writer *w, struct ds_err *err);
void ds_trace_writer_abort(struct ds_trace_writer *w);

/* Reads a trace. Every row's op is stored in a schedule owned by the trace
 * (t->owned), one op per row; rows point into it. */
ds_status ds_trace_read_csv(const char *path, struct ds_trace **out,
                            struct ds_err *err);

#ifdef __cplusplus
}
#endif

#endif /* DS_TRACE_H */
