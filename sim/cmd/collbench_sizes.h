/*
 * `ddpsim collective`'s rows as nccl-tests sizes them: from the size a
 * sweep step asks (-b, -e, -f), the bytes a row prints and simulates and
 * the element count it prints. nccl-tests (NVIDIA/nccl-tests a0b82b2,
 * v2.19.6; src/common.cu setupArgs and each test's *GetCollByteCount)
 * takes count = size / sizeof(float) and
 *
 *   - allreduce, broadcast, reduce, sendrecv: runs and prints count
 *     floats, size count * 4;
 *   - allgather, reducescatter, alltoall, gather, scatter (the ops that
 *     split the buffer over N ranks): gives each rank (count / N) rounded
 *     down to a multiple of 16 bytes (& ~(16 / 4 - 1)), prints that
 *     per-rank count and the whole buffer, N times it, as the size
 *     (max(sendBytes, expectedBytes)); 0 and 0 where it rounds to nothing.
 *
 * Since nccl-tests 29f4114 (2024-12-18, tag v2.13.12); before it the
 * all-gather and reduce-scatter rounded per rank to 4 elements (the same
 * for float) and alltoall, gather and scatter to whole elements
 * (docs/collectives.md, "Sizes and counts").
 */
#ifndef DS_COLLBENCH_SIZES_H
#define DS_COLLBENCH_SIZES_H

#include <stdint.h>

#include "sim/coll/coll.h"

#ifdef __cplusplus
extern "C" {
#endif

/* nccl-tests' per-rank alignment of the ops that split the buffer. */
#define DS_COLLBENCH_RANK_ALIGN_BYTES 16

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
