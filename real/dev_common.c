/* What both replay devices work out from a schedule (dev_common.h). */
#include "dev_common.h"

#include <math.h>
#include <stdlib.h>

int ds__dev_is_compute(enum ds_op_kind k) {
  return k == DS_OP_FWD || k == DS_OP_BWD || k == DS_OP_LOSS || k == DS_OP_STEP;
}

void ds__dev_coll_counts(const struct ds_op *o, int32_t rank, int32_t world, size_t *n_in,
                         size_t *n_out) {
  size_t n = (size_t)ceil(o->bytes / 4.0);
  size_t per = n / (size_t)world, tot = per * (size_t)world;
  int root = o->root == rank;
  switch (o->kind) {
    case DS_OP_ALLREDUCE: *n_in = 0; *n_out = n; break; /* in place: out holds the input */
    case DS_OP_REDUCE: *n_in = n; *n_out = root ? n : 0; break;
    case DS_OP_BROADCAST: *n_in = root ? n : 0; *n_out = n; break;
    case DS_OP_ALLGATHER: *n_in = per; *n_out = tot; break;
    case DS_OP_REDUCESCATTER: *n_in = tot; *n_out = per; break;
    case DS_OP_GATHER: *n_in = per; *n_out = root ? tot : 0; break;
    case DS_OP_SCATTER: *n_in = root ? tot : 0; *n_out = per; break;
    default: *n_in = 0; *n_out = 0; break;
  }
}

static int cmp_pair(const void *a, const void *b) {
  const int64_t *x = a, *y = b;
  return x[0] < y[0] ? -1 : x[0] > y[0];
}

ds_status ds__dev_map_deps(const struct ds_schedule *s, const char *device, size_t **dep_idx,
                           struct ds_err *err) {
  /* (id, index) pairs sorted by id, each dependency found by bsearch: the
   * schedule is borrowed const, so its own lazy index (ds_schedule_find)
   * is not built here. */
  int64_t *pairs = malloc((s->n_ops ? s->n_ops : 1) * 2 * sizeof *pairs);
  size_t *idx = malloc((s->n_deps ? s->n_deps : 1) * sizeof *idx);
  if (!pairs || !idx) {
    free(pairs);
    free(idx);
    return ds_err_set(err, DS_ENOMEM, "%s: out of memory", device);
  }
  for (size_t i = 0; i < s->n_ops; i++) {
    pairs[2 * i] = s->ops[i].id;
    pairs[2 * i + 1] = (int64_t)i;
  }
  qsort(pairs, s->n_ops, 2 * sizeof *pairs, cmp_pair);
  ds_status st = DS_OK;
  for (size_t k = 0; k < s->n_deps && st == DS_OK; k++) {
    int64_t key[2] = {s->deps[k], 0};
    const int64_t *hit = bsearch(key, pairs, s->n_ops, 2 * sizeof *pairs, cmp_pair);
    if (!hit)
      st = ds_err_set(err, DS_EINTERNAL, "%s: dependency id %lld is no op "
                      "(the schedule was not validated)", device, (long long)s->deps[k]);
    else
      idx[k] = (size_t)hit[1];
  }
  free(pairs);
  if (st != DS_OK) {
    free(idx);
    return st;
  }
  *dep_idx = idx;
  return DS_OK;
}
