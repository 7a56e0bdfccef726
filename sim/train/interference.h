/*
 * Communication/computation interference as a mechanism (issue #12): while
 * an NCCL collective runs on a GPU, its kernel holds SMs (one thread block
 * per channel, as NCCL launches it), from the moment its rank reaches it,
 * spinning while it waits for its peers, and moves bytes through HBM once
 * every member has reached it (sim/train/exec_ops.c). A compute
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
 * (compute.h): compute-bound when its FLOP time sets its time. An op of
 * several kernels (a layer's own kernel, then its casts or its bias
 * gradient's reduction) takes each factor on its part.
 */
#ifndef DS_INTERFERENCE_H
#define DS_INTERFERENCE_H

#include <stdint.h>

#include "traces/schedule.h"
#include "sim/coll/nccl_model.h"
#include "sim/train/compute.h"
#include "sim/train/model.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What one running collective holds on its GPU. */
struct ds_coll_load {
  int32_t sms;
  double hbm_bytes_per_s;
};

/* The load of collective op `op` (its algo names NCCL's algorithm and
 * protocol, "ring/LL128"): NCCL's channels for that algorithm (NVLS and
 * NVLSTree: its CTAs, ds_nccl_nvls_ctas, not its heads), and HBM
 * bytes at the collective's average rate: for ring and tree its bus bytes
 * (2 (n - 1) / n x op.bytes, n = nccl's ranks) times 3 (the peer writes
 * each received byte into this GPU's memory, the reduction reads it back
 * beside the rank's own input), for NVLS twice the payload (the switch
 * reads this GPU's input once and writes its output once), over op.dur_us, the schedule's duration (what the executor knows when
 * the op starts; latency and slice syncs included, so over the whole op
 * the HBM bytes are exactly those). Zero for the plain algorithms, without
 * nccl (NULL), or for an op of no duration. */
struct ds_coll_load ds_interference_load(const struct ds_nccl_model *nccl,
                                         const struct ds_op *op);

/* 1 when compute op `op` of op class cls (DS_LAYER_UNKNOWN for ops that
 * are not a model layer's), taken as one kernel, is memory-bound under c's
 * roofline: its FLOPs, at that class's peak and efficiency, take less than
 * its duration (dur_ns, the schedule's) less the kernel overhead. Ops
 * without FLOPs are memory-bound. */
int ds_interference_memory_bound(const struct ds_compute *c, enum ds_layer_class cls,
                                 const struct ds_op *op, double dur_ns);

/* The slowdown factor (>= 1) of a compute kernel while collectives holding
 * `load` in all run beside it (load.sms == 0 and no HBM: 1, unless
 * any_collective and comm_interference): the compute-bound factor on the
 * sm_share of its time its SMs bound, the memory-bound factor on the rest
 * (sm_share 1: compute-bound, 0: memory-bound). */
double ds_interference_factor(const struct ds_compute *c, double sm_share,
                              struct ds_coll_load load, int any_collective);

/* The share of compute op `op`'s time that its SMs bound, from 0 to 1. A
 * layer's forward or backward pass itself (op.layer, its FLOPs those of the
 * layer at `batch` samples) is timed in parts by compute_layer.c: the layer's own
 * kernel when its FLOPs set its time (or a grouped convolution's measured
 * time), over the op's duration (ds_compute_sm_bound_ns); its other kernels
 * (casts, bias reductions, gradient additions, copies) are memory-bound. Any
 * other op (m NULL, batch 0, no FLOPs) is one kernel:
 * ds_interference_memory_bound on its scheduled duration gives 0 or 1; a
 * comm hook's op with FLOPs (no layer, a bucket) is judged at the rate
 * that priced it, the gradients' matmul rate, against its bytes. The
 * schedule's duration, not --jitter's or --straggler's, so noise does not
 * change what bounds an op. */
double ds_interference_sm_share(const struct ds_compute *c, const struct ds_model *m,
                                int64_t batch, const struct ds_op *op);

#ifdef __cplusplus
}
#endif

#endif /* DS_INTERFERENCE_H */
