/*
 * Interference of collectives with compute (interference.h). Pure
 * functions of the op, NCCL's model and the GPU: the executor keeps what
 * runs where and re-rates a running kernel when a collective starts or
 * ends beside it.
 */
#include "sim/train/interference.h"

#include <string.h>

struct ds_coll_load ds_interference_load(const struct ds_nccl_model *nccl,
                                         const struct ds_op *op) {
  struct ds_coll_load none = {0, 0};
  enum ds_ar_algo a;
  enum ds_proto p;
  if (!nccl || op->kind != DS_OP_ALLREDUCE ||
      ds_allreduce_algo_parse(op->algo, &a, &p) != DS_OK || p >= DS_PROTO_COUNT)
    return none;
  switch (a) {
  case DS_AR_RING:
    return (struct ds_coll_load){nccl->channels, 3 * nccl->busbw_bytes_per_s[p]};
  case DS_AR_TREE:
    return (struct ds_coll_load){nccl->channels, 3 * nccl->tree_busbw_bytes_per_s[p]};
  case DS_AR_NVLS:
    return (struct ds_coll_load){nccl->nvls_channels, 2 * nccl->nvls_busbw_bytes_per_s};
  default:
    return none;
  }
}

int ds_interference_memory_bound(const struct ds_compute *c, enum ds_layer_class cls,
                                 const struct ds_op *op, double dur_ns) {
  if (!(op->flops > 0)) return 1;
  if ((unsigned)cls > DS_LAYER_MEMORY) cls = DS_LAYER_UNKNOWN;
  double flops_ns =
      op->flops / (c->class_peak_flops_per_s[cls] * c->class_efficiency[cls]) * 1e9;
  double body_ns = dur_ns - c->params.kernel_overhead_ns;
  /* the roofline's max(): compute-bound when the FLOP time is the body
   * (a relative slack for the rounding of dur_us in the schedule) */
  return flops_ns < body_ns * (1 - 1e-9);
}

double ds_interference_factor(const struct ds_compute *c, int memory_bound,
                              struct ds_coll_load load, int any_collective) {
  double f = 1;
  if (memory_bound && load.hbm_bytes_per_s > 0) {
    double bw = c->mem_bw_bytes_per_s * c->params.mem_efficiency;
    double left = bw - load.hbm_bytes_per_s;
    f = bw / (left > bw / 10 ? left : bw / 10);
  } else if (!memory_bound && load.sms > 0) {
    int32_t sms = c->sms;
    int32_t left = sms - load.sms;
    f = (double)sms / (left > 1 ? left : 1);
  }
  if (any_collective) f *= 1.0 + c->params.comm_interference;
  return f;
}
