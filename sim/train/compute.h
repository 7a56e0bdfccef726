/*
 * The compute model: a roofline per kernel.
 *
 *   t = max(flops / (peak(dtype) * flops_efficiency),
 *           bytes / (mem_bw * mem_efficiency)) + kernel_overhead
 *
 * peak(dtype) is the GPU table's dense tensor rate for fp16/bf16, TF32 for
 * fp32 when the topology says fp32_math: tf32 (cuDNN's default for
 * convolutions), vector FP32 otherwise. Under --amp (autocast) the math is
 * the half type's tensor rate while parameters, gradients and optimizer
 * state stay fp32 (struct ds_precision).
 *
 * By op class (a layer's `class` in the model file): in fp32 training PyTorch
 * runs convolutions on TF32 (torch.backends.cudnn.allow_tf32 is True by
 * default) and matmuls and attention in full FP32
 * (torch.backends.cuda.matmul.allow_tf32 False, float32_matmul_precision
 * 'highest'); --tf32 all turns TF32 on for matmuls too, --tf32 none off for
 * convolutions. Half-precision training (--dtype, --amp) runs every class
 * on the half type's tensor cores. Memory-class layers (elementwise,
 * normalisation) are bound by their bytes. Each class's efficiency, in the
 * math it runs in: the topology's conv_/matmul_/attention_efficiency when
 * set (an explicit override), else the GPU table's measured value for that
 * class and math (gpus.yaml `efficiency`, cited in tools/gen_gpus.py; a
 * calibration file's `efficiency` section replaces it), else (attention)
 * matmul's, else flops_efficiency. A convolution's forward and backward
 * each take the table's value for their pass where it has one (conv_MATH_fwd,
 * conv_MATH_bwd: cuDNN's fprop against its dgrad and wgrad kernels), the
 * pooled conv_MATH otherwise (conv_pass_efficiency below; the topology's
 * conv_efficiency overrides every pass). A layer without a class runs as before:
 * the topology's fp32_math and flops_efficiency. The efficiency factors and the
 * overhead come from the topology file's `compute` section, so every
 * predicted duration can be recomputed by hand from the files.
 *
 * An unfused attention core with the model file's attn_products and
 * attn_rest (model.h) is its kernels, whose times add, not one roofline:
 * its batched products at the attention class's rate (the products' bytes
 * as their memory floor; each further product kernel pays the overhead),
 * its other vectorised kernels (scale, mask, softmax, dropout; backward:
 * their backward, softmax's as CUDA's two kernels) at the memory roofline
 * plus an overhead each, and its kernels off the vectorised path
 * (legacy_ew.h) at theirs. A core without the keys (older files, a fused
 * scaled_dot_product_attention) is one kernel, max(FLOPs, bytes), its
 * backward twice the forward's bytes, as before.
 *
 * Two kinds of kernel run at measured rates instead, the roofline as their
 * lower bound: cuDNN's NCHW batch norm (per SM clock, below) and grouped
 * convolutions (measured times per shape, sim/train/grouped_conv.h); and
 * the other models kernel_models.h lists, each recorded where it prices
 * (ds_compute_charge_model) so the summary names it.
 *
 * Implemented by compute.c (the maths and rates) and its parts
 * compute_roofline.c, compute_layer.c, compute_conv.c, compute_pool.c,
 * compute_loss.c and compute_step.c (compute_impl.h says which does what).
 */
#ifndef DS_COMPUTE_H
#define DS_COMPUTE_H

#include <stdint.h>

#include "base/status.h"
#include "traces/gconv_table.h"
#include "sim/train/kernel_models.h"
#include "sim/train/model.h"
#include "sim/net/topo.h"

