/*
 * nccl-tests' row sizes for ddpsim's collectives (collbench_sizes.h): which
 * ops split the buffer; the rule itself is base/nccltests.c's, which
 * `ddpreal collective` shares.
 */
#include "sim/cmd/collbench_sizes.h"

#include "base/nccltests.h"

int ds_collbench_splits_buffer(enum ds_coll_kind kind) {
  return kind == DS_COLL_ALLGATHER || kind == DS_COLL_REDUCESCATTER ||
         kind == DS_COLL_ALLTOALL || kind == DS_COLL_GATHER || kind == DS_COLL_SCATTER;
}

struct ds_collbench_size ds_collbench_size_of(enum ds_coll_kind kind, double asked_bytes,
                                              int32_t nranks) {
  /* the parser bounds sizes to 1e15 bytes: whole floats fit in 64 bits */
  struct ds_nccltests_row r =
      ds_nccltests_row((uint64_t)asked_bytes, ds_collbench_splits_buffer(kind), nranks);
  return (struct ds_collbench_size){(double)r.size_bytes, (double)r.count};
}
