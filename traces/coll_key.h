/*
 * A schedule's collective ops grouped by (collective id, rank, op): the
 * schedule's check (traces/schedule.c, one op per rank of a collective) and
 * the executor (sim/train/exec_colls.c, one instance per collective, its
 * members in rank order) sort the same keys the same way. `op` is the op's
 * index where the key was made: the schedule's, or a rank class's local one.
 */
#ifndef DS_COLL_KEY_H
#define DS_COLL_KEY_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct ds_coll_key {
  int64_t coll;
  int32_t rank;
  uint32_t op;
};

/* qsort order: by collective id, then rank, then op. */
static inline int ds_coll_key_cmp(const void *a, const void *b) {
  const struct ds_coll_key *x = a, *y = b;
  if (x->coll != y->coll) return x->coll < y->coll ? -1 : 1;
  if (x->rank != y->rank) return x->rank < y->rank ? -1 : 1;
  return (x->op > y->op) - (x->op < y->op);
}

#ifdef __cplusplus
}
#endif

#endif
