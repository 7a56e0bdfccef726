/*
 * Topologies: GPUs, switches, NICs and CPUs joined by directed links, each
 * with a bandwidth and a latency, built from a topology YAML file and the
 * GPU table (topologies/gpus.yaml).
 *
 * A topology file names a GPU type, a node count and GPUs per node, and
 * either templates -- how GPUs inside a node connect (nvlink-mesh, nvswitch,
 * or pcie-switch, with or without peer-to-peer) and, for several nodes, how
 * nodes connect (ib: NICs per node, optionally behind shared PCIe switches,
 * on one switch, on rails, or on a two-level fat tree) -- or an explicit
 * list of devices and links (GPUs numbered in order of appearance). The
 * keys are documented in docs/topologies.md.
 *
 * Routes between GPUs are shortest paths (fewest links, ties broken by link
 * creation order) that never pass through another GPU, and never leave a
 * node through a NIC except towards the inter-node fabric (a NIC entered
 * from its own node does not lead back into it). An explicit list whose GPUs
 * cannot all reach each other fails to load, naming them.
 */
#ifndef DS_TOPO_H
#define DS_TOPO_H

#include <stddef.h>
#include <stdint.h>

#include "base/status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define DS_VERTEX_KIND_MAP(X) \
  X(GPU, "gpu")               \
  X(SWITCH, "switch")         \
  X(NIC, "nic")               \
  X(CPU, "cpu")

enum ds_vertex_kind {
#define DS__VK_ENUM(e, s) DS_VERTEX_##e,
  DS_VERTEX_KIND_MAP(DS__VK_ENUM)
#undef DS__VK_ENUM
  DS_VERTEX_KIND_COUNT
};

/* The math a class of kernels runs in: vector FP32, TF32 tensor cores, or
 * the half types' (fp16, bf16) tensor cores. */
enum ds_gpu_math { DS_GPU_MATH_FP32, DS_GPU_MATH_TF32, DS_GPU_MATH_HALF, DS_GPU_MATH_COUNT };

/* Where an efficiency the compute model applies came from (compute.h; the
 * run's summary names it, sim/train/rates.h): the topology's typical
 * flops_efficiency / mem_efficiency (or their defaults), which no
 * measurement backs; the GPU table's measured `efficiency`; a calibration
 * file (--calib); the topology's own per-class key (conv_efficiency, ...);
 * or, for attention without an entry of its own, matmul's (measured or
 * set) rate; or a GPU table value that stands in for a measurement of its
 * own (its `efficiency_proxy`: another GPU's, math's or operation's
 * measured fraction, e.g. the f16 convolution's for TF32's, the H200's
 * for the H100's). */
enum ds_rate_source {
  DS_RATE_TYPICAL,
  DS_RATE_GPU_TABLE,
  DS_RATE_CALIB,
  DS_RATE_TOPOLOGY,
  DS_RATE_AS_MATMUL,
  DS_RATE_GPU_PROXY,
  /* a calibration file's compute.flops_efficiency (ddpreal calibrate's
   * GEMMs in one math) pricing a class it has no value of its own for */
  DS_RATE_CALIB_FLOPS
};

/* The GPU table's efficiency keys by index (sim/net/gpu_table.c
 * ds_gpu_efficiency_keys, in this order): CLASS_MATH at DS_GPU_EFF_CONV,
 * _MATMUL, _ATTENTION + the math, matmul_unaligned_half, conv_MATH_fwd and
 * conv_MATH_bwd at DS_GPU_EFF_CONV_FWD / _BWD + the math, memory. */
enum ds_gpu_eff_key {
  DS_GPU_EFF_CONV = 0,
  DS_GPU_EFF_MATMUL = 3,
  DS_GPU_EFF_ATTENTION = 6,
  DS_GPU_EFF_UNALIGNED = 9,
  DS_GPU_EFF_CONV_FWD = 10,
  DS_GPU_EFF_CONV_BWD = 13,
  DS_GPU_EFF_MEMORY = 16,
  DS_GPU_EFF_KEYS = 17
};

/* The longest reason an efficiency_proxy entry may give, with its NUL: the
 * run's compute-rates line prints it. */
#define DS_GPU_PROXY_WHY_MAX 64

