/*
 * The shared schedule (shared_schedule.h): blocks over a template schedule,
 * the conversions from and to the full form, and the checks.
 */
#include "traces/shared_schedule.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

ds_status ds_shared_new(struct ds_schedule *tmpl, int own, struct ds_shared_schedule **out) {
  struct ds_shared_schedule *s = calloc(1, sizeof *s);
  if (!s) {
    if (own) ds_schedule_free(tmpl);
    return DS_ENOMEM;
  }
  s->world_size = tmpl->world_size;
  s->tmpl = tmpl;
  s->owns_tmpl = own;
  *out = s;
  return DS_OK;
}

void ds_shared_free(struct ds_shared_schedule *s) {
  if (!s) return;
  if (s->owns_tmpl) ds_schedule_free(s->tmpl);
  free(s->blocks);
  free(s);
}

ds_status ds_shared_add_block(struct ds_shared_schedule *s, int32_t first_rank,
                              int32_t n_ranks, uint32_t first_op, uint32_t n_ops,
                              int64_t id_stride) {
  if (s->n_blocks == s->cap_blocks) {
    size_t cap = s->cap_blocks ? s->cap_blocks * 2 : 16;
    struct ds_sched_block *b = realloc(s->blocks, cap * sizeof *b);
    if (!b) return DS_ENOMEM;
    s->blocks = b;
    s->cap_blocks = cap;
  }
  s->blocks[s->n_blocks++] = (struct ds_sched_block){first_rank, n_ranks, first_op, n_ops,
                                                     s->n_ops, id_stride};
  s->n_ops += (size_t)(n_ranks > 0 ? n_ranks : 0) * n_ops;
  return DS_OK;
}

ds_status ds_shared_from_schedule(struct ds_schedule *full, const size_t *cuts, size_t n_cuts,
                                  struct ds_shared_schedule **out) {
  struct ds_shared_schedule *s;
  DS_CHECK(ds_shared_new(full, 0, &s));
  size_t c = 0, first = 0;
  for (size_t i = 1; i <= full->n_ops; i++) {
    while (c < n_cuts && cuts[c] < i) c++;
    int cut = c < n_cuts && cuts[c] == i;
    if (i < full->n_ops && !cut && full->ops[i].rank == full->ops[first].rank) continue;
    ds_status st = ds_shared_add_block(s, full->ops[first].rank, 1, (uint32_t)first,
                                       (uint32_t)(i - first), 0);
    if (st != DS_OK) {
      ds_shared_free(s);
      return st;
    }
    first = i;
  }
  *out = s;
  return DS_OK;
}

size_t ds_shared_block_of(const struct ds_shared_schedule *s, uint32_t t) {
  size_t lo = 0, hi = s->n_blocks;
  while (lo < hi) { /* the last block whose slice starts at or before t */
    size_t mid = lo + (hi - lo) / 2;
    if (s->blocks[mid].first_op <= t)
      lo = mid + 1;
    else
      hi = mid;
  }
  if (lo == 0) return SIZE_MAX;
  const struct ds_sched_block *b = &s->blocks[lo - 1];
  return t - b->first_op < b->n_ops ? lo - 1 : SIZE_MAX;
}

ds_status ds_shared_expand(const struct ds_shared_schedule *s, struct ds_schedule **out) {
  struct ds_schedule *full = NULL, *t = s->tmpl;
  int64_t *deps = NULL;
  size_t cap = 0;
  ds_status st = ds_schedule_new(s->world_size, &full);
  if (st != DS_OK) return st;
  for (size_t b = 0; b < s->n_blocks && st == DS_OK; b++) {
    const struct ds_sched_block *bl = &s->blocks[b];
    for (int32_t j = 0; j < bl->n_ranks && st == DS_OK; j++) {
      int32_t r = bl->first_rank + j;
      for (uint32_t k = 0; k < bl->n_ops && st == DS_OK; k++) {
        const struct ds_op *o = &t->ops[bl->first_op + k];
        const int64_t *td = ds_schedule_deps(t, o);
        if (o->dep_count > cap) {
          cap = o->dep_count * 2;
          int64_t *d = realloc(deps, cap * sizeof *d);
          if (!d) { st = DS_ENOMEM; break; }
          deps = d;
        }
        for (uint32_t q = 0; q < o->dep_count; q++) {
          size_t di;
          /* validated: the dependency is a template op of a block with rank r */
          if (ds_schedule_find(t, td[q], &di) != 0) { st = DS_EINTERNAL; break; }
          deps[q] = ds_shared_id(s, ds_shared_block_of(s, (uint32_t)di), r, (uint32_t)di);
        }
        struct ds_op op = *o;
        op.rank = r;
        op.id = ds_shared_id(s, b, r, bl->first_op + k);
        if (st == DS_OK) st = ds_schedule_add(full, &op, deps, o->dep_count, NULL);
      }
    }
  }
  free(deps);
  if (st != DS_OK) {
    ds_schedule_free(full);
    return st;
  }
  *out = full;
  return DS_OK;
}

static int cmp_coll_op(const void *a, const void *b) {
  const int64_t *x = a, *y = b;
  if (x[0] != y[0]) return x[0] < y[0] ? -1 : 1;
  return (x[1] > y[1]) - (x[1] < y[1]);
}

