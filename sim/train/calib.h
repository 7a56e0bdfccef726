/*
 * The calibration file's loader (libyaml, in ddpsim): the format and its
 * plain-data struct are in traces/calib_file.h, which ddpreal writes.
 */
#ifndef DS_CALIB_H
#define DS_CALIB_H

#include <stddef.h>
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

/* Most calibration files one run merges (--calib A,B or --calib A --calib
 * B), and the most bytes their names take together, terminators included. */
#define DS_CALIB_MAX_FILES 8
#define DS_CALIB_LIST_BYTES 4096

/* The keys a merge of several files counts, each of which one file at most
 * may set: the top-level gpu (two files may name the same GPU), each key of
 * compute, efficiency and host (less host.unit, which qualifies its own
 * file's dispatch and node), nccl.launch, nccl's interference measurement
 * (interference_blocks, _slowdown, _predicted: one), and the collective
 * and grouped_conv sections whole (one fit, one table). */
enum ds_calib_key {
  DS_CALIB_KEY_GPU,
  DS_CALIB_KEY_FLOPS_EFFICIENCY,
  DS_CALIB_KEY_MEM_EFFICIENCY,
  DS_CALIB_KEY_KERNEL_OVERHEAD,
  DS_CALIB_KEY_FP32_MATH,
  DS_CALIB_KEY_EFF0, /* efficiency.ds_calib_efficiency_keys[k]: EFF0 + k */
  DS_CALIB_KEY_NCCL_LAUNCH = DS_CALIB_KEY_EFF0 + DS_CALIB_EFF_KEYS,
  DS_CALIB_KEY_NCCL_INTERFERENCE,
  DS_CALIB_KEY_COLLECTIVE,
  DS_CALIB_KEY_GROUPED_CONV,
  DS_CALIB_KEY_HOST_DISPATCH,
  DS_CALIB_KEY_HOST_NODE,
  DS_CALIB_KEY_HOST_DDP_GRAD,
  DS_CALIB_KEY_HOST_DDP_BUCKET,
  DS_CALIB_KEY_HOST_DDP_BUFFER,
  DS_CALIB_KEY_HOST_DDP_ITER,
  DS_CALIB_KEY_COUNT
};

/* A key's name as messages and the provenance line write it:
 * "compute.flops_efficiency", "efficiency.conv_tf32", "nccl.interference",
 * "collective", "gpu". */
const char *ds_calib_key_name(enum ds_calib_key key);

/* Where each key of a merged calibration came from: file[key] the index
 * into the paths ds_calib_load_files was given (-1: no file set it) and
 * line[key] its line there (a section's for collective and grouped_conv). */
struct ds_calib_sources {
  int32_t n_files;
  const char *files[DS_CALIB_MAX_FILES]; /* borrowed: the paths given */
  int32_t file[DS_CALIB_KEY_COUNT];
  int32_t line[DS_CALIB_KEY_COUNT];
};

/* Reads n (1 to DS_CALIB_MAX_FILES) calibration files, each as
 * ds_calib_load reads one, and merges them into *out: a section's keys
 * from several files add up, and a key set by two files is refused
 * (DS_EINPUT, "B:LINE: key 'host.dispatch': set by A:LINE too ...") rather
 * than one silently winning; the top-level gpu may be in several files if
 * they name the same GPU, and a file naming none takes the one another
 * names. The same GPU: the same words (case ignored), or names that mean
 * one GPU of table (borrowed; NULL: words only) by the rule
 * ds_calib_gpu_fit reads them with ("NVIDIA H100 80GB HBM3", "H100 80GB
 * HBM3" and "H100-SXM5-80GB" are one GPU); names the table does not know
 * are one GPU only as the same words. A host dispatch or node needs its
 * own file's `unit: launching` (a unit in another file does not cover
 * it). The same file given twice is refused. *src (filled) says which
 * file set each key. With n 1, *out is exactly what ds_calib_load gives. */
ds_status ds_calib_load_files(const char *const *paths, int32_t n,
                              const struct ds_gpu_table *table, struct ds_calib *out,
                              struct ds_calib_sources *src, struct ds_err *err);

/* "A.yaml: gpu, compute.flops_efficiency" sep "B.yaml: host.dispatch, ..."
 * into buf (cap bytes, cut with "..." if longer): each file and the keys
 * it set, in the files' order, sep between files ("; ", or "\n" for a
 * line each). */
void ds_calib_sources_line(const struct ds_calib_sources *src, const char *sep, char *buf,
                           size_t cap);

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

/* Whether the file's top-level gpu names g (table: the GPU table g comes
 * from, for the names its smi_names give; NULL: none known): g's name,
 * case insensitive, or a name the table reads as g's alone
 * (ds_gpu_table_by_device_name: one of its smi_names, or one without its
 * vendor words) (enum in sim/net/topo.h). */
enum ds_calib_gpu_fit ds_calib_gpu_fit(const struct ds_calib *c, const struct ds_gpu_spec *g,
                                       const struct ds_gpu_table *table);

/* How the file's grouped_conv table reaches the topology's GPU g (table:
 * as ds_calib_gpu_fit's). */
enum ds_gconv_fit {
  /* the GPU it was measured on: the file's gpu names g as ds_calib_gpu_fit
   * reads it, or, a file without gpu, the same SMs */
  DS_GCONV_FIT_THIS_GPU,
  /* another GPU, g's SMs and boost clock known: the table's SM cycles on
   * them, as the built-in H200 table's */
  DS_GCONV_FIT_SCALED,
  /* another GPU, g without boost_mhz: not applied (the conv class's rate) */
  DS_GCONV_FIT_REFUSED
};
enum ds_gconv_fit ds_calib_gconv_fit(const struct ds_calib *c, const struct ds_gpu_spec *g,
                                     const struct ds_gpu_table *table);

#ifdef __cplusplus
}
#endif

#endif /* DS_CALIB_H */
