/*
 * `ddpsim collective`'s rows as nccl-tests sizes them: from the size a
 * sweep step asks (-b, -e, -f), the bytes a row prints and simulates and
 * the element count it prints, by nccl-tests' rule (base/nccltests.h,
 * which `ddpreal collective` shares): whole floats, and per rank a
 * multiple of 16 bytes where the op splits the buffer over the ranks.
 */
#ifndef DS_COLLBENCH_SIZES_H
#define DS_COLLBENCH_SIZES_H

#include <stdint.h>

#include "sim/coll/coll.h"

#ifdef __cplusplus
extern "C" {
#endif

struct ds_collbench_size {
  double size_bytes; /* the row's size: what is printed and simulated */
  double count;      /* the row's count: per rank where the op splits the buffer */
};

/* Whether nccl-tests splits kind's buffer over the ranks (a per-rank count). */
int ds_collbench_splits_buffer(enum ds_coll_kind kind);

/* The row nccl-tests makes of asked_bytes (>= 0) for kind on nranks (>= 1). */
struct ds_collbench_size ds_collbench_size_of(enum ds_coll_kind kind, double asked_bytes,
                                              int32_t nranks);

#ifdef __cplusplus
}
#endif

#endif /* DS_COLLBENCH_SIZES_H */
