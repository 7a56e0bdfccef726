/*
 * Calibration files: what `ddpreal calibrate` measured on a machine, read
 * back by ddpsim (`--calib FILE`) to override the topology's `compute`
 * section.
 *
 *   schema_version: 1
 *   compute:                  # every key optional; only present keys apply
 *     flops_efficiency: 0.62  # achieved / peak FLOP/s of the fp32_math below
 *     mem_efficiency: 0.87    # achieved / peak memory bandwidth
 *     kernel_overhead: 2.5us  # fixed cost per kernel
 *     fp32_math: tf32         # tf32 or fp32: the math the efficiency is of
 *   collective:               # optional: the all-reduce fit (informative;
 *     op: allreduce           # the topology's links are not changed)
 *     nranks: 2
 *     shared: false           # ranks shared GPUs (then not separate GPUs)
 *     copy: false             # 1 rank: the "all-reduce" is a device copy
 *     alpha: 12.5us           # t = alpha + S * busfactor / bus_bw
 *     bus_bw: 350GBps
 *     fit_r2: 0.998
 *     fit_rms_rel_residual: 0.12
 *
 * The struct is plain data, so the writer (real/calib_write.c, in ddpreal,
 * which does not link libyaml) and the loader here (libyaml, in ddpsim)
 * share it without linking each other. Unknown keys are errors; units as
 * in sim/units.h; every error is "FILE:LINE:COL: key 'KEY': ...".
 */
#ifndef DS_CALIB_H
#define DS_CALIB_H

#include <stdint.h>

#include "../traces/status.h"
#include "topo.h"

#ifdef __cplusplus
extern "C" {
#endif

struct ds_calib {
  /* compute: each value applies only when its has_ flag is set */
  int has_flops_efficiency;
  double flops_efficiency; /* (0, 1] */
  int has_mem_efficiency;
  double mem_efficiency; /* (0, 1] */
  int has_kernel_overhead;
  double kernel_overhead_ns; /* >= 0 */
  int has_fp32_math;
  int fp32_uses_tf32;
  /* collective: the all-reduce fit, when has_collective */
  int has_collective;
  int32_t coll_nranks;      /* >= 1 */
  int coll_shared;          /* ranks shared GPUs */
  int coll_copy;            /* one rank: a device copy, not a collective */
  double coll_alpha_ns;     /* >= 0 */
  double coll_bus_bw_bytes_per_s; /* > 0 */
  double coll_fit_r2;
  double coll_fit_rms_rel_residual; /* >= 0 */
};

/* Reads a calibration file into *out (zeroed first). DS_EINPUT with a
 * located message for unknown keys, bad values or units, a missing or wrong
 * schema_version, or an unreadable file. */
ds_status ds_calib_load(const char *path, struct ds_calib *out, struct ds_err *err);

/* Overrides the keys of p that the file had (has_ flags); leaves the others,
 * comm_interference included, as they are. */
void ds_calib_apply_compute(const struct ds_calib *c, struct ds_compute_params *p);

#ifdef __cplusplus
}
#endif

#endif /* DS_CALIB_H */
