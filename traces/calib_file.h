/*
 * Calibration files: what was measured on a machine, read back by ddpsim
 * (`--calib FILE`; several, one per tool, merged key by key:
 * sim/train/calib.h ds_calib_load_files) to override keys of the topology's `compute` section
 * (efficiencies, kernel_overhead, fp32_math, comm_interference,
 * host_dispatch, host_node, and DDP's host_grad_hook, host_grad_copy,
 * host_collective, host_buffer), NCCL's per-call launch cost, and the GPU
 * table's efficiencies and grouped convolution times. Written
 * by `ddpreal calibrate` (gpu, compute, efficiency, nccl, collective),
 * tools/gen_grouped_conv.py --calib (grouped_conv),
 * bench/host_calibrate.py --calib-out (host: dispatch, node) and
 * bench/torch_ddp_host.py --calib-out (host: ddp_grad, ddp_bucket,
 * ddp_buffer, ddp_iter).
 *
 *   schema_version: 1
 *   gpu: "NVIDIA H200"        # optional: the device measured, as CUDA and
 *                             # nvidia-smi name it (ddpreal calibrate writes
 *                             # it; files before 2026-11-27 lack it)
 *   compute:                  # every key optional; only present keys apply
 *     flops_efficiency: 0.62  # achieved / peak FLOP/s of the fp32_math below
 *     mem_efficiency: 0.87    # achieved / peak memory bandwidth
 *     kernel_overhead: 2.5us  # fixed cost per kernel
 *     fp32_math: tf32         # tf32 or fp32: the math the efficiency is of
 *   efficiency:               # optional: achieved / peak per op class and
 *     matmul_fp32: 0.63       # math (the GPU table's keys, memory excepted:
 *     matmul_tf32: 0.19       # that is mem_efficiency above); replaces the
 *     conv_tf32: 0.21         # GPU table's values (sim/train/compute.h)
 *   nccl:                     # optional: what NCCL costs on this machine
 *     launch: 7.5us           # per-call cost of a tiny all-reduce (replaces
 *                             # the fitted per-call extra, nccl_model.h)
 *     interference_blocks: 16 # a copy kernel of that many blocks beside a
 *     interference_slowdown: 1.16  # GEMM: its measured slowdown, and the
 *     interference_predicted: 1.14 # SMs/(SMs-blocks) of the mechanism;
 *                             # comm_interference = slowdown/predicted - 1
 *   collective:               # optional: the all-reduce fit (informative;
 *     op: allreduce           # the topology's links are not changed)
 *     nranks: 2
 *     shared: false           # ranks shared GPUs (then not separate GPUs)
 *     copy: false             # 1 rank: the "all-reduce" is a device copy
 *     alpha: 12.5us           # t = alpha + S * busfactor / bus_bw
 *     bus_bw: 350GBps
 *     fit_r2: 0.998
 *     fit_rms_rel_residual: 0.12
 *   grouped_conv:             # optional: grouped 3x3 convolutions' measured
 *     gpu: NVIDIA H200        # kernel times (sim/train/grouped_conv.h),
 *     sms: 132                # replacing the built-in H200 table; the GPU
 *     boost_mhz: 1980         # measured on: its name as the device reports
 *     entries:                # it (optional: older files), SMs, boost clock
 *       - {mode: tf32, group_width: 4, out_channels: 128, out_positions: 3136,
 *          stride: 1, batch: 32, fwd_us: 151.4, dgrad_us: 141.7, wgrad_us: 253.2}
 *   host:                     # optional: this machine's host (CPU) per unit
 *     unit: launching         # (required with dispatch or node: their unit;
 *                             # files of older units have none, refused)
 *     dispatch: 27.3us        # of work, replacing the topology's compute
 *     node: 26.2us            # keys host_dispatch and host_node (topo.h):
 *                             # per kernel-launching aten op a forward
 *                             # dispatches, per autograd node a backward
 *                             # runs that launches a kernel; measured with
 *                             # the GPU held behind a spin
 *                             # (bench/host_calibrate.py --calib-out); a
 *                             # unit is required (a bare 27 is refused,
 *                             # not read as 27 s)
 *     ddp_grad: 33.0us        # DDP's reducer per gradient: host_grad_hook
 *                             # + host_grad_copy, split as the defaults:
 *                             # the copy 5.8us (all of a smaller value),
 *                             # the hook the rest (the copy part is what
 *                             # --grad-as-bucket-view drops)
 *     ddp_bucket: 45.1us      # per bucket's collective call: host_collective
 *     ddp_buffer: 14.2us      # per buffer broadcast_buffers syncs:
 *                             # host_buffer
 *     ddp_iter: 143us         # per synchronising iteration: host_ddp_iter
 *                             # (the ddp_* keys from
 *                             # bench/torch_ddp_host.py --calib-out)
 *
 * gpu: ddpsim calls the file's efficiencies measured only on the GPU it
 * names (the topology's GPU name, one of its smi_names, or such a name
 * without its vendor words where that names one GPU, sim/train/calib.h
 * ds_calib_gpu_fit); on another GPU they stand in, labelled so, and a file
 * without it is said to name none.
 *
 * grouped_conv: every key but gpu required. gpu: the measured GPU's name
 * as the CUDA device (and nvidia-smi) reports it; ddpsim applies the table
 * as measured only on that GPU (named as for the efficiencies,
 * sim/train/calib.h ds_calib_gconv_fit), and on a file without
 * it only where the SM counts agree. entries: 1 to DS_GCONV_MAX_ENTRIES
 * mappings, each with every key: mode fp32 | tf32 | half | half_nhwc (the
 * math the convolution ran in: FP32, TF32, half precision NCHW or
 * channels-last), group_width (input channels per group), out_channels,
 * out_positions (output height x width), stride, batch (integers >= 1),
 * and the forward, input-gradient and weight-gradient kernel times in
 * microseconds (> 0); no two entries of one mode, shape and batch.
 * bench/gpu_kernels.py measures them and tools/gen_grouped_conv.py --calib
 * writes the file (docs/architecture.md, "Grouped convolutions").
 *
 * The format crosses from the replay to the simulator, as the schedule and
 * the trace do, so it lives here. The struct is plain data: the writer
 * here (plain stdio, no CUDA and no libyaml; ddpreal calibrate) and the
 * loader (sim/train/calib.c, libyaml, in ddpsim) share it without linking
 * each other. Unknown keys are errors; units as
 * in base/units.h; every error is "FILE:LINE:COL: key 'PATH': ..." (PATH as
 * compute.kernel_overhead).
 */
