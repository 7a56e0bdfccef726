/*
 * Schedule and trace CSV files (schema in traces/SCHEMA.md): the trace
 * container and the column names. The writer is trace_write.c, the reader
 * trace_read.c, one field's parsing trace_fields.c (trace_impl.h).
 *
 * The columns are listed once, in DS_SCHED_COLUMNS and
 * DS_TRACE_EXTRA_COLUMNS (trace_impl.h); the writer loops over that list
 * and the reader maps header names back to it, and both switch over the
 * generated enum, so a column added to the list without a writer or reader
 * case is a compiler warning. Key invariant: what the writer prints, the
 * reader parses back to the identical value (integers exactly, doubles in
 * shortest round-trip form, times as integer nanoseconds printed as
 * microseconds with exactly three decimals and parsed back without
 * floating point).
 */
#include "traces/trace.h"
#include "traces/trace_impl.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

const char *const ds__trace_col_names[] = {
#define COL_NAME(e, s) s,
    DS_SCHED_COLUMNS(COL_NAME) DS_TRACE_EXTRA_COLUMNS(COL_NAME)
#undef COL_NAME
};

/* ---- trace container -------------------------------------------------- */

ds_status ds_trace_new(const char *source, struct ds_trace **out) {
  if (!source || !ds__trace_valid_source(source)) return DS_EINTERNAL;
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
