/*
 * nccl-tests' row sizes (nccltests.h): count = size / 4 floats, and for
 * the ops that split the buffer (count / N) & ~3 per rank, as
 * AllGatherGetCollByteCount and its siblings compute in size_t.
 */
#include "base/nccltests.h"

struct ds_nccltests_row ds_nccltests_row(uint64_t asked_bytes, int splits_buffer,
                                         int32_t nranks) {
  uint64_t count = asked_bytes / DS_NCCLTESTS_ELEM_BYTES;
  if (!splits_buffer || nranks < 1)
    return (struct ds_nccltests_row){count, count * DS_NCCLTESTS_ELEM_BYTES};
  /* 16 B / 4 B = 4 elements: the per-rank count cleared of its low two bits */
  uint64_t align = DS_NCCLTESTS_RANK_ALIGN_BYTES / DS_NCCLTESTS_ELEM_BYTES;
  uint64_t per_rank = (count / (uint64_t)nranks) & ~(align - 1);
  return (struct ds_nccltests_row){per_rank,
                                   per_rank * (uint64_t)nranks * DS_NCCLTESTS_ELEM_BYTES};
}