struct ds_gpu_spec {
  char name[64];
  char arch[32]; /* the table's family ("Ampere", "Ada", ...); "" when not given */
  /* The table's compute_capability as 10 x major + minor (89: 8.9, 120:
   * 12.0); 0 when not given. gpu_table.h derives per-SM limits from it. */
  int32_t compute_capability;
  /* One NVLink's raw per-direction rate: the table's nvlink_bw over
   * nvlink_links (A100 25 GB/s, GA102's 14.0625); 0 when the table gives
   * no NVLink or no link count. NCCL's model counts a topology's NVLink
   * bandwidth in these links (sim/coll/nccl_model.h ds_nccl_nvlink_of). */
  double nvlink_link_bw_bytes_per_s;
  int32_t sms;
  int32_t boost_mhz;       /* the table's boost_mhz (0: not given): per-SM rates */
  double fp32_flops_per_s; /* vector FP32 */
  double tf32_flops_per_s; /* 0 when the GPU has no TF32 tensor cores */
  double fp16_flops_per_s;
  double bf16_flops_per_s; /* 0 when unsupported */
  double mem_bytes;
  double mem_bw_bytes_per_s;
  /* Measured achieved / peak per op class and math (the table's
   * `efficiency` map, each value cited in tools/gen_gpus.py; a calibration
   * file's `efficiency` section overrides it): 0 where nothing was
   * measured, and the topology's flops_efficiency applies. memory: the
   * fraction of mem_bw a copy reaches (0: the topology's mem_efficiency). */
  struct ds_gpu_efficiency {
    double conv[DS_GPU_MATH_COUNT];
    double matmul[DS_GPU_MATH_COUNT];
    double attention[DS_GPU_MATH_COUNT];
    /* A half-precision GEMM whose operands' leading dimensions are not
     * multiples of 8 elements (16 bytes): cuBLAS runs its narrow-load
     * kernels (compute.h, the layer's gemm_align). 0: not measured, the
     * rule is not applied on this GPU. */
    double matmul_unaligned_half;
    /* A convolution's forward pass (conv_fwd, keys conv_MATH_fwd) and its
     * backward (conv_bwd, conv_MATH_bwd: input and weight gradients
     * together), where they were measured apart: cuDNN runs different
     * kernels (fprop against dgrad and wgrad) for them. 0: the pass takes
     * conv[math], the pooled value. */
    double conv_fwd[DS_GPU_MATH_COUNT];
    double conv_bwd[DS_GPU_MATH_COUNT];
    double memory;
  } eff;
  /* The values among eff that a calibration file set (calib.h
   * ds_calib_apply_gpu), 0 elsewhere: where a rate came from. */
  struct ds_gpu_efficiency eff_calib;
  /* The values among eff that stand in for a measurement of their own (the
   * table's `efficiency_proxy`, tools/gen_gpus.py says why), each with its
   * short reason ("the f16 convolution's fraction"); "" where eff's value
   * measured that class in that math. Indexed by enum ds_gpu_eff_key. */
  char eff_proxy[DS_GPU_EFF_KEYS][DS_GPU_PROXY_WHY_MAX];
  /* A dense (groups 1) convolution timed by its implicit GEMM's tiles
   * (gpus.yaml `conv_tiles`, per math; compute.h): the GEMM is M = batch x
   * output positions by n = min(Cin k^2, Cout), run as tile_m x tile_n
   * tiles in waves of `sms`; a pass takes call_ns[pass] + max(FLOPs /
   * (eff[pass] x peak x useful share), bytes' time) beside kernel_overhead.
   * tile_m 0: not measured, the efficiencies above apply. [0] forward, [1]
   * backward (both gradients). n is the narrower of the reduction depth
   * Cin k^2 and Cout; both backward passes are charged on the forward's M
   * and n, a proxy the fitted bwd efficiency absorbs (the real dgrad and
   * wgrad GEMMs have other shapes). No fit data covers batches below 32:
   * there the fixed call_ns per charge and a small share dominate (H200
   * ResNet-50 AMP channels-last batch 1 backward 1.35 ms pooled -> 2.46). */
  struct ds_conv_tiles {
    int32_t tile_m, tile_n;
    double eff[2];
    double call_ns[2];
  } conv_tiles[DS_GPU_MATH_COUNT];
};

