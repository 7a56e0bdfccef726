/*
 * A schedule stored once per distinct rank program: the compact form of
 * struct ds_schedule that the simulator runs (docs/architecture.md,
 * "One schedule for identical ranks").
 *
 * DDP's ranks run the same ops but for their rank and ids, so storing every
 * rank's copy costs O(layers x N) (GPT-2 on 4096 GPUs: 2.3 M ops, 940 MiB).
 * Here the ops live once, in a template schedule, and blocks say which ranks
 * run which slice of it:
 *
 *   block b: ranks first_rank .. first_rank + n_ranks - 1 each run the
 *   template ops first_op .. first_op + n_ops - 1, in order.
 *
 * The full schedule it stands for (what ds_shared_expand writes) lists the
 * blocks in order and, inside a block, every rank's copy in rank order: rank
 * first_rank + j's copy of template op first_op + k is op number
 * first_index + j * n_ops + k of the full schedule, with the template op's
 * fields except rank (first_rank + j), id (template id + j * id_stride) and
 * dependencies (each template dependency names an op of an earlier or the
 * same block; rank first_rank + j depends on its own copy of it). The
 * template op's rank is its block's first rank, so a one-rank block is
 * simply a run of the template.
 *
 * DDP's builder writes rank 0 only (every iteration a block over all
 * ranks, id_stride = the iteration's ops per rank: the ids the full
 * builder gives); any other schedule (DataParallel's per-rank roles, a
 * schedule file) becomes one block per run of same-rank ops
 * (ds_shared_from_schedule), as large as it is today. Memory is
 * O(template + blocks): O(layers + iterations) for DDP.
 *
 * Ownership: the template is owned or borrowed (owns_tmpl); blocks owned.
 */
#ifndef DS_SHARED_SCHEDULE_H
#define DS_SHARED_SCHEDULE_H

#include <stddef.h>
#include <stdint.h>

#include "base/status.h"
#include "traces/schedule.h"

#ifdef __cplusplus
extern "C" {
#endif

struct ds_sched_block {
  int32_t first_rank, n_ranks; /* n_ranks >= 1 */
  uint32_t first_op, n_ops;    /* the slice of the template, n_ops >= 1 */
  size_t first_index;          /* full-schedule index of first_rank's first op */
  int64_t id_stride;           /* id of rank first_rank + j's copy: template id + j * id_stride */
};

struct ds_shared_schedule {
  int32_t world_size;
  struct ds_schedule *tmpl;
  int owns_tmpl;
  struct ds_sched_block *blocks;
  size_t n_blocks, cap_blocks;
  size_t n_ops; /* ops of the full schedule: sum of n_ranks * n_ops */
};

/* An empty shared schedule over tmpl (whose world_size it takes); owns it
 * when own is 1 (freed with it, also when this call fails). */
ds_status ds_shared_new(struct ds_schedule *tmpl, int own, struct ds_shared_schedule **out);
void ds_shared_free(struct ds_shared_schedule *s);

/* Appends a block: ranks [first_rank, first_rank + n_ranks) each run the
 * template ops [first_op, first_op + n_ops), rank first_rank + j's ids being
 * the template's + j * id_stride. Checked by ds_shared_validate. */
ds_status ds_shared_add_block(struct ds_shared_schedule *s, int32_t first_rank,
                              int32_t n_ranks, uint32_t first_op, uint32_t n_ops,
                              int64_t id_stride);

/* The compact form of a full schedule (borrowed: it must outlive *out): one
 * block per run of consecutive ops of one rank, a run also ending at each of
 * the n_cuts indices in cuts (ascending; iteration starts), so that no block
 * straddles one. Full-schedule indices are the schedule's own. */
ds_status ds_shared_from_schedule(struct ds_schedule *full, const size_t *cuts, size_t n_cuts,
                                  struct ds_shared_schedule **out);

/* The full schedule s stands for, in *out (owned by the caller): every
 * block's ranks' copies in order, as described above. */
ds_status ds_shared_expand(const struct ds_shared_schedule *s, struct ds_schedule **out);

/* Full-schedule index of rank r's copy of template op t of block b (r in the
 * block's ranks, t in its slice). */
static inline size_t ds_shared_index(const struct ds_shared_schedule *s, size_t b, int32_t r,
                                     uint32_t t) {
  const struct ds_sched_block *bl = &s->blocks[b];
  return bl->first_index + (size_t)(r - bl->first_rank) * bl->n_ops + (t - bl->first_op);
}

/* Id of rank r's copy of template op t of block b. */
static inline int64_t ds_shared_id(const struct ds_shared_schedule *s, size_t b, int32_t r,
                                   uint32_t t) {
  const struct ds_sched_block *bl = &s->blocks[b];
  return s->tmpl->ops[t].id + (int64_t)(r - bl->first_rank) * bl->id_stride;
}

/* The block holding template op t (blocks' slices ascending and disjoint,
 * as every constructor here makes them); SIZE_MAX when none. */
size_t ds_shared_block_of(const struct ds_shared_schedule *s, uint32_t t);

/* Checks what the executor relies on, without expanding: the template is a
 * valid schedule for world_size ranks (ds_schedule_validate) whose every op
 * is in exactly one block, slices ascending; ranks inside 0..world_size-1;
 * each block's template ops on its first rank; each dependency of a block's
 * op in the same or an earlier block that has every rank of this one (so
 * every rank's copy depends on its own, earlier, copy); ids unique over
 * the ranks' copies (id strides no smaller than the ids the template spans);
 * a collective id in one block only, or in one-rank blocks only (what the
 * template's own check then covers); send and recv in one-rank blocks
 * only. On failure err names the op id. */
ds_status ds_shared_validate(struct ds_shared_schedule *s, struct ds_err *err);

#ifdef __cplusplus
}
#endif

#endif /* DS_SHARED_SCHEDULE_H */
