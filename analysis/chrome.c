/*
 * Chrome trace event format export (export.h): the JSON object form,
 * {"traceEvents": [...]}, that chrome://tracing and ui.perfetto.dev open.
 * Complete events ("ph": "X") carry ts and dur in microseconds; times are
 * printed from integer nanoseconds with three decimals, so nothing is
 * rounded. Metadata events name the processes and threads. One trace
 * alone gives only its own processes, "predicted" for ddpsim's and
 * "measured" for ddpreal's.
 *
 * Complete events on one thread must nest (Perfetto drops or misdraws the
 * others), but a stream can run ops that overlap without nesting: ps's
 * pulls from several servers at once, say. Such an op goes to another
 * thread of its stream, a lane: lane 0 is the stream's own tid, lane k
 * tid k * DS_STREAM_COUNT + stream, named "comm 2", ...; a trace whose
 * streams nest keeps lane 0 alone, as before.
 */
#include "analysis/export.h"

#include <stdlib.h>
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

/* One row's place in the lane assignment: its track, times and index. */
struct lane_key {
  int32_t rank;
  int32_t stream;
  int64_t start_ns, end_ns;
  size_t row;
};

static int key_order(const void *pa, const void *pb) {
  const struct lane_key *a = pa, *b = pb;
  if (a->rank != b->rank) return a->rank < b->rank ? -1 : 1;
  if (a->stream != b->stream) return a->stream < b->stream ? -1 : 1;
  if (a->start_ns != b->start_ns) return a->start_ns < b->start_ns ? -1 : 1;
  if (a->end_ns != b->end_ns) return a->end_ns > b->end_ns ? -1 : 1; /* outer first */
  return a->row < b->row ? -1 : a->row > b->row;
}

/* A lane's open ops, their ends innermost last. */
struct lane {
  int64_t *ends;
  size_t n, cap;
};

/* Puts each row in the first lane of its (rank, stream) where it starts
 * after the lane's open ops end or nests inside the innermost one; a new
 * lane when none takes it. lane_of[row] gets the lane, lanes[rank *
 * DS_STREAM_COUNT + stream] the track's count (>= 1 where it has a row). */
static ds_status assign_lanes(const struct ds_trace *t, int32_t world_size, uint32_t *lane_of,
                              uint32_t *lanes, struct ds_err *err) {
  ds_status st = DS_OK;
  struct lane_key *keys = malloc((t->n_rows ? t->n_rows : 1) * sizeof *keys);
  struct lane *lane = NULL;
  size_t n_lane = 0;
  if (!keys) return ds_err_set(err, DS_ENOMEM, "chrome trace: out of memory");
  for (size_t i = 0; i < t->n_rows; i++) {
    const struct ds_op *o = &t->rows[i].sched->ops[t->rows[i].op];
    keys[i] = (struct lane_key){o->rank, (int32_t)o->stream, t->rows[i].start_ns,
                                t->rows[i].end_ns, i};
  }
  qsort(keys, t->n_rows, sizeof *keys, key_order);
  size_t used = 0; /* lanes of the current track */
  for (size_t i = 0; i < t->n_rows && st == DS_OK; i++) {
    const struct lane_key *k = &keys[i];
    if (i == 0 || k->rank != keys[i - 1].rank || k->stream != keys[i - 1].stream) {
      for (size_t l = 0; l < n_lane; l++) lane[l].n = 0; /* a new track */
      used = 0;
    }
    size_t l = 0;
    for (;; l++) {
      if (l == n_lane) {
        struct lane *more = realloc(lane, (n_lane + 1) * sizeof *lane);
        if (!more) { st = ds_err_set(err, DS_ENOMEM, "chrome trace: out of memory"); break; }
        lane = more;
        lane[n_lane++] = (struct lane){NULL, 0, 0};
      }
      struct lane *ln = &lane[l];
      while (ln->n > 0 && ln->ends[ln->n - 1] <= k->start_ns) ln->n--;
      if (ln->n > 0 && k->end_ns > ln->ends[ln->n - 1]) continue; /* would cross it */
      if (ln->n == ln->cap) {
        size_t cap = ln->cap ? 2 * ln->cap : 8;
        int64_t *ends = realloc(ln->ends, cap * sizeof *ends);
        if (!ends) { st = ds_err_set(err, DS_ENOMEM, "chrome trace: out of memory"); break; }
        ln->ends = ends;
        ln->cap = cap;
      }
      ln->ends[ln->n++] = k->end_ns;
      break;
    }
    if (st != DS_OK) break;
    if (l + 1 > used) used = l + 1;
    lane_of[k->row] = (uint32_t)l;
    if (k->rank >= 0 && k->rank < world_size && k->stream >= 0 && k->stream < DS_STREAM_COUNT)
      lanes[(size_t)k->rank * DS_STREAM_COUNT + (size_t)k->stream] = (uint32_t)used;
  }
  for (size_t l = 0; l < n_lane; l++) free(lane[l].ends);
  free(lane);
  free(keys);
  return st;
}