/* A calibration file's GPU against the run's (sim/train/calib.h
 * ds_calib_gpu_fit): the one it names, none named, or another. */
enum ds_calib_gpu_fit { DS_CALIB_GPU_SAME, DS_CALIB_GPU_UNNAMED, DS_CALIB_GPU_OTHER };

/* Efficiency factors of the roofline compute model (see compute.h). */
struct ds_compute_params {
  double flops_efficiency;  /* achieved / peak FLOP/s, (0, 1] */
  /* Per op class (model files' `class`; compute.h), keys conv_efficiency,
   * matmul_efficiency, attention_efficiency: achieved / peak FLOP/s of
   * that class's math; 0: flops_efficiency. */
  double conv_efficiency;
  double matmul_efficiency;
  double attention_efficiency;
  /* achieved / peak memory bandwidth, (0, 1]: the key mem_efficiency, else
   * the GPU table's measured eff.memory, else 0.7 (ds_topo_load resolves it) */
  double mem_efficiency;
  /* Where flops_efficiency and mem_efficiency came from: DS_RATE_TYPICAL
   * (the topology's keys or their defaults), DS_RATE_GPU_TABLE (mem: the
   * table's eff.memory), DS_RATE_CALIB (--calib's compute section). */
  enum ds_rate_source flops_efficiency_source, mem_efficiency_source;
  /* --calib's GPU against this run's, which words its DS_RATE_CALIB and
   * _CALIB_FLOPS rates (sim/train/rates.c); calib_gpu: the GPU it names
   * (the table's name where the table knows it), for DS_CALIB_GPU_OTHER */
  enum ds_calib_gpu_fit calib_gpu_fit;
  char calib_gpu[DS_GPU_PROXY_WHY_MAX];
  double kernel_overhead_ns; /* fixed cost added to every kernel */
  double comm_interference; /* compute slowdown while a collective runs on the GPU */
  /* Per-call NCCL launch cost measured on this machine (a calibration
   * file's nccl.launch; 0: NCCL's fitted per-call extra, nccl_model.h) */
  double nccl_launch_ns;
  int fp32_uses_tf32;       /* fp32 math on TF32 tensor cores (cuDNN default) */
  /* Host time per forward kernel launch that holds Python's GIL (key
   * host_launch, default 20us): dp's replica threads take it in turn;
   * single and each DDP process pay it once per forward kernel. Host time
   * of dp's replicate() per parameter tensor per replica (key
   * host_replicate, default 5us). */
  double host_launch_ns;
  double host_replicate_ns;
  /* The autograd engine's thread (docs/strategies.md, "The host costs"): host
   * time per backward layer (host_backward, default 46us); DDP's reducer
   * on that thread per gradient as its hook fires (host_grad_hook, 19.4us),
   * per gradient copied back in finalize_backward (host_grad_copy, 5.8us)
   * and per collective call of a bucket (host_collective, 43.1us); on the
   * Python thread before the forward, per buffer broadcast_buffers syncs
   * (host_buffer, 24.69us: sim/net/topo_compute.c); once per synchronising
   * forward, DDP's per-iteration work (host_ddp_iter, 143.2us: the
   * reducer's prepare_for_forward and prepare_for_backward, the logger, the
   * finalize_backward callback; sim/net/topo_compute.c). 0: no host op. */
  double host_backward_ns;
  /* The host per unit of work, for model files with host counts (model.h,
   * sim/train/host.h): per top-level ATen op a forward dispatches from
   * Python (host_op), per aten op those calls dispatch that launches a
   * kernel (host_dispatch: host_dispatches less host_views), per cast
   * autocast dispatches inside those ops (host_cast), per autograd node the
   * backward runs that launches a kernel (host_node: host_nodes less
   * host_view_nodes). Measured
   * on H200 (sim/net/topo_compute.c cites the arithmetic). host_launch and
   * host_backward then apply only to model files without counts. */
  double host_op_ns;
  /* Per aten op a forward dispatches, nested ones included, for model
   * files with host_dispatches (replaces host_op there); where the file
   * has host_views, per dispatch that launches a kernel (views free). */
  double host_dispatch_ns;
  double host_cast_ns;
  double host_node_ns;
  double host_grad_hook_ns;
  double host_grad_copy_ns;
  double host_collective_ns;
  double host_buffer_ns;
  double host_ddp_iter_ns;
  /* The foreach optimizer step's Python thread (PyTorch's default; the
   * --optimizer-loop path charges its launches instead): host_step_call
   * per optimizer.step() and, per parameter tensor, host_step_param under
   * SGD and host_step_param_adam under Adam (sim/net/topo_compute.c: measured). */
  double host_step_call_ns;
  double host_step_param_ns;
  double host_step_param_adam_ns;
};

