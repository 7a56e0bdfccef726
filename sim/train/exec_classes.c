/*
 * The executor's classes (exec.c's top comment): ranks that run the same
 * blocks of a shared schedule, and per class its local ops with their
 * template ops, dependencies, waiters and in-order stream queues; and the
 * walk over every op in full-schedule order.
 */
#include <inttypes.h>
#include <stdlib.h>

#include "sim/train/exec_impl.h"

/* Local index of rank's copy of template op t of block b (the rank runs b). */
static uint32_t local_of(const struct ds_exec *ex, int32_t rank, size_t b, uint32_t t) {
  const struct rank_class *c = &ex->classes[ex->class_of[rank]];
  uint32_t lo = 0, hi = c->n_blocks;
  while (lo < hi) {
    uint32_t mid = lo + (hi - lo) / 2;
    if (c->blocks[mid] < b)
      lo = mid + 1;
    else
      hi = mid;
  }
  return c->block_at[lo] + (t - ex->sched->blocks[b].first_op);
}

/* Calls fn(ex, rank, local op, ctx) for every op in full-schedule order
 * until it returns nonzero; returns that. */
int ds__exec_for_each_op(struct ds_exec *ex,
                         int (*fn)(struct ds_exec *, int32_t, uint32_t, void *), void *ctx) {
  const struct ds_shared_schedule *s = ex->sched;
  for (size_t b = 0; b < s->n_blocks; b++) {
    const struct ds_sched_block *bl = &s->blocks[b];
    for (int32_t j = 0; j < bl->n_ranks; j++) {
      int32_t r = bl->first_rank + j;
      uint32_t e0 = local_of(ex, r, b, bl->first_op);
      for (uint32_t k = 0; k < bl->n_ops; k++) {
        int v = fn(ex, r, e0 + k, ctx);
        if (v) return v;
      }
    }
  }
  return 0;
}

/* Class c's local ops from its blocks: template op, dependencies, waiters,
 * stream queues. */
static ds_status build_class(struct ds_exec *ex, struct rank_class *c, struct ds_err *err) {
  const struct ds_shared_schedule *s = ex->sched;
  struct ds_schedule *t = s->tmpl;
  size_t n_deps = 0;
  c->n = 0;
  for (uint32_t i = 0; i < c->n_blocks; i++) {
    const struct ds_sched_block *bl = &s->blocks[c->blocks[i]];
    c->block_at[i] = c->n;
    c->n += bl->n_ops;
    for (uint32_t k = 0; k < bl->n_ops; k++) n_deps += t->ops[bl->first_op + k].dep_count;
  }
  size_t n = c->n;
  c->tmpl = malloc((n + 1) * sizeof *c->tmpl);
  c->block = malloc((n + 1) * sizeof *c->block);
  c->stream = malloc(n + 1);
  c->dep_first = calloc(n + 2, sizeof *c->dep_first);
  c->deps = malloc((n_deps + 1) * sizeof *c->deps);
  c->waiter_first = calloc(n + 2, sizeof *c->waiter_first);
  c->waiters = malloc((n_deps + 1) * sizeof *c->waiters);
  c->qpos = malloc((n + 1) * sizeof *c->qpos);
  c->queue = malloc((n + 1) * sizeof *c->queue);
  c->inst = malloc((n + 1) * sizeof *c->inst);
  if (!c->tmpl || !c->block || !c->stream || !c->dep_first || !c->deps || !c->waiter_first ||
      !c->waiters || !c->qpos || !c->queue || !c->inst)
    return ds_err_set(err, DS_ENOMEM, "executor: out of memory");
  uint32_t e = 0, nd = 0;
  for (uint32_t i = 0; i < c->n_blocks; i++) {
    const struct ds_sched_block *bl = &s->blocks[c->blocks[i]];
    for (uint32_t k = 0; k < bl->n_ops; k++, e++) {
      const struct ds_op *o = &t->ops[bl->first_op + k];
      const int64_t *deps = ds_schedule_deps(t, o);
      c->tmpl[e] = bl->first_op + k;
      c->block[e] = c->blocks[i];
      c->stream[e] = (uint8_t)o->stream;
      c->inst[e] = -1;
      c->dep_first[e] = nd;
      /* Dependencies were checked by ds_shared_validate: each names an op
       * of an earlier or the same block that runs on all of this class. */
      for (uint32_t q = 0; q < o->dep_count; q++) {
        size_t di;
        if (ds_schedule_find(t, deps[q], &di) != 0)
          return ds_err_set(err, DS_EINTERNAL, "op %" PRId64 ": unknown dependency", o->id);
        size_t db = ds_shared_block_of(s, (uint32_t)di);
        uint32_t d = local_of(ex, c->first_rank, db, (uint32_t)di);
        c->deps[nd++] = d;
        c->waiter_first[d + 2]++;
      }
      c->queue_first[o->stream + 1]++;
    }
  }
  c->dep_first[n] = nd;
  for (size_t i = 2; i < n + 2; i++) c->waiter_first[i] += c->waiter_first[i - 1];
  for (int s2 = 1; s2 <= DS_STREAM_COUNT; s2++) c->queue_first[s2] += c->queue_first[s2 - 1];
  uint32_t fill[DS_STREAM_COUNT];
  for (int s2 = 0; s2 < DS_STREAM_COUNT; s2++) fill[s2] = c->queue_first[s2];
  for (uint32_t i = 0; i < n; i++) {
    for (uint32_t k = c->dep_first[i]; k < c->dep_first[i + 1]; k++)
      c->waiters[c->waiter_first[c->deps[k] + 1]++] = i;
    enum ds_stream st = t->ops[c->tmpl[i]].stream;
    c->qpos[i] = fill[st] - c->queue_first[st];
    c->queue[fill[st]++] = i;
  }
  return DS_OK;
}

