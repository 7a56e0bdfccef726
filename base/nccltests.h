/*
 * nccl-tests' rows: from the size a sweep step asks (-b, -e, -f), the
 * elements each rank passes to NCCL and the bytes the row prints. Shared
 * by `ddpsim collective` (sim/cmd/collbench.c), which simulates those
 * bytes, and `ddpreal collective` (real/collective.cu), which runs them,
 * so the two tables and nccl-tests' own print the same sizes and counts.
 *
 * nccl-tests (NVIDIA/nccl-tests a0b82b2, v2.19.6; src/common.cu setupArgs
 * and each test's *GetCollByteCount) takes count = size / sizeof(float)
 * and
 *   - all-reduce, broadcast, reduce, sendrecv: runs and prints count
 *     floats, size count * 4;
 *   - all-gather, reduce-scatter, alltoall, gather, scatter (the ops that
 *     split the buffer over N ranks): gives each rank (count / N) rounded
 *     down to a multiple of 16 bytes, prints that per-rank count and the
 *     whole buffer, N times it, as the size; 0 and 0 where it rounds to
 *     nothing.
 * Since nccl-tests 29f4114 (2024-12-18, tag v2.13.12); before it the
 * all-gather and reduce-scatter rounded per rank to 4 elements (the same
 * for float) and alltoall, gather and scatter to whole elements
 * (docs/collectives.md, "Sizes and counts").
 */
#ifndef DS_NCCLTESTS_H
#define DS_NCCLTESTS_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The element: nccl-tests' default type, float. */
#define DS_NCCLTESTS_ELEM_BYTES 4
/* nccl-tests' per-rank alignment of the ops that split the buffer. */
#define DS_NCCLTESTS_RANK_ALIGN_BYTES 16

struct ds_nccltests_row {
  uint64_t count;      /* printed: the whole buffer's elements, or one rank's where split */
  uint64_t size_bytes; /* printed, and what the call moves: the whole buffer */
};

/* The row nccl-tests makes of asked_bytes for an op that splits its
 * buffer over nranks (>= 1) ranks or not. */
struct ds_nccltests_row ds_nccltests_row(uint64_t asked_bytes, int splits_buffer,
                                         int32_t nranks);

#ifdef __cplusplus
}
#endif

#endif /* DS_NCCLTESTS_H */