static void events(FILE *fp, const struct ds_trace *t, int pid_base, const uint32_t *lane_of) {
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
            "\"bucket\": %d, \"bytes\": %.17g}}", pid_base + o->rank,
            (int)(lane_of[i] * DS_STREAM_COUNT + (uint32_t)o->stream),
            (long long)o->id, r->iter, o->bucket, o->bytes);
  }
}

/* The threads past lane 0 of a side's streams: "comm 2", "comm 3", ... */
static void lane_names(FILE *fp, const uint32_t *lanes, int32_t world_size, int pid_base) {
  for (int32_t r = 0; r < world_size; r++)
    for (int s = 0; s < DS_STREAM_COUNT; s++)
      for (uint32_t l = 1; l < lanes[(size_t)r * DS_STREAM_COUNT + (size_t)s]; l++)
        fprintf(fp, ",\n{\"name\": \"thread_name\", \"ph\": \"M\", \"pid\": %d, "
                "\"tid\": %u, \"args\": {\"name\": \"%s %u\"}}", pid_base + r,
                l * DS_STREAM_COUNT + (uint32_t)s, ds_stream_name((enum ds_stream)s), l + 1);
}

static ds_status write_json(const char *path, const struct ds_compare *c,
                            const uint32_t *const *lane_of, const uint32_t *const *lanes,
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
  events(fp, c->pred, 0, lane_of[0]);
  lane_names(fp, lanes[0], c->world_size, 0);
  if (c->meas) {
    events(fp, c->meas, c->world_size, lane_of[1]);
    lane_names(fp, lanes[1], c->world_size, c->world_size);
  }
  fputs("\n]}\n", fp);
  return ds_atomic_file_commit(&af, err);
}

ds_status ds_chrome_write(const char *path, const struct ds_compare *c,
                          struct ds_err *err) {
  ds_status st = DS_OK;
  const struct ds_trace *side_trace[2] = {c->pred, c->meas};
  uint32_t *lane_of[2] = {NULL, NULL}, *lanes[2] = {NULL, NULL};
  for (int side = 0; side < 2 && st == DS_OK; side++) {
    const struct ds_trace *t = side_trace[side];
    if (!t) continue;
    lane_of[side] = calloc(t->n_rows ? t->n_rows : 1, sizeof *lane_of[side]);
    lanes[side] = calloc((size_t)(c->world_size > 0 ? c->world_size : 1) * DS_STREAM_COUNT,
                         sizeof *lanes[side]);
    if (!lane_of[side] || !lanes[side])
      st = ds_err_set(err, DS_ENOMEM, "chrome trace: out of memory");
    else
      st = assign_lanes(t, c->world_size, lane_of[side], lanes[side], err);
  }
  if (st == DS_OK) st = write_json(path, c, (const uint32_t *const *)lane_of,
                                   (const uint32_t *const *)lanes, err);
  for (int side = 0; side < 2; side++) {
    free(lane_of[side]);
    free(lanes[side]);
  }
  return st;
}
