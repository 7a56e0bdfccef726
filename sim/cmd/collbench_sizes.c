/*
 * nccl-tests' row sizes (collbench_sizes.h): count = size / 4 floats, and
 * for the ops that split the buffer (count / N) & ~3 per rank, as
 * AllGatherGetCollByteCount and its siblings compute in size_t.
 */
#include "sim/cmd/collbench_sizes.h"

#include "sim/cmd/collbench_args.h"

int ds_collbench_splits_buffer(enum ds_coll_kind kind) {
  return kind == DS_COLL_ALLGATHER || kind == DS_COLL_REDUCESCATTER ||
         kind == DS_COLL_ALLTOALL || kind == DS_COLL_GATHER || kind == DS_COLL_SCATTER;
}

struct ds_collbench_size ds_collbench_size_of(enum ds_coll_kind kind, double asked_bytes,
                                              int32_t nranks) {
  /* the parser bounds sizes to 1e15 bytes: whole floats fit in 64 bits */
  uint64_t count = (uint64_t)(asked_bytes / DS_COLLBENCH_FLOAT_BYTES);
  if (!ds_collbench_splits_buffer(kind) || nranks < 1)
    return (struct ds_collbench_size){(double)count * DS_COLLBENCH_FLOAT_BYTES,
                                      (double)count};
  /* 16 B / 4 B = 4 floats: the per-rank count cleared of its low two bits */
  uint64_t align = DS_COLLBENCH_RANK_ALIGN_BYTES / DS_COLLBENCH_FLOAT_BYTES;
  uint64_t per_rank = (count / (uint64_t)nranks) & ~(align - 1);
  return (struct ds_collbench_size){
      (double)(per_rank * (uint64_t)nranks) * DS_COLLBENCH_FLOAT_BYTES, (double)per_rank};
}