/* Multiplies every host_* cost of p by factor (> 0; --host-scale): the
 * CPU time of the Python/PyTorch host (launch, replicate, backward, op,
 * dispatch, cast, node, grad_hook, grad_copy, collective, buffer, ddp_iter, step_call,
 * step_param, step_param_adam). The GPU's times
 * (kernel_overhead, the efficiencies, comm_interference) and nccl_launch_ns
 * (NCCL's own per-call cost, measured without Python) stay. */
void ds_topo_scale_host(struct ds_compute_params *p, double factor);

/* The fastest and slowest measured H200 host's host costs over the pooled
 * defaults (sim/net/topo_compute.c says how they are derived): the range ddpsim's
 * summary prints for a host-bound run. */
extern const double ds_topo_host_factor_fastest;
extern const double ds_topo_host_factor_slowest;

/* The defaults of host_grad_hook and host_grad_copy, ns (sim/net/topo_compute.c
 * says how they were measured): a calibration's per-gradient DDP cost (the
 * host section's ddp_grad, sim/train/calib.h) splits in their proportion. */
extern const double ds_topo_host_grad_hook_default_ns;
extern const double ds_topo_host_grad_copy_default_ns;

struct ds_link {
  int32_t src;    /* vertex ids */
  int32_t dst;
  double bw_bytes_per_s;
  double lat_ns;
  const char *kind; /* "nvlink", "pcie", "qpi", "ib", "mem" (host memory,
                       pcie-switch's host_mem_bw): static string */
};

struct ds_route_cache_entry;

/* The host CPU's vendor as NCCL's tuning tells hosts apart (tuning.cc
 * v2.30.7: LL's bandwidth cap across nodes, getNetOverhead; search.cc
 * followPath's 6/5 through an x86 Intel root complex): x86 Intel, x86 AMD,
 * Arm (any non-x86 host: NCCL's tuning takes Intel's LL row, :270, and
 * its 1 us network overhead, :228-233, but the search charges no 6/5,
 * ring_channels.h ds__ring_intel_root_complex), or mixed, hosts whose
 * CPUs differ (init.cc:1306-1307 gives every rank NCCL_TOPO_CPU_VENDOR_MIXED:
 * AMD's LL cap, tuning.cc:270, but Intel's network overhead, :228-233).
 * Intel is 0: a topology built without the key gets it. */
enum ds_cpu_vendor {
  DS_CPU_VENDOR_INTEL = 0,
  DS_CPU_VENDOR_AMD,
  DS_CPU_VENDOR_MIXED,
  DS_CPU_VENDOR_ARM
};

/* The key's value for v: "intel", "amd", "mixed" or "arm". */
const char *ds_topo_cpu_vendor_name(enum ds_cpu_vendor v);