#ifndef DS_CALIB_FILE_H
#define DS_CALIB_FILE_H

#include <stdint.h>
#include <stdio.h>

#include "traces/gconv_table.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The efficiency section's keys, in the order of the GPU table's
 * (sim/net/gpu_table.h ds_gpu_efficiency_keys, less memory; a test checks
 * they agree): conv, matmul, attention, each in fp32, tf32, half, then
 * matmul_unaligned_half (compute.h: half GEMMs on unaligned operands), then
 * the convolutions' forward and backward apart, each in fp32, tf32, half. */
#define DS_CALIB_EFF_KEYS 16

/* The host section's `unit` beside dispatch and node (sim/train/calib.c
 * requires it, ds_calib_write writes it): per aten op dispatched and per
 * autograd node that launch a kernel. */
#define DS_CALIB_HOST_UNIT "launching"
extern const char *const ds_calib_efficiency_keys[DS_CALIB_EFF_KEYS];

struct ds_calib {
  /* the GPU measured, as the device reports its name; "": not named */
  char gpu[64];
  /* compute: each value applies only when its has_ flag is set */
  int has_flops_efficiency;
  double flops_efficiency; /* (0, 1] */
  int has_mem_efficiency;
  double mem_efficiency; /* (0, 1] */
  int has_kernel_overhead;
  double kernel_overhead_ns; /* >= 0 */
  int has_fp32_math;
  int fp32_uses_tf32;
  /* efficiency: eff[k] for key ds_calib_efficiency_keys[k]; 0 = absent */
  double eff[DS_CALIB_EFF_KEYS];
  /* nccl */
  int has_nccl_launch;
  double nccl_launch_ns; /* >= 0 */
  int has_interference;
  int32_t interference_blocks;    /* >= 1 */
  double interference_slowdown;   /* >= 1 */
  double interference_predicted;  /* >= 1 */
  /* lines of interference_blocks and interference_predicted in the file
   * read (ds_calib_load), for the check against the GPU's SMs; 0 else */
  int32_t interference_blocks_line, interference_predicted_line;
  /* collective: the all-reduce fit, when has_collective */
  int has_collective;
  int32_t coll_nranks;      /* >= 1 */
  int coll_shared;          /* ranks shared GPUs */
  int coll_copy;            /* one rank: a device copy, not a collective */
  double coll_alpha_ns;     /* >= 0 */
  double coll_bus_bw_bytes_per_s; /* > 0 */
  double coll_fit_r2;
  double coll_fit_rms_rel_residual; /* >= 0 */
  /* grouped_conv: measured on a GPU of gconv_sms SMs at gconv_clock_hz,
   * n_gconv entries (0 = section absent) */
  int32_t n_gconv;
  int32_t gconv_sms;       /* >= 1 */
  char gconv_gpu[64];      /* its name as the device reports it; "": not named */
  double gconv_clock_hz;   /* > 0, read and written in MHz */
  struct ds_gconv_entry gconv[DS_GCONV_MAX_ENTRIES];
  /* host: each applies only when its has_ flag is set */
  int has_host_dispatch;
  double host_dispatch_ns; /* >= 0 */
  int has_host_node;
  double host_node_ns; /* >= 0 */
  /* DDP's reducer (bench/torch_ddp_host.py --calib-out): per gradient
   * (host_grad_hook + host_grad_copy), per bucket call (host_collective),
   * per broadcast buffer (host_buffer) */
  int has_host_ddp_grad;
  double host_ddp_grad_ns; /* >= 0 */
  int has_host_ddp_bucket;
  double host_ddp_bucket_ns; /* >= 0 */
  int has_host_ddp_buffer;
  double host_ddp_buffer_ns; /* >= 0 */
  /* per synchronising iteration (host_ddp_iter) */
  int has_host_ddp_iter;
  double host_ddp_iter_ns; /* >= 0 */
};

/* Writes `header` as is (comment lines, each starting with '#' and ending
 * with '\n'; may be NULL), then schema_version and the sections whose keys
 * are present in c. Values carry 6 significant digits in the units the
 * loader reads (times in us, bandwidths in GBps), so write -> load -> write
 * gives the same text. Returns 0, or -1 when the stream reports an error. */
int ds_calib_write(FILE *fp, const struct ds_calib *c, const char *header);

#ifdef __cplusplus
}
#endif

#endif /* DS_CALIB_FILE_H */
