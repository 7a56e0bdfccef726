/*
 * The calibration file's loader (libyaml, in ddpsim): the format and its
 * plain-data struct are in traces/calib_file.h, which ddpreal writes.
 */
#ifndef DS_CALIB_H
#define DS_CALIB_H

#include <stdint.h>

#include "base/status.h"
#include "traces/calib_file.h"
#include "sim/net/gpu_table.h"
#include "sim/net/topo.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Reads a calibration file into *out (zeroed first). DS_EINPUT with a
 * located message for unknown keys, bad values or units, a missing or wrong
 * schema_version, or an unreadable file. */
ds_status ds_calib_load(const char *path, struct ds_calib *out, struct ds_err *err);

/* Overrides the keys of p that the file had (has_ flags); leaves the others
 * as they are. nccl.launch sets nccl_launch_ns, host.dispatch and host.node
 * host_dispatch_ns and host_node_ns; host.ddp_grad G sets host_grad_hook_ns
 * and host_grad_copy_ns to G x 7.7/13.5 and G x 5.8/13.5 (the defaults'
 * proportion, sim/net/topo.h ds_topo_host_grad_*_default_ns), host.ddp_bucket
 * host_collective_ns, host.ddp_buffer host_buffer_ns, host.ddp_iter
 * host_ddp_iter_ns; the nccl interference
 * measurement sets comm_interference to max(0, slowdown / predicted - 1):
 * the part of the measured slowdown the SM mechanism does not explain. */
void ds_calib_apply_compute(const struct ds_calib *c, struct ds_compute_params *p);

/* Overrides the GPU's measured efficiencies (g->eff) with the file's
 * efficiency section, key by key; a pooled conv_MATH also clears the
 * table's conv_MATH_fwd and conv_MATH_bwd, so a convolution rate measured
 * on this machine is not shadowed by the table's per-pass values (the file
 * may set those too, or a pass alone over the table's pooled value). */
void ds_calib_apply_gpu(const struct ds_calib *c, struct ds_gpu_spec *g);

/* The file's grouped_conv table as a lookup table (sim/train/
 * grouped_conv.h) borrowing c's entries: valid while c lives, and only when
 * c->n_gconv > 0 (otherwise keep the built-in table). on_target and
 * from_calib are set: measured on the simulated machine, its times apply
 * as measured (no SMs x clock transfer); clear on_target where
 * ds_calib_gconv_fit says DS_GCONV_FIT_SCALED. */
void ds_calib_gconv_table(const struct ds_calib *c, struct ds_gconv_table *out);

/* Refuses (DS_EINPUT, naming path, the key's line and the key) a file's
 * nccl.interference_blocks of sms or more, or an interference_predicted
 * more than 1 % from sms / (sms - blocks), sms the SM count of the GPU the file was measured on (gpu its
 * name, for the message); DS_OK without those keys or with sms 0 (the GPU
 * unknown). */
ds_status ds_calib_check_interference(const struct ds_calib *c, const char *path, int32_t sms,
                                      const char *gpu, struct ds_err *err);

/* Whether the file's top-level gpu names g (info: its GPU table entry, for
 * its smi_names; NULL: none known): the GPU's name or one of its
 * smi_names, case insensitive (enum in sim/net/topo.h). */
enum ds_calib_gpu_fit ds_calib_gpu_fit(const struct ds_calib *c, const struct ds_gpu_spec *g,
                                       const struct ds_gpu_info *info);

/* How the file's grouped_conv table reaches the topology's GPU g (info:
 * its GPU table entry, for its smi_names; NULL: none known). */
enum ds_gconv_fit {
  /* the GPU it was measured on: the file's gpu is g's name or one of its
   * smi_names (case insensitive), or, a file without gpu, the same SMs */
  DS_GCONV_FIT_THIS_GPU,
  /* another GPU, g's SMs and boost clock known: the table's SM cycles on
   * them, as the built-in H200 table's */
  DS_GCONV_FIT_SCALED,
  /* another GPU, g without boost_mhz: not applied (the conv class's rate) */
  DS_GCONV_FIT_REFUSED
};
enum ds_gconv_fit ds_calib_gconv_fit(const struct ds_calib *c, const struct ds_gpu_spec *g,
                                     const struct ds_gpu_info *info);

#ifdef __cplusplus
}
#endif

#endif /* DS_CALIB_H */