struct ds_topo {
  char *name;       /* owned */
  char *path;       /* owned: the file it was loaded from */
  struct ds_gpu_spec gpu;
  struct ds_compute_params compute;
  int32_t n_nodes;
  int32_t gpus_per_node;
  int32_t n_gpus;
  char intra_template[16]; /* template name, or "explicit" */
  int32_t gpus_per_switch; /* pcie-switch: GPUs per PCIe switch; when it does
                              not divide gpus_per_node the node's last switch
                              holds the rest (3 + 1 for 4 GPUs). 0 otherwise */
  char inter_template[16]; /* "ib", "ib-rail", "ib-fattree", "ib-rail-fattree",
                              "explicit", or "none" for one node */
  int nvls;                /* the nvswitch reduces in place (NVLS): key nvls,
                              default on for Hopper and later GPUs */
  enum ds_cpu_vendor cpu_vendor; /* the hosts' CPU vendor: key cpu_vendor,
                                    default Intel (NCCL's tuning reads it) */
  int32_t n_vertices;
  enum ds_vertex_kind *vertex_kind; /* [n_vertices] */
  int32_t *vertex_node;             /* [n_vertices], node index; -1: the fabric */
  int32_t *gpu_vertex;              /* [n_gpus]: vertex id of GPU g */
  /* [n_vertices], owned: each vertex's name in an explicit `devices:`
   * list (topo_list.c), what `ddpsim topo` prints; NULL for templates,
   * whose devices it names by kind and index */
  char **vertex_name;
  struct ds_link *links;            /* [n_links] */
  int32_t n_links;
  int32_t *out_first; /* CSR adjacency: out links of v are */
  int32_t *out_links; /* out_links[out_first[v] .. out_first[v+1]) */
  int32_t *in_first;  /* CSR of in links: links into v are */
  int32_t *in_links;  /* in_links[in_first[v] .. in_first[v+1]) */
  /* Links into v from a hub (a vertex of more than hub_degree out links),
   * hub_in[hub_in_first[v] ..): a search expands a hub lazily (topo_route.c). */
  int32_t *hub_in_first;
  int32_t *hub_in;
  int32_t hub_degree;
  int32_t *scratch_prev;  /* route search: link that reached v, or -1 */
  uint32_t *scratch_seen; /* route search: stamp of the search that saw v */
  int32_t *scratch_queue; /* [2 n_vertices]: vertices, and hubs' pending out links */
  uint32_t *scratch_hub;  /* route search: stamp of the search that expanded hub v */
  uint8_t *scratch_hub_out; /* ... whether hub v, a NIC, leads only out of its node */
  uint32_t *scratch_inn;  /* route search: stamp when v has a link into the target */
  int32_t *scratch_inn_link; /* ... that link */
  uint32_t scratch_stamp;
  /* Routes found so far, direct-mapped by GPU pair (ds_topo_route; a
   * search is deterministic, so a cached route is the one a search would
   * find). Allocated on the first route; NULL if that failed (no cache). */
  struct ds_route_cache_entry *route_cache;
  uint32_t route_cache_slots;
};

/* Loads a topology file; the GPU table is read from gpus.yaml in the same
 * directory as path, or from gpus_path when it is not NULL. */
ds_status ds_topo_load(const char *path, const char *gpus_path,
                       struct ds_topo **out, struct ds_err *err);
void ds_topo_free(struct ds_topo *topo);

struct ds_cnode;
/* Reads an fp32_math value (tf32 or fp32) into *uses_tf32: the topology's
 * compute section and a --calib file's share this reader, so the two
 * files cannot disagree on the key's values. Exit-2 error naming the node
 * otherwise. */
ds_status ds_topo_read_fp32_math(const struct ds_cnode *node, int *uses_tf32,
                                 struct ds_err *err);

/* The most GPUs a topology may hold (topo.c, MAX_GPUS: loading grows with
 * the square of the GPU count); `ddpsim topo import` writes no more. */
#define DS_TOPO_MAX_GPUS 16384

/* Links a route may have: the cap every caller of ds_topo_route gives
 * (its route arrays' size). Machines' routes are a few links (GPU, switches,
 * NICs, the fabric's tiers); one longer is DS_EINTERNAL, not a crash. */
#define DS_TOPO_MAX_ROUTE 64

/* Finds the route from GPU src to GPU dst (GPU indices, src != dst). Writes
 * up to cap link ids into links and their count into *n_links. DS_EINPUT
 * when dst is unreachable (message names both GPUs), DS_EINTERNAL when cap
 * is too small. Uses scratch memory of the topology: not thread-safe. */
ds_status ds_topo_route(struct ds_topo *topo, int32_t src, int32_t dst,
                        int32_t *links, int32_t cap, int32_t *n_links,
                        struct ds_err *err);

const char *ds_vertex_kind_name(enum ds_vertex_kind kind);

#ifdef __cplusplus
}
#endif

#endif /* DS_TOPO_H */