/* A collective id of a many-rank block's op names no other template op. */
static ds_status check_shared_colls(struct ds_shared_schedule *s, struct ds_err *err) {
  struct ds_schedule *t = s->tmpl;
  size_t n = 0;
  for (size_t i = 0; i < t->n_ops; i++) n += t->ops[i].coll >= 0;
  if (n == 0) return DS_OK;
  int64_t *keys = malloc(2 * n * sizeof *keys); /* (coll, template index) */
  if (!keys) return ds_err_set(err, DS_ENOMEM, "validating the schedule: out of memory");
  n = 0;
  for (size_t i = 0; i < t->n_ops; i++)
    if (t->ops[i].coll >= 0) {
      keys[2 * n] = t->ops[i].coll;
      keys[2 * n++ + 1] = (int64_t)i;
    }
  qsort(keys, n, 2 * sizeof *keys, cmp_coll_op);
  ds_status st = DS_OK;
  for (size_t k = 1; k < n && st == DS_OK; k++) {
    if (keys[2 * k] != keys[2 * k - 2]) continue;
    uint32_t a = (uint32_t)keys[2 * k - 1], b = (uint32_t)keys[2 * k + 1];
    size_t ba = ds_shared_block_of(s, a), bb = ds_shared_block_of(s, b);
    if (s->blocks[ba].n_ranks > 1 || s->blocks[bb].n_ranks > 1)
      st = ds_err_set(err, DS_EINPUT,
                      "op %" PRId64 ": collective %" PRId64 " is also op %" PRId64
                      " of a block of several ranks, which runs it on each of them",
                      t->ops[b].id, t->ops[b].coll, t->ops[a].id);
  }
  free(keys);
  return st;
}

ds_status ds_shared_validate(struct ds_shared_schedule *s, struct ds_err *err) {
  struct ds_schedule *t = s->tmpl;
  if (s->world_size != t->world_size)
    return ds_err_set(err, DS_EINTERNAL, "shared schedule: world size %d, template's %d",
                      s->world_size, t->world_size);
  DS_CHECK(ds_schedule_validate(t, err));
  uint32_t next = 0;
  int many = 0;
  for (size_t b = 0; b < s->n_blocks; b++) many |= s->blocks[b].n_ranks > 1;
  for (size_t b = 0; b < s->n_blocks; b++) {
    const struct ds_sched_block *bl = &s->blocks[b];
    if (bl->first_op != next || bl->n_ops < 1 || bl->n_ops > t->n_ops - next)
      return ds_err_set(err, DS_EINTERNAL,
                        "shared schedule: block %zu covers template ops %" PRIu32 "..+%" PRIu32
                        ", not the next ones from %" PRIu32, b, bl->first_op, bl->n_ops, next);
    next += bl->n_ops;
    if (bl->first_rank < 0 || bl->n_ranks < 1 || bl->n_ranks > s->world_size - bl->first_rank)
      return ds_err_set(err, DS_EINTERNAL,
                        "shared schedule: block %zu has ranks %d..+%d of %d", b,
                        bl->first_rank, bl->n_ranks, s->world_size);
    for (uint32_t k = 0; k < bl->n_ops; k++) {
      const struct ds_op *o = &t->ops[bl->first_op + k];
      if (o->rank != bl->first_rank)
        return ds_err_set(err, DS_EINTERNAL,
                          "op %" PRId64 ": on rank %d, but its block starts at rank %d",
                          o->id, o->rank, bl->first_rank);
      /* Ids: a one-rank schedule keeps the template's (checked unique);
       * with copies, every id is its full-schedule index. */
      if (many && (o->id != (int64_t)(bl->first_index + k) || bl->id_stride != bl->n_ops))
        return ds_err_set(err, DS_EINTERNAL,
                          "op %" PRId64 ": a schedule with copies needs ids equal to "
                          "full-schedule indices (%zu here, id stride %" PRId64 ")",
                          o->id, bl->first_index + k, bl->id_stride);
      /* a send names one peer: every rank of a block would send to it */
      if (bl->n_ranks > 1 && (o->kind == DS_OP_SEND || o->kind == DS_OP_RECV))
        return ds_err_set(err, DS_EINPUT,
                          "op %" PRId64 ": a %s runs in a block of several ranks (only "
                          "one-rank blocks hold point-to-point ops)",
                          o->id, ds_op_kind_name(o->kind));
      const int64_t *deps = ds_schedule_deps(t, o);
      for (uint32_t q = 0; q < o->dep_count; q++) {
        size_t di;
        ds_schedule_find(t, deps[q], &di); /* found: the template is valid */
        size_t db = ds_shared_block_of(s, (uint32_t)di);
        if (db > b || s->blocks[db].n_ranks < bl->n_ranks)
          return ds_err_set(err, DS_EINPUT,
                            "op %" PRId64 ": dependency %" PRId64 " is in a block that "
                            "does not run on all of ranks %d..%d", o->id, deps[q],
                            bl->first_rank, bl->first_rank + bl->n_ranks - 1);
      }
    }
  }
  if (next != t->n_ops)
    return ds_err_set(err, DS_EINTERNAL, "shared schedule: template ops from %" PRIu32
                      " are in no block", next);
  return check_shared_colls(s, err);
}
