/*
 * Internal to NCCL's cost model (sim/coll/nccl_model.c, the search and the
 * model's build; sim/coll/nccl_tuning.c, the predictions and the choice;
 * sim/coll/nccl_chunking.c, the extras, chunking and what the simulation
 * runs; sim/coll/nccl_p2p.c, point-to-point): the units and table indices
 * they share and the tree's size corrections, inline (the prediction and
 * the simulated protocol both take them). Not for other modules.
 */
#ifndef DS_NCCL_MODEL_IMPL_H
#define DS_NCCL_MODEL_IMPL_H

#include <math.h>

#include "sim/coll/nccl_model.h"

#define US 1e3
#define TREE 0 /* algorithm indices of the generated tables */
#define RING 1

/* The size correction of the tree's bandwidth: NCCL v2.30.7-1
 * src/graph/tuning.cc:639-642 ncclTopoGetAlgoTime (logSize = log2i(nBytes
 * >> 6), treeCorrectionFactor for logSize < 23, all-reduce only). */
static inline double ds__nccl_tree_correction_at(enum ds_proto p, double bytes) {
  double units = floor(bytes / 64);
  if (units < 1) return 1;
  int log_size = (int)floor(log2(units));
  return log_size < 23 ? ds__nccl_tree_correction[p][log_size] : 1;
}

/* tuning.cc: NVLSTree's size correction (Blackwell, x86): the same table
 * as the tree's, its last entry (log size 23) included (v2.30.7-1
 * :643-646). */
static inline double ds__nccl_nvls_tree_correction_at(enum ds_proto p, double bytes) {
  double units = floor(bytes / 64);
  if (units < 1) return 1;
  int log_size = (int)floor(log2(units));
  return log_size < 24 ? ds__nccl_tree_correction[p][log_size] : 1;
}

#endif /* DS_NCCL_MODEL_IMPL_H */
