/*
 * Communication/computation interference as a mechanism (issue #12): while
 * an NCCL collective runs on a GPU, its kernel holds SMs (one thread block
 * per channel, as NCCL launches it) and moves bytes through HBM. A compute
 * kernel that overlaps it runs on what is left: a compute-bound kernel on
 * the SMs left, a memory-bound one on the HBM bandwidth left.
 *
 *   compute-bound: factor = SMs / (SMs - held SMs)
 *   memory-bound:  factor = B / max(B - held HBM, B / 10), B = mem_bw * mem_efficiency
 *
 * times (1 + comm_interference), the topology's extra factor (0 in every
 * shipped topology), while any collective runs. The plain algorithms
 * (--algo ring without a protocol, direct, ...) are not NCCL's kernels and
 * hold nothing. What a kernel is bound by is the roofline's own answer
 * (compute.h): compute-bound when its FLOP time is its duration.
 */
#ifndef DS_INTERFERENCE_H
#define DS_INTERFERENCE_H

#include <stdint.h>

#include "traces/schedule.h"
#include "sim/coll/nccl_model.h"
#include "sim/train/compute.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What one running collective holds on its GPU. */
struct ds_coll_load {
  int32_t sms;
  double hbm_bytes_per_s;
};

/* The load of collective op `op` (its algo names NCCL's algorithm and
 * protocol, "ring/LL128"): NCCL's channels for that algorithm, and its bus
 * bandwidth under NCCL's model times the HBM accesses per bus byte: 3 for
 * ring and tree (the peer writes each received byte into this GPU's
 * memory, the reduction reads it back beside the rank's own input), 2 for
 * NVLS (the switch reads each input once and writes each output once).
 * Zero for the plain algorithms, or without nccl (NULL). */
struct ds_coll_load ds_interference_load(const struct ds_nccl_model *nccl,
                                         const struct ds_op *op);

/* 1 when compute op `op` of op class cls (DS_LAYER_UNKNOWN for ops that
 * are not a model layer's) is memory-bound under c's roofline: its FLOPs,
 * at that class's peak and efficiency, take less than its duration (dur_ns,
 * after --jitter's scale) less the kernel overhead. Ops without FLOPs are
 * memory-bound. */
int ds_interference_memory_bound(const struct ds_compute *c, enum ds_layer_class cls,
                                 const struct ds_op *op, double dur_ns);

/* The slowdown factor (>= 1) of a compute kernel while collectives holding
 * `load` in all run beside it (load.sms == 0 and no HBM: 1, unless
 * any_collective and comm_interference). */
double ds_interference_factor(const struct ds_compute *c, int memory_bound,
                              struct ds_coll_load load, int any_collective);

#ifdef __cplusplus
}
#endif

#endif /* DS_INTERFERENCE_H */