#ifdef __cplusplus
extern "C" {
#endif

enum ds_dtype { DS_DTYPE_FP32, DS_DTYPE_FP16, DS_DTYPE_BF16 };

const char *ds_dtype_name(enum ds_dtype dtype);
/* Returns 0 and sets *out for "fp32", "fp16", "bf16"; -1 otherwise. */
int ds_dtype_parse(const char *name, enum ds_dtype *out);
int ds_dtype_bytes(enum ds_dtype dtype);

/* --amp: torch.autocast's half type, or none. */
enum ds_amp { DS_AMP_NONE, DS_AMP_FP16, DS_AMP_BF16 };

/* --tf32: which op classes PyTorch runs on TF32 in fp32 training. */
enum ds_tf32 { DS_TF32_CONV, DS_TF32_ALL, DS_TF32_NONE };
const char *ds_tf32_name(enum ds_tf32 t);
/* Returns 0 and sets *out for "conv", "all", "none"; -1 otherwise. */
int ds_tf32_parse(const char *name, enum ds_tf32 *out);
const char *ds_amp_name(enum ds_amp amp);
/* Returns 0 and sets *out for "none", "fp16", "bf16"; -1 otherwise. */
int ds_amp_parse(const char *name, enum ds_amp *out);

/* Bytes per element of what training keeps. --dtype D: everything in D.
 * --amp H (torch.autocast with H, fp32 model): parameters, gradients,
 * DDP's buckets and the optimizer state in fp32 (4); activations in H (2:
 * autocast's convolutions and matmuls return H, an approximation for the
 * normalisations and softmax it runs in fp32); and autocast's H copy of
 * every weight (2 per parameter), cast in forward and kept for backward. */
struct ds_precision {
  int param_bytes;
  int act_bytes;
  int half_weight_bytes; /* 0 without --amp */
};

/* What a run's pricing charged, recorded where it prices (the summary's
 * kernel-models line, kernel_models.h, and PowerSGD's GEMM rate,
 * rates.h): the measured kernel models that priced a kernel, and whether a
 * GEMM on the gradients was priced (ds_compute_grad_gemm_ns). */
struct ds_compute_charged {
  uint32_t kernel_models; /* bit per enum ds_kernel_model: consulted */
  /* per model, the calls that consulted it and those where its own time
   * (SM cycles, a sync, a measured time) beat its bytes at the roofline:
   * every model takes the longer of the two */
  int32_t passes[DS_KM_COUNT];
  int32_t bound_passes[DS_KM_COUNT];
  int32_t grad_gemm;
};

struct ds_compute {
  enum ds_dtype dtype; /* of parameters and gradients (fp32 under --amp) */
  enum ds_amp amp;
  struct ds_precision precision;
  double peak_flops_per_s; /* for dtype, before efficiency (class-less layers) */
  /* Per op class (enum ds_layer_class), the math's peak and the efficiency
   * applied to it; DS_LAYER_UNKNOWN holds peak_flops_per_s and
   * flops_efficiency. */
  double class_peak_flops_per_s[DS_LAYER_MEMORY + 1];
  double class_efficiency[DS_LAYER_MEMORY + 1];
  /* Where each class's rate came from (topo.h enum ds_rate_source): a
   * convolution's the least backed of its passes', memory's (and
   * DS_LAYER_MEMORY's) mem_efficiency's; sim/train/rates.h names them. */
  enum ds_rate_source class_source[DS_LAYER_MEMORY + 1];
  /* For a class whose source is DS_RATE_GPU_PROXY, the GPU table's reason
   * (topo.h eff_proxy: what stands in for the measurement); "" elsewhere. */
  char class_proxy[DS_LAYER_MEMORY + 1][DS_GPU_PROXY_WHY_MAX];
  /* A convolution's forward [0] and backward [1] efficiency: the GPU table's
   * per-pass values (conv_MATH_fwd, conv_MATH_bwd) where it has them and
   * the topology sets no conv_efficiency, else class_efficiency's conv. */
  double conv_pass_efficiency[2];
  /* A dense convolution's tiles in its math (topo.h struct ds_conv_tiles,
   * the GPU table's conv_tiles), where the table has them and the topology
   * sets no conv_efficiency; tile_m 0: conv_pass_efficiency applies. */
  struct ds_conv_tiles conv_tiles;
  /* conv, matmul, attention (ds_compute_set_tf32) and class-less layers,
   * peak_flops_per_s's math (ds_compute_init) */
  enum ds_gpu_math class_math[DS_LAYER_MEMORY + 1];
  /* Half-precision GEMMs on unaligned operands (ds_compute_gemm_unaligned):
   * the GPU table's matmul_unaligned_half, or 0 (fp32 math, or not measured
   * on this GPU: the layer's class efficiency applies). */
  double unaligned_half_efficiency;
  /* where unaligned_half_efficiency came from (the GPU table, a stand-in
   * there, or a calibration file's matmul_unaligned_half), and a stand-in's
   * reason: the compute-rates line names it beside the class rates, as no
   * topology key or calibration class value replaces it */
  enum ds_rate_source unaligned_half_source;
  /* A GEMM on the gradients (PowerSGD's, comm_hook.c): the matmul peak and
   * efficiency of the gradients' math, fp32 (tf32 under --tf32 all) or the
   * half type under --dtype fp16/bf16, whatever autocast gives the model's
   * own matmuls (under --amp the gradients stay fp32). */
  double grad_gemm_flops_per_s;
  /* its math, efficiency and where that came from (the matmul class's
   * rules in that math), and a stand-in's reason: the compute-rates line
   * names it where the model's own matmuls run another math (--amp) */
  enum ds_gpu_math grad_gemm_math;
  double grad_gemm_efficiency;
  enum ds_rate_source grad_gemm_source;
  char grad_gemm_proxy[DS_GPU_PROXY_WHY_MAX];
  char unaligned_half_proxy[DS_GPU_PROXY_WHY_MAX];
  double mem_bw_bytes_per_s;
  int32_t sms;             /* the GPU's SMs (interference.h) */
  double sm_clock_hz;      /* the GPU's boost clock (0: unknown) */
  /* The most threads resident on an SM (ds_gpu_max_threads_per_sm: from
   * the GPU's compute capability); 0: unknown (cast_reduce.c assumes 2048) */
  int32_t sm_max_threads;
  int gpu_has_tf32;        /* Ampere and later: NHWC tensor-core convolutions */
  int channels_last;       /* --channels-last: activations in NHWC (batch norm below) */
  /* Grouped convolutions' measured times (grouped_conv.h): the built-in
   * H200 table (ds_compute_init), or a calibration file's (--calib), owned
   * by the caller and outliving this struct. */
  const struct ds_gconv_table *gconv;
  /* The optimizer step (ds_compute_step_ns): optimizer_loop set under
   * --pytorch-version 1.4 and 1.9 (the per-parameter Python loop instead
   * of the foreach kernels); weight_decay set by --weight-decay (a nonzero
   * weight_decay: one more kernel). grad_kept set under 1.4 and 1.9:
   * .grad stays allocated between iterations (zero_grad's set_to_none=False
   * default, or no zero_grad at all, as in PyTorch's DDP benchmark), so
   * every backward's AccumulateGrad adds into it (ds_compute_accum_grad_ns).
   * zero_grad_fill set under 1.9, for scripts that call
   * optimizer.zero_grad() (DeepLearningExamples'): a fill_ kernel per
   * gradient after the step (ds_compute_zero_grad_ns). */
  int optimizer_loop;
  int grad_kept;
  int zero_grad_fill;
  int weight_decay;
  /* --no-bn-weight-decay (with weight_decay): parameters whose name has
   * "bn" form a group of weight_decay 0, as DeepLearningExamples'
   * optimizers.py get_sgd_optimizer builds them (bn_weight_decay False):
   * no decay kernel on them under the loop; under foreach each group runs
   * its own calls (one more set of kernels), the decay's over the other
   * group's bytes only. */
  int no_bn_weight_decay;
  /* --optimizer bertadam's per-tensor clip_grad_norm_ (compute_step.c
   * BERTADAM_OPS): set under current rules (no --pytorch-version: PyTorch
   * 2.x, whose clip_grad_norm_ takes torch._foreach_norm, 3 kernels where
   * 1.x's torch.norm is one); unset under 1.9 (PyTorch 1.10-1.13's). */
  int clip_foreach;
  struct ds_compute_params params;
  /* Where the pricing records what it charged (borrowed; NULL: nothing
   * recorded, as ds_compute_init leaves it): the one field pricing writes,
   * through ds_compute_charge_model and ds_compute_grad_gemm_ns. */
  struct ds_compute_charged *charged;
};

/* Records that kernel model k priced a pass's kernels (kernel_models.h),
 * and whether its own time set their time (bound: it beat their bytes at
 * the roofline, or added to them): called where the model's constants
 * are applied, also where the GPU's missing clock sends the kernels to the
 * roofline instead (bound 0; the line says so). */
static inline void ds_compute_charge_model(const struct ds_compute *c, enum ds_kernel_model k,
                                           int bound) {
  if (!c->charged) return;
  c->charged->kernel_models |= 1u << k;
  c->charged->passes[k]++;
  if (bound) c->charged->bound_passes[k]++;
}

/* Whether the GPU table gives the SMs and their clock: the kernels priced
 * per SM or per CTA (cycles per element, grids, waves) need both, and fall
 * back to the roofline without them. */
static inline int ds_compute_knows_sms(const struct ds_compute *c) {
  return c->sms > 0 && c->sm_clock_hz > 0;
}

/* Whether layer l runs under autocast with the model file's autocast
 * traffic (amp_fwd_bytes and its companions, model.h): its ops then see the
 * dtypes autocast gives them (fp32 for layer_norm, softmax, ...). */
static inline int ds_compute_autocast_traffic(const struct ds_compute *c,
                                              const struct ds_layer *l) {
  return c->amp != DS_AMP_NONE && l->amp_fwd_bytes >= 0;
}

/* Chooses the peak rate of the topology's GPU for dtype, or for amp's half
 * type when amp is not DS_AMP_NONE (dtype must then be fp32); DS_EUSAGE
 * when the GPU has no such math (bf16 on V100) or amp is given with a
 * half dtype. */
ds_status ds_compute_init(const struct ds_topo *topo, enum ds_dtype dtype, enum ds_amp amp,
                          struct ds_compute *out, struct ds_err *err);

/* Whether layer l is a grouped convolution (model.h conv_groups > 1, more
 * than one channel per group) charged at its measured kernel times
 * (sim/train/grouped_conv.h): forward, and backward's weight and input
 * gradients, each at least its roofline; no layout transposes. Needs the
 * GPU's SMs and clock, or a calibration file's table (--calib: measured on
 * this machine, at its own SMs and clock); depthwise convolutions keep the
 * roofline. */
int ds_compute_grouped_conv(const struct ds_compute *c, const struct ds_layer *l);
/* The grouped-convolution table's mode the run's convolutions look up: their
 * class's math (fp32, tf32, or half in NCHW or channels-last); half NCHW on a
 * GPU without TF32 (Volta, Turing: cuDNN 7 off the tensor cores) the built-in
 * table's fp32 entries, a calibration file's half ones (compute_conv.c). */
enum ds_gconv_mode ds_compute_gconv_mode(const struct ds_compute *c);

/* Sets the per-class math for --tf32 (DS_TF32_CONV at init). */
void ds_compute_set_tf32(struct ds_compute *c, const struct ds_topo *topo, enum ds_tf32 tf32);

/* Whether layer l's GEMMs run cuBLAS's narrow-load kernels: a matmul or
 * attention layer whose gemm_align (model.h) is below 8 elements, trained in
 * a half type (--dtype fp16/bf16 or --amp), on a GPU with a measured
 * matmul_unaligned_half. cuBLAS's fast half-precision kernels (and CUTLASS's)
 * load each operand tile in 16-byte vectors, which needs every operand's
 * leading dimension, contiguous extent and start to be a multiple of 8
 * elements; otherwise cuBLAS falls back to kernels with alignment 1, 2 or 4
 * (GPT-2's LM head, 50257 wide: cutlass_75_tensorop_bf16_s1688gemm_*_align1,
 * Turing-style mma.sync kernels with 2-byte loads). Such a layer's FLOPs run
 * at unaligned_half_efficiency of the same peak, forward and backward (the
 * output gradient has the same leading dimension). TF32 and FP32 GEMMs are
 * not changed: no measurement (GPT-2's fp32 LM head ran at the aligned
 * rate), and the measured value is of align1 kernels, so align 2 and 4 take
 * it too (an upper bound on their time). */
int ds_compute_gemm_unaligned(const struct ds_compute *c, const struct ds_layer *l);

/* Memory-bound kernels a layer's backward runs beside its math, in
 * nanoseconds for `batch` samples: its bias gradients' reductions
 * (bwd_reduce_bytes: read the output gradient, write the bias gradient) and
 * its layout copies (bwd_copy_bytes), and autograd's additions where the
 * gradients of a tensor the layer made meet (bwd_accum_bytes; under --amp
 * with the file's autocast traffic amp_bwd_accum_bytes as written), one
 * kernel each when present, the model file's fp32 bytes scaled to the
 * activation dtype. Included in ds_compute_bwd_ns. */
double ds_compute_bwd_extra_ns(const struct ds_compute *c, const struct ds_layer *l,
                               int64_t batch);

/* Roofline duration of one kernel of op class cls, in nanoseconds (a
 * convolution's at the pooled efficiency: ds_compute_pass_flops_per_s
 * gives a pass's rate). */
double ds_compute_class_kernel_ns(const struct ds_compute *c, enum ds_layer_class cls,
                                  double flops, double bytes);


/* The useful share of a GEMM of m x n (the long side by the narrow one)
 * run as tile_m x tile_n tiles in waves of `sms` (topo.h conv_tiles):
 * m n / (ceil(T / sms) sms tile_m tile_n), T = ceil(m / tile_m) ceil(n /
 * tile_n): a side under its tile pads every tile, and the last wave
 * leaves SMs idle. 1 where any argument is not positive. */
double ds_compute_conv_tile_share(int64_t m, int64_t n, int32_t tile_m, int32_t tile_n,
                                  int32_t sms);
/* The FLOP rate a layer of class cls reaches in its forward (backward 0) or
 * backward pass: its class's peak times its efficiency, a convolution's
 * that of the pass (conv_pass_efficiency, where set; class_efficiency's
 * otherwise); a class out of range as DS_LAYER_UNKNOWN. */
double ds_compute_pass_flops_per_s(const struct ds_compute *c, enum ds_layer_class cls,
                                   int backward);

/* Roofline duration of kernels of a GEMM on the gradients (summed FLOPs
 * and bytes) at grad_gemm_flops_per_s, in nanoseconds, one
 * kernel_overhead. */
double ds_compute_grad_gemm_ns(const struct ds_compute *c, double flops, double bytes);

/* Roofline duration of one kernel, in nanoseconds (not rounded). */
double ds_compute_kernel_ns(const struct ds_compute *c, double flops,
                            double bytes);

/* Autocast's casts of layer l's weights in its forward under --amp: for a
 * convolution, matmul or attention layer with parameters, autocast's
 * cached_cast (aten/src/ATen/autocast_mode.cpp) runs arg.to(half), one
 * _to_copy per fp32 weight tensor (the layer's param_count, bias
 * included: every floating argument of a lower-precision op is cast,
 * and a tied weight it casts first, model.h tied_cast_numel: GPT-2's
 * lm_head casts wte's weight), each a memory-bound kernel reading fp32 and writing half (6 B per
 * parameter), before the layer's own kernel. It caches the casts of
 * leaves that require grad, but torch.autocast's __exit__ clears the cache
 * (torch.clear_autocast_cache), so every forward (each --grad-accum
 * micro-step) casts again. Returns their ns,
 * the bytes at the roofline plus kernel_overhead per kernel, and their
 * bytes in *bytes; 0 and 0 for any other layer or without --amp. */
double ds_compute_weight_cast_ns(const struct ds_compute *c, const struct ds_layer *l,
                                 double *bytes);
/* Forward of one layer for `batch` samples: FLOPs and activation traffic
 * scale with the batch; the weights are read once (under --amp: a
 * convolution's or matmul's half copies, 2 B per parameter, after
 * ds_compute_weight_cast_ns's kernels, added to the pass; another layer's
 * weights read in fp32 and written in half, then read in half, 8 B per
 * parameter in its kernel). Under --amp the activation traffic is the layer's
 * amp_fwd_bytes when the model file has it (model.h: the dtypes autocast
 * gives each op), and its amp_cast_bytes run as a memory-bound kernel of
 * their own after it; else fwd_bytes scaled to 2 B per element. An
 * attention core with attn_products: its parts (above), then the casts. */
double ds_compute_fwd_ns(const struct ds_compute *c, const struct ds_layer *l,
                         int64_t batch);
/* Backward (an attention core with attn_products: its parts, above):
 * bwd_flops, twice the forward traffic (read the saved activations and
 * output gradient, write the input gradient; a memory
 * layer with the model file's bwd_bytes: those, scaled to the activation
 * dtype, or under --amp amp_bwd_bytes, and no kernel when they, its FLOPs
 * and its weights are 0: the residual add's backward hands the gradient
 * on), the weights
 * read once and their gradients written once (under --amp: half weight
 * read, half gradient written, then the cast's backward reads it and
 * writes the fp32 .grad: 10 B per parameter). Under --amp with the model
 * file's autocast traffic: 2 x amp_fwd_bytes, then the gradients' cast
 * back (amp_cast_bytes) and autograd's casts of promoted half inputs'
 * gradients (amp_grad_cast_bytes) as a kernel of their own. Then the
 * reductions and layout copies of ds_compute_bwd_extra_ns. */
double ds_compute_bwd_ns(const struct ds_compute *c, const struct ds_layer *l,
                         int64_t batch);
/* The part of that forward (backward: nonzero) that the GPU's SMs bound:
 * the layer's own kernel, its overhead included, when its FLOPs set its
 * time at the roofline, or a grouped convolution's measured time where it
 * wins (SM cycles); 0 when the kernel is bound by its bytes. The rest of
 * the pass (the bytes-bound kernel, casts, reductions, copies, the kernels
 * off the vectorised path, batch norm, max-pool) is memory-bound. What
 * interference takes from each part differs (interference.h). */
double ds_compute_sm_bound_ns(const struct ds_compute *c, const struct ds_layer *l,
                              int backward, int64_t batch);

/* Max-pool (a layer with the model file's pool keys, model.h ds_pool),
 * forward and backward, as PyTorch's CUDA kernels run it
 * (aten/src/ATen/native/cuda/DilatedMaxPool2d.cu): not at the bytes' rate
 * but at a rate per SM clock set by the loops (this project's H200 and H100
 * measurements; the constants, fitted rows and checks in compute_pool.c):
 *   NCHW forward, max_pool_forward_nchw: a thread per output element scans
 *   its window and writes the maximum and its int64 index;
 *   NCHW backward: zero_ fills the input gradient (a memory-bound kernel of
 *   its own), then max_pool_backward_nchw runs a thread per input element
 *   that looks up every window that could hold it (p_start .. p_end) and
 *   sums the output gradients whose index names it: 288 us for ResNet-50's
 *   stem at batch 32 (0.5 TB/s) on H200 and H100 alike;
 *   channels-last (--channels-last): max_pool_forward_nhwc and
 *   max_pool_backward_nhwc, blocks over channels and positions with
 *   shared-memory accumulators, the same two parts at other rates.
 * A kernel takes
 *   cycles = batch * (elements * a + pairs * b) / (SMs * boost clock),
 * elements the outputs (forward) or inputs (backward), pairs the (element,
 * window) pairs (ds_compute_pool_geometry), a and b per direction and
 * layout (compute_pool.c), plus kernel_overhead; or its bytes at the roofline if
 * that is longer. The backward adds the fill: the input gradient written
 * once at the roofline (the model file's bwd_bytes count it), the kernel
 * the rest of the bytes. On a GPU without a clock (boost_mhz) the layer
 * runs at the roofline of all its bytes, as other memory layers. *k
 * receives the parts (NULL: not wanted). */
struct ds_pool_kernel {
  double bytes;        /* the layer's activation bytes, the fill's included */
  double fill_bytes;   /* backward: zero_ of the input gradient (0 forward) */
  double fill_ns;      /* its roofline, with kernel_overhead (0: none) */
  double roofline_ns;  /* the kernel's bytes (bytes - fill_bytes) at the roofline */
  double cycles;       /* SM cycles of the kernel (0: no SM clock) */
  double sm_rate_ns;   /* cycles over every SM at the boost clock, with
                        * kernel_overhead (0: none) */
};
double ds_compute_max_pool_ns(const struct ds_compute *c, const struct ds_layer *l,
                              int64_t batch, int backward, struct ds_pool_kernel *k);
/* Per sample: the pool's input elements, output elements, and (element,
 * window) pairs, the window's input elements summed over the outputs
 * (padding excluded), which equals the windows holding each input summed
 * over the inputs. */
void ds_compute_pool_geometry(const struct ds_pool *p, double *inputs, double *outputs,
                              double *pairs);

/* cuDNN's layout transposes around a convolution of NCHW tensors, as one
 * memory-bound op per pass (forward; backward: data and weight gradient).
 * From this project's traces (bench/results/gpu-2026-11-26-h200/prof, H200,
 * cuDNN 9.19, TF32 and fp16 alike; docs/architecture.md): cuDNN's TF32 and
 * half tensor-core convolution kernels on Ampere and Hopper are NHWC
 * (sm80_/sm90_xmma_*_nhwc, cutlass implicit GEMMs), so around each it runs
 * nchwToNhwcKernel on its inputs and nhwcToNchwKernel on its output, each
 * reading and writing the tensor: forward x and y (and the weight when the
 * filter is larger than 1x1: [K,C,R,S] and [K,R,S,C] differ), backward
 * dy, dx (and the weight) for the data gradient, and x and dy again, and
 * dW when larger than 1x1, for the weight gradient (no data gradient for
 * the model's first layer, whose input needs none). Exempt are
 * unit-stride 1x1 convolutions of at least 14x14 outputs: cuDNN runs them
 * as GEMMs straight on NCHW (cutlass s1688gemm, sm90_xmma_gemm, nvjet);
 * the traces show that choice down to 14x14 and transposes at 7x7 (stride
 * read from the bytes: a unit-stride 1x1's fwd_bytes / 4 / (C + K) is a
 * whole square number of positions). Applies when the GPU has TF32 tensor
 * cores (Ampere and later; Hopper traced, Ampere inferred from the same
 * sm80 kernel families in the Hopper trace), the convolution runs on
 * tensor cores (TF32 or half math) and activations are NCHW (not
 * --channels-last); V100's FP32 convolutions run NCHW kernels. Depthwise
 * convolutions (one input channel per group, MobileNetV2's) are left out:
 * the traces have none. Returns
 * the bytes (0: no transposes). */
double ds_compute_conv_transpose_bytes(const struct ds_compute *c, const struct ds_model *m,
                                       int32_t layer, int64_t batch, int backward);
/* The op of those bytes: a memory-bound kernel at the roofline (one
 * kernel_overhead per transposed tensor). */
double ds_compute_conv_transpose_ns(const struct ds_compute *c, const struct ds_model *m,
                                    int32_t layer, int64_t batch, int backward);
/* Both at once, for callers that emit the op: returns its ns, *bytes gets
 * its bytes (0 and 0 without transposes). */
double ds_compute_conv_transpose(const struct ds_compute *c, const struct ds_model *m,
                                 int32_t layer, int64_t batch, int backward, double *bytes);

/* Optimizer step over every parameter: memory bound, the kernels of
 * PyTorch's default (foreach) implementation, each a pass over every
 * parameter's tensors (torch/optim/sgd.py _multi_tensor_sgd, adam.py
 * _multi_tensor_adam; not the first step):
 *   SGD with momentum, 3 kernels, 8 tensor passes: _foreach_mul_(bufs)
 *     reads and writes the momentum (2), _foreach_add_(bufs, grads) reads
 *     both and writes the momentum (3), _foreach_add_(params, bufs) (3);
 *   Adam, 7 kernels, 18 passes: _foreach_lerp_(exp_avgs, grads) (3),
 *     _foreach_mul_(exp_avg_sqs) (2), _foreach_addcmul_(exp_avg_sqs, grads,
 *     grads) (3: the gradient read once), _foreach_sqrt (2), _foreach_div_
 *     (2), _foreach_add_(eps) (2), _foreach_addcdiv_(params, exp_avgs,
 *     denom) (4);
 *   --weight-decay: first _foreach_add(grads, params, alpha=weight_decay),
 *     one more kernel, 3 passes (reads both, writes the sum).
 * GradScaler's unscale_ under --amp fp16 is not part of it: it runs
 * before the step (ds_compute_unscale_ns). Each
 * launch pays kernel_overhead once: multi_tensor_apply splits a foreach call into
 * launches of at most 320 chunks of 65,536 elements and of a tensor count set by the
 * call's depth (ds_compute_step_launches).
 *
 * Under --pytorch-version 1.4 (c->optimizer_loop) the step is PyTorch 1.4's
 * Python loop over the parameters, a kernel per in-place op per parameter
 * tensor (torch/optim/sgd.py and adam.py of that era, before foreach):
 *   SGD with momentum, 3 kernels and 8 passes per tensor: buf.mul_(momentum)
 *     (2), .add_(1 - dampening, d_p) (3), p.data.add_(-lr, d_p) (3);
 *     weight decay first d_p.add_(weight_decay, p.data) (3);
 *   Adam, 8 kernels and 20 passes per tensor: exp_avg.mul_(beta1) (2),
 *     .add_(1 - beta1, grad) (3), exp_avg_sq.mul_(beta2) (2),
 *     .addcmul_(1 - beta2, grad, grad) (3), exp_avg_sq.sqrt() (2),
 *     / math.sqrt(bias_correction2) (2), .add_(eps) (2),
 *     p.data.addcdiv_(-step_size, exp_avg, denom) (4); weight decay first
 *     grad.add(weight_decay, p.data) (3).
 * Each kernel is its own: its tensor's bytes at the memory rate plus
 * kernel_overhead. The host dispatches each op from Python
 * (ds_compute_step_host_ops). No GradScaler in 1.4 (--amp is refused).
 *
 * Under --pytorch-version 1.9 the step is the same loop: 1.9's SGD.step
 * gathers params_with_grad, d_p_list and momentum_buffer_list and calls
 * torch/optim/_functional.py sgd, which per tensor runs d_p.add(param,
 * alpha=weight_decay) (out of place: reads both, writes d_p, 3 passes, as
 * 1.4's add_), buf.mul_(momentum).add_(d_p, alpha=1 - dampening) (2 + 3),
 * param.add_(d_p, alpha=-lr) (3): 1.4's kernels and passes.
 *
 * Under --optimizer bertadam (DS_OPT_BERTADAM) the step is NVIDIA
 * DeepLearningExamples' BERT run_squad.py fp32 optimizer, BertAdam
 * (optimization.py:113-175 at 128ecbe4, the same in Lambda's fork), a
 * Python loop over the parameters whatever --pytorch-version says:
 * run_squad.py:959-965 leaves the pooler out and puts the names holding
 * 'bias' or 'LayerNorm.weight' in a group of weight_decay 0, the rest in
 * one of 0.01; per tensor clip_grad_norm_ on the tensor alone (8 kernels,
 * 6 of them on 0-d tensors, 3 passes; under current rules PyTorch 2.x's,
 * 10: c->clip_foreach), the moments, the update and the
 * step (10 kernels, 24 passes), the decayed group's 2 more (5 passes):
 * 18 kernels and 27 passes or 20 and 32 (compute_step.c BERTADAM_OPS).
 * Each kernel its own bytes plus kernel_overhead, a 0-d one 8 bytes; the
 * host dispatches each (ds_compute_step_host_ops). The script's
 * GradientClipper runs before it (ds_compute_clip_norm_ns and
 * ds_compute_clip_scale_ns, with a sync between them: host.h).
 *
 * Under --optimizer apex-o2-fusedadam (DS_OPT_APEX_O2; --dtype fp16: amp
 * O2 casts the whole model to fp16) the step is the same script's --fp16
 * path: apex FusedAdam under amp O2's fp32 master weights, over the same
 * two groups (compute_step.c cites each line). Before it, amp's unscale
 * into new fp32 master gradients (ds_compute_amp_unscale_ns), its
 * overflow .item() and the GradientClipper on the master gradients (host.h).
 * This is FusedAdam's multi_tensor_adam, a call per group reading the fp32
 * gradient, weight and moments and writing the three (7 passes of 4
 * bytes, weight decay inside the kernel), then amp's copy of the masters
 * to the fp16 model (multi_tensor_scale: 4 + 2 bytes an element): 34 bytes
 * a stepped element under fp16, one kernel over them plus kernel_overhead
 * per further launch (ds_compute_step_launches: depth 4, 36 tensors a
 * launch, per group; depth 2, 64, over both). Each launch is a host
 * dispatch (ds_compute_step_host_ops), as are amp's zero_grad fills.
 *
 * Under --optimizer none (model->optimizer DS_OPT_NONE) there is no step:
 * 0, as are the passes, kernels, launches and bytes below, and the
 * unscale_ of a GradScaler whose step() is never called. */
double ds_compute_step_ns(const struct ds_compute *c,
                          const struct ds_model *model);
/* Passes over the outputs of the loss, cross entropy, forward and backward
 * (ds_compute_loss_ns charges them as one roofline plus one kernel
 * overhead per kernel they run: 5, 7 under --amp with its casts)
 * (PyTorch's SoftMax.cu and LossNLL.cu), for rows of `classes` elements:
 * rows that fit the persistent or shared-memory softmax (at most 1024
 * elements, or under 48 KiB in fp32) 6: log_softmax reads and writes (2),
 * nll_loss's backward writes a dense gradient (1), log_softmax's backward
 * reads the gradient and the output and writes (3); longer rows (GPT-2's
 * 50257) 9: cunn_SoftMaxForward reads the row three times (max, sum of
 * exponentials, output) and writes (4), cunn_SoftMaxBackward reads the
 * gradient twice (its sum, then with the output) and writes (4). classes
 * 0 (a model file without output_classes): 2, read and write once. */
int ds_compute_loss_passes(double classes);
/* The loss and its gradient over `samples` outputs of the model: one
 * memory-bound kernel making the passes above over the outputs
 * (output_bytes per sample, in fp32, scaled to the dtype); *bytes receives
 * what it moves. Under --amp the loss runs in fp32 (autocast's fp32 list:
 * cross_entropy_loss, log_softmax, nll_loss): the passes over output_bytes, plus the
 * cast of the half outputs to fp32 and its backward's cast of the gradient
 * back, 6 B per output element each. Then the loss's own layout copies
 * (model.h loss_copy_bytes: GPT-2's shifted logits), a kernel of their own, in the
 * activation dtype. Every strategy charges its loss with this, so one GPU
 * costs the same under each. */
double ds_compute_loss_ns(const struct ds_compute *c, const struct ds_model *model,
                          double samples, double *bytes);
/* Passes over the parameters' bytes of the optimizer's kernels (above,
 * without GradScaler): foreach 8 (SGD with momentum) or 18 (Adam), the 1.4
 * loop 8 or 20, 3 more each with weight decay; bertadam a decayed tensor's
 * 32 (ds_compute_bertadam_tensor_passes; its undecayed tensors make 27);
 * apex-o2-fusedadam its 34 bytes an element in the model's parameter
 * bytes, 17 under fp16. */
int ds_compute_optimizer_passes(const struct ds_compute *c, enum ds_optimizer opt);
/* The elements the optimizer steps: under bertadam and apex-o2-fusedadam
 * every parameter's but the pooler's (run_squad.py:959), else the model's
 * total_numel. */
double ds_compute_step_numel(const struct ds_model *model);
/* BertAdam's kernels and passes over one fp32 tensor (above), in the
 * weight_decay 0.01 group (decays) or the 0.0 one: 20 or 18 kernels, 32
 * or 27 passes (the six 0-d kernels make none); under c->clip_foreach
 * (PyTorch 2.x's clip_grad_norm_) 2 more kernels, the same passes. */
int ds_compute_bertadam_tensor_kernels(const struct ds_compute *c, int decays);
int ds_compute_bertadam_tensor_passes(const struct ds_compute *c, int decays);
/* run_squad.py's GradientClipper.step (:717-724) under --optimizer
 * bertadam, before BertAdam's loop, and under apex-o2-fusedadam, on the
 * fp32 master gradients (4 bytes an element whatever --dtype), before
 * FusedAdam: apex's multi_tensor_l2norm over the stepped gradients,
 * at::zeros({320}), the multi_tensor_apply launches (depth 1: 110
 * tensors, 320 chunks of 65,536 elements a launch) and
 * cleanup<<<1, 512>>>, reading every gradient once
 * (ds_compute_clip_norm_launches kernels; ns at the roofline plus a
 * kernel_overhead each, *bytes what they move); then total_norm.item(), a
 * sync (host.h ds_host_emit_step); then, as clip_coef = 1 / (norm + 1e-6)
 * < 1 when the norm exceeds 1, multi_tensor_scale over [grads, grads]
 * (depth 2: 64 tensors a launch), reading and writing every gradient
 * (ds_compute_clip_scale_launches kernels). The scale depends on the
 * data, which no row's log records; ddpsim charges it every step (an
 * upper bound: 2 passes over the gradients and its launches). 0 and 0
 * bytes under any other optimizer. */
int ds_compute_clip_norm_launches(const struct ds_compute *c, const struct ds_model *model);
int ds_compute_clip_scale_launches(const struct ds_compute *c, const struct ds_model *model);
double ds_compute_clip_norm_ns(const struct ds_compute *c, const struct ds_model *model,
                               double *bytes);
double ds_compute_clip_scale_ns(const struct ds_compute *c, const struct ds_model *model,
                                double *bytes);
/* amp.scale_loss's exit under --optimizer apex-o2-fusedadam, after
 * backward and before the clipper (apex 25bfcb91 apex/amp/handle.py:119-127):
 * LossScaler.clear_overflow_state's _overflow_buf.zero_() (scaler.py:194, a
 * 4-byte fill), then post_backward_with_master_weights's unscale
 * (_process_optimizer.py:161-202, scaler.py:94-117): multi_tensor_scale
 * over [fp16 gradients, new fp32 master gradients] (depth 2: 64 tensors a
 * launch, in param_groups order), reading 2 and writing 4 bytes a stepped
 * element; then update_scale's _overflow_buf.item() (scaler.py:200), a
 * sync (host.h). Launches: the fill and multi_tensor_apply's; ns: the
 * fill's kernel, the gradients' bytes at the roofline and a
 * kernel_overhead per further launch; *bytes what they move. 0 and 0
 * under any other optimizer. */
int ds_compute_amp_unscale_launches(const struct ds_compute *c, const struct ds_model *model);
double ds_compute_amp_unscale_ns(const struct ds_compute *c, const struct ds_model *model,
                                 double *bytes);
/* Kernels the optimizer step launches: one per foreach call, or under the
 * 1.4 loop those per tensor times the model's parameter tensors (above);
 * under apex-o2-fusedadam its launches. */
int ds_compute_step_kernels(const struct ds_compute *c, const struct ds_model *model);
/* The launches those kernels take: under the loop the kernels themselves; under
 * foreach each call's multi_tensor_apply launches over its parameter group,
 * in registration order (ds_model_registered), as PyTorch's param_groups
 * hold them (MultiTensorApply.cuh, 4 KB argument: a launch per 320 chunks of 65,536
 * elements, or per 110, 64, 48, 36, 30 complete tensors at depth 1-5, 96 for a
 * depth-1 scalar list; the depth of each call in compute_step.c), as the H200 traces
 * launch them (ResNet-50's SGD: 3 calls, 9 launches). ds_compute_step_ns pays
 * kernel_overhead per launch. */
int ds_compute_step_launches(const struct ds_compute *c, const struct ds_model *model);
/* The same over the parameters p with set_of_param[p] == set only (every
 * parameter when set_of_param is NULL): an optimizer holding that subset,
 * a parameter server's shard (ps_schedule.c), whose foreach calls multi_tensor_apply
 * splits by the subset's own tensors and chunks; 0 for an empty subset. */
int ds_compute_step_launches_of(const struct ds_compute *c, const struct ds_model *model,
                                const int32_t *set_of_param, int32_t set);
/* The step's host: under the loop (1.4, 1.9, or bertadam's whatever the
 * version) one Python-dispatched op per
 * kernel (ds_compute_step_kernels, 0 under --optimizer none), and
 * under 1.9 one per zero_grad fill (the model's parameter tensors), each
 * ds_compute_step_host_op_ns; under apex-o2-fusedadam one per launch
 * (FusedAdam's and the copy back's) and one per amp zero_grad fill; 0 for
 * the foreach step (its few calls' host time is not modelled). */
int ds_compute_step_host_ops(const struct ds_compute *c, const struct ds_model *model);
/* Host time to dispatch one op of the loop: the topology's host_grad_copy,
 * DDP's host cost per gradient copied back (one elementwise launch and its
 * share of the reducer's per-gradient cost: sim/net/topo_compute.c,
 * docs/strategies.md "The host costs"). */
double ds_compute_step_host_op_ns(const struct ds_compute *c);
/* zero_grad() under 1.9 (c->zero_grad_fill; torch/optim/optimizer.py
 * zero_grad, set_to_none=False): per parameter with a gradient,
 * p.grad.requires_grad_(False) and p.grad.zero_(), one fill kernel writing
 * the gradient (1 pass), each with kernel_overhead; the same under
 * apex-o2-fusedadam whatever the version, amp's zero_grad (detach_() and
 * zero_() on each stepped fp16 gradient); 0 otherwise (current
 * PyTorch sets the gradients to None: nothing runs). *bytes gets what the
 * kernels write. Its launches are among ds_compute_step_host_ops. */
double ds_compute_zero_grad_ns(const struct ds_compute *c, const struct ds_model *model,
                               double *bytes);
/* AccumulateGrad when .grad is already allocated
 * (torch/csrc/autograd/functions/accumulate_grad.h accumulateGrad: with
 * GradMode off, variable_grad += new_grad): one add kernel per parameter
 * tensor of layer l, reading both and writing .grad (3 passes of the
 * gradient's bytes), each with kernel_overhead. *bytes gets what they move;
 * 0 for a layer without parameters. The node's host time is already
 * host_node's (AccumulateGrad is among the model file's host_nodes). */
double ds_compute_accum_grad_ns(const struct ds_compute *c, const struct ds_model *model,
                                int32_t layer, double *bytes);
/* GradScaler.step's unscale_ under --amp fp16 (torch/cuda/amp/grad_scaler.py
 * in 1.9, torch/amp/grad_scaler.py now: step() calls unscale_(optimizer),
 * then _maybe_opt_step reads found_inf.item(), a host-device sync that
 * waits for these kernels, before optimizer.step() launches anything; so
 * unscale_ is an op of its own before the step, host.h). Its kernels, in
 * stream order: inv_scale = _scale.double().reciprocal().float() (3),
 * found_inf = torch.full(...) (1), _unscale_grads_'s
 * _MultiDeviceReplicator.get copying each to the gradients' device
 * (.to(copy=True), 2): 6 scalar kernels, kernel_overhead each; then one
 * _amp_foreach_non_finite_check_and_unscale_ call per device and dtype
 * (one here: every gradient fp32 on the rank's GPU), reading and writing
 * every gradient (2 passes over the fp32 parameters' bytes), which
 * multi_tensor_apply launches as ds_compute_unscale_launches kernels.
 * Returns its ns: the gradients' bytes at the roofline plus a
 * kernel_overhead per kernel; *bytes gets those bytes. 0 (and 0 bytes)
 * without --amp fp16 (bf16 autocast runs no GradScaler; 1.4 has none). */
double ds_compute_unscale_ns(const struct ds_compute *c, const struct ds_model *model,
                             double *bytes);
/* The launches of that foreach call: multi_tensor_apply
 * (aten/src/ATen/native/cuda/MultiTensorApply.cuh) gives each 65,536
 * element chunk of each tensor a block, in registration order (the order
 * GradScaler and the optimizer hold them: compute_step.c), and launches
 * when 320 blocks are queued or 110 tensors are complete (the 4 KB kernel
 * argument's limits, in 1.9 and in current PyTorch alike: the H200 AMP traces'
 * unscale_ launches 3 for ResNet-50, where the 32 KB argument's 2240 and 770
 * would give 1); then the rest. 0 without --amp fp16, and under --optimizer
 * none (no scaler.step()). */
int ds_compute_unscale_launches(const struct ds_compute *c, const struct ds_model *model);
/* unscale_'s host under the loop of 1.4 and 1.9 (--amp fp16 only): a
 * Python-dispatched op per scalar kernel plus the foreach call, 7, each
 * ds_compute_step_host_op_ns; 0 otherwise (the foreach step's host is not
 * modelled). Its Python loop over the parameters that groups the gradients
 * by device and dtype is not charged (no measured cost). */
int ds_compute_unscale_host_ops(const struct ds_compute *c);
/* Bytes moved by the optimizer step (for the schedule's bytes column). */
double ds_compute_step_bytes(const struct ds_compute *c,
                             const struct ds_model *model);

#ifdef __cplusplus
}
#endif

#endif /* DS_COMPUTE_H */
