/*
 * Chrome trace event format export (export.h): the JSON object form,
 * {"traceEvents": [...]}, that chrome://tracing and ui.perfetto.dev open.
 * Complete events ("ph": "X") carry ts and dur in microseconds; times are
 * printed from integer nanoseconds with three decimals, so nothing is
 * rounded. Metadata events name the processes and threads. One trace
 * alone gives only its own processes, "predicted" for ddpsim's and
 * "measured" for ddpreal's.
 */
#include "analysis/export.h"

#include <string.h>

#include "base/atomic_file.h"
#include "base/textout.h"

static void us(FILE *fp, int64_t ns) {
  fprintf(fp, "%lld.%03lld", (long long)(ns / 1000), (long long)(ns % 1000));
}

static void meta(FILE *fp, const char *what, int pid, int tid, const char *key,
                 const char *side, int rank, int num) {
  fprintf(fp, ",\n{\"name\": \"%s\", \"ph\": \"M\", \"pid\": %d, \"tid\": %d, "
          "\"args\": {\"%s\": ", what, pid, tid, key);
  if (side) fprintf(fp, "\"%s rank %d\"", side, rank);
  else if (num >= 0) fprintf(fp, "%d", num);
  else fprintf(fp, "\"%s\"", ds_stream_name((enum ds_stream)tid));
  fputs("}}", fp);
}

static void events(FILE *fp, const struct ds_trace *t, int pid_base) {
  for (size_t i = 0; i < t->n_rows; i++) {
    const struct ds_trace_row *r = &t->rows[i];
    const struct ds_op *o = &r->sched->ops[r->op];
    fputs(",\n{\"name\": ", fp);
    ds_textout_json_string(fp, o->name[0] ? o->name : ds_op_kind_name(o->kind));
    fprintf(fp, ", \"cat\": \"%s\", \"ph\": \"X\", \"ts\": ", ds_op_kind_name(o->kind));
    us(fp, r->start_ns);
    fputs(", \"dur\": ", fp);
    us(fp, r->end_ns - r->start_ns);
    fprintf(fp, ", \"pid\": %d, \"tid\": %d, \"args\": {\"id\": %lld, \"iter\": %d, "
            "\"bucket\": %d, \"bytes\": %.17g}}", pid_base + o->rank, (int)o->stream,
            (long long)o->id, r->iter, o->bucket, o->bytes);
  }
}

ds_status ds_chrome_write(const char *path, const struct ds_compare *c,
                          struct ds_err *err) {
  struct ds_atomic_file af;
  DS_CHECK(ds_atomic_file_open(path, &af, err));
  FILE *fp = af.fp;
  /* One trace alone is one side, named by its source. */
  int sides = c->meas ? 2 : 1;
  const char *first = c->meas || strcmp(c->pred->source, "real") != 0 ? "predicted"
                                                                      : "measured";
  fputs("{\"displayTimeUnit\": \"ms\", \"traceEvents\": [\n", fp);
  /* The first element is metadata so that every later one starts with ",". */
  fprintf(fp, "{\"name\": \"process_name\", \"ph\": \"M\", \"pid\": 0, \"tid\": 0, "
          "\"args\": {\"name\": \"%s rank 0\"}}", first);
  for (int side = 0; side < sides; side++)
    for (int32_t r = 0; r < c->world_size; r++) {
      int pid = side * c->world_size + r;
      const char *name = side ? "measured" : first;
      if (pid != 0) meta(fp, "process_name", pid, 0, "name", name, r, -1);
      meta(fp, "process_sort_index", pid, 0, "sort_index", NULL, 0, pid);
      for (int s = 0; s < DS_STREAM_COUNT; s++)
        meta(fp, "thread_name", pid, s, "name", NULL, 0, -1);
    }
  events(fp, c->pred, 0);
  if (c->meas) events(fp, c->meas, c->world_size);
  fputs("\n]}\n", fp);
  return ds_atomic_file_commit(&af, err);
}