static int cmp_i32(const void *a, const void *b) {
  int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
  return (x > y) - (x < y);
}

/* Ranks split into classes at every block's first and past-last rank: the
 * ranks between two such points run the same blocks. */
ds_status ds__exec_build_classes(struct ds_exec *ex, struct ds_err *err) {
  const struct ds_shared_schedule *s = ex->sched;
  int32_t w = s->world_size;
  size_t np = 2 * s->n_blocks + 2;
  int32_t *pts = malloc(np * sizeof *pts);
  ex->class_of = malloc(((size_t)w + 1) * sizeof *ex->class_of);
  if (!pts || !ex->class_of) {
    free(pts);
    return ds_err_set(err, DS_ENOMEM, "executor: out of memory");
  }
  np = 0;
  pts[np++] = 0;
  pts[np++] = w;
  for (size_t b = 0; b < s->n_blocks; b++) {
    pts[np++] = s->blocks[b].first_rank;
    pts[np++] = s->blocks[b].first_rank + s->blocks[b].n_ranks;
  }
  qsort(pts, np, sizeof *pts, cmp_i32);
  size_t u = 0;
  for (size_t i = 0; i < np; i++)
    if (u == 0 || pts[i] != pts[u - 1]) pts[u++] = pts[i];
  /* pts[0] = 0, pts[u - 1] = w: u - 1 classes */
  ex->n_classes = (int32_t)(u - 1);
  ex->classes = calloc(u, sizeof *ex->classes);
  if (!ex->classes) {
    free(pts);
    return ds_err_set(err, DS_ENOMEM, "executor: out of memory");
  }
  for (int32_t i = 0; i < ex->n_classes; i++) {
    ex->classes[i].first_rank = pts[i];
    ex->classes[i].n_ranks = pts[i + 1] - pts[i];
    for (int32_t r = pts[i]; r < pts[i + 1]; r++) ex->class_of[r] = i;
  }
  free(pts);
  /* each block's ranks are whole classes: count, then list */
  for (int pass = 0; pass < 2; pass++) {
    for (int32_t i = 0; i < ex->n_classes; i++) {
      struct rank_class *c = &ex->classes[i];
      if (pass == 1) {
        c->blocks = malloc(((size_t)c->n_blocks + 1) * sizeof *c->blocks);
        c->block_at = malloc(((size_t)c->n_blocks + 1) * sizeof *c->block_at);
        if (!c->blocks || !c->block_at)
          return ds_err_set(err, DS_ENOMEM, "executor: out of memory");
      }
      c->n_blocks = 0;
    }
    for (size_t b = 0; b < s->n_blocks; b++) {
      const struct ds_sched_block *bl = &s->blocks[b];
      for (int32_t ci = ex->class_of[bl->first_rank];
           ci < ex->n_classes && ex->classes[ci].first_rank < bl->first_rank + bl->n_ranks;
           ci++) {
        struct rank_class *c = &ex->classes[ci];
        if (pass == 1) c->blocks[c->n_blocks] = (uint32_t)b;
        c->n_blocks++;
      }
    }
  }
  for (int32_t i = 0; i < ex->n_classes; i++)
    DS_CHECK(build_class(ex, &ex->classes[i], err));
  return DS_OK;
}
