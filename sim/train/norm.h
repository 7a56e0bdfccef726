#ifndef DDPSIM_SIM_TRAIN_NORM_H
#define DDPSIM_SIM_TRAIN_NORM_H

/*
 * Normalisation layers' kernels: batch norm as cuDNN (or, where cuDNN does
 * not run, PyTorch) launches it, and layer norm as PyTorch's own kernels
 * run it. compute_layer.c's forward and backward passes call them for a layer
 * with bn_channels or layer_norm (model.h); the tests call them directly.
 */
#include <stdint.h>

#include "sim/train/compute.h"
#include "sim/train/model.h"

/* Batch norm in training (a layer with bn_channels, model.h), forward and
 * backward, as the kernels PyTorch runs: cuDNN's for fp32 and fp16 inputs
 * (aten/src/ATen/native/Normalization.cpp, _batch_norm_impl_index:
 * use_cudnn excludes only bf16). From this project's torch.profiler traces
 * of ResNet-50 on H200 and H100 (bench/results/gpu-2026-11-26-h200/prof,
 * cuDNN 9.19; docs/architecture.md has the per-kernel table):
 *
 *   NCHW (the default): one kernel per layer with one 512-thread CTA per
 *   channel (grid = C). Forward: bn_fw_tr_1C11_singleread caches the
 *   channel in shared memory when it fits (read x, write y: 2 passes), else
 *   bn_fw_tr_1C11_kernel_NCHW reads x for the statistics, again to
 *   normalise, and writes y (3). Backward: bn_bw_1C11_singleread caches x
 *   and dy (read both, write dx: 3 passes), else bn_bw_1C11_kernel_new
 *   reads both for the two reductions, again for dx, and writes dx (5).
 *   A CTA streams its channel at a rate per SM clock, not at HBM's: bn1's
 *   backward (C = 64) took 611 us on H200 (4.8 TB/s) and 621 us on H100
 *   (3.35 TB/s), the same 132 SMs at 1980 MHz. So a kernel takes
 *     passes * elements / (min(C, SMs) * rate * clock),
 *   rate = element passes per SM cycle, BN_FWD/BWD_ELEMS_PER_SM_CYCLE in
 *   norm.c, or its bytes at the roofline if that is longer.
 *   --channels-last (NHWC) under --amp fp16: cuDNN's
 *   batchnorm_fwtr/bwtr_nhwc_semiPersist (PyTorch asks for
 *   CUDNN_BATCHNORM_SPATIAL_PERSISTENT in training, cudnn/BatchNorm.cpp),
 *   one kernel per direction, a co-resident grid of 2 CTAs per SM, 64
 *   channels per CTA. gx CTAs share a block of 64 channels, each keeping
 *   up to 384 pixels (forward) or 192 (backward) on chip; where
 *   gx = ceil(NHW / that) fits the grid, every pixel is kept and
 *   gy = min(blocks, 2 SMs / gx) blocks run side by side, else gx = 2 SMs
 *   and the pixels beyond are read again after the barrier. Passes: kept
 *   pixels 2 forward (x, y) and 3 backward (x, dy, dx), the others 3 and 5.
 *   Time: the bytes at the roofline, plus per round of the grid
 *   (ceil(blocks / gy)) a barrier and gx partial results merged by each
 *   CTA (BN_NHWC_* in norm.c, fitted on one trace);
 *   other channels-last cases: 3 passes forward, 5 backward at the
 *   roofline, in PyTorch's two kernels per direction where cuDNN does not
 *   run (bf16: collect statistics, transform; reduce, elementwise).
 * The running statistics (2 C floats) and the weights are negligible
 * beside the activations; the weights are charged as for other layers.
 * *k receives the choice (NULL: not wanted). */
struct ds_bn_kernel {
  int passes;          /* over the activation tensor's elements */
  int sm_bound;        /* NCHW per-channel CTAs: the per-SM rate applies */
  double bytes;        /* moved by the kernel, weights included */
  double roofline_ns;  /* bytes at the achieved bandwidth, with kernel_overhead */
  double sm_rate_ns;   /* the per-SM bound, with kernel_overhead (0: none) */
  int kernels;         /* launches (kernel_overhead each) */
  /* cuDNN's persistent NHWC kernel (0 otherwise): its grid, the rounds of
   * the grid's barrier, and their time (added to roofline_ns) */
  int grid_x, grid_y, rounds;
  double sync_ns;
};
double ds_batch_norm_ns(const struct ds_compute *c, const struct ds_layer *l, int64_t batch, int backward, struct ds_bn_kernel *k);

/* The batch counter's kernel of a BatchNorm's forward in training: PyTorch's
 * _BatchNorm.forward runs `self.num_batches_tracked.add_(1)` before
 * F.batch_norm whenever self.training and track_running_stats
 * (torch/nn/modules/batchnorm.py, torch 2.15.0 lines 187-190; SyncBatchNorm's
 * forward the same, lines 805-808; eval mode skips it, and ddpsim models
 * training only; older releases, as pytorch/pytorch at 0084715d, wrote
 * `self.num_batches_tracked += 1`, the same add, so --pytorch-version 1.4 and
 * 1.9 charge it too): an in-place add on a 0-dim int64 tensor, one elementwise
 * kernel of its own (vectorized_elementwise_kernel<2>, 1.2 us in the H200
 * ResNet-50 fp32 trace, 53 an iteration, one per BatchNorm2d:
 * bench/results/gpu-2026-11-26-h200/notes-rn50-classes-2026-11-27.md). A layer
 * has it when it is a BatchNorm (bn_channels) whose file lists the buffer
 * NAME.num_batches_tracked (bn_tracks_batches): ResNet-50's 53, ResNet-101's
 * and the ResNeXt-101s' 104, ResNeXt-50's 53, MobileNet-V2's 52.
 * Charged as every small elementwise kernel is, its bytes at the memory
 * roofline plus kernel_overhead (ds_compute_class_kernel_ns, the memory
 * class): it reads and writes 8 bytes, whatever the batch or the training
 * dtype (autocast leaves integer tensors alone). That is about 4.0 us (4 us
 * kernel_overhead on the topologies, + 16 B), above the 1.2 us the fit trace
 * shows for this kernel: kept so, since kernel_overhead is the project's
 * uniform per-kernel charge, which also stands for the idle gap between
 * kernels and for kernels ddpsim does not price (docs/architecture.md,
 * "What the 4 µs stands for"); a per-kernel exception here would be a
 * fitted constant of its own. Returns its ns and its
 * bytes in *bytes; 0 and 0 for any other layer. Its host dispatch is
 * already one of the layer's host_dispatches (tools/export_model.py counts
 * aten::add_ with native_batch_norm: 3 for a BatchNorm2d in training, 2 in
 * eval), so sim/train/host.c adds nothing for it. */
double ds_batch_norm_counter_ns(const struct ds_compute *c, const struct ds_layer *l,
                                double *bytes);

/* Layer norm (a layer with the model file's layer_norm [rows, N], model.h),
 * as PyTorch's CUDA kernels run it (aten/src/ATen/native/cuda/
 * layer_norm_kernel.cu), M = rows * batch rows of N elements, in the
 * layer's element type (fp32 under --amp: autocast runs layer_norm in fp32),
 * mean and rstd fp32:
 *   forward (LayerNormKernelImplInternal): N a multiple of 4, one kernel,
 *   vectorized_layer_norm_kernel, a CTA of 128 threads per row: reads X,
 *   gamma, beta; writes Y, mean, rstd (2 element passes); its time the
 *   longer of its bytes at the roofline and 2 * M * N element passes at a
 *   measured rate per SM cycle on min(M, SMs) SMs (LN_FWD_ELEMS_PER_SM_CYCLE
 *   in norm.c; LN_FWD_ELEMS_PER_SM_CYCLE_HALF for 2-byte elements). Otherwise two kernels (RowwiseMomentsCUDAKernel reads X;
 *   LayerNormForwardCUDAKernel reads X, writes Y), each at the roofline.
 *   backward (LayerNormBackwardKernelImplInternal): the input gradient,
 *   layer_norm_grad_input_kernel(_vectorized), a CTA per row: reads dY, X,
 *   gamma, mean, rstd, writes dX (3 element passes), at the roofline; then,
 *   with weights, the gamma/beta reduction (LaunchGammaBetaBackwardCUDA-
 *   Kernel), which reads dY and X again (2 passes) and writes dgamma, dbeta:
 *   - M > 65536 and N / 32 < SMs / 2: a partial kernel on a grid of
 *     ceil(N / 32) x P CTAs, P = min(32768 / ceil(N / 32), ceil(M / 32)),
 *     writing P rows of partial sums for each, then dgamma_blocks.sum(0) and
 *     dbeta_blocks.sum(0), two reduction kernels; all three at the roofline;
 *   - otherwise GammaBetaBackwardCUDAKernelTemplate alone: ceil(N / 32)
 *     CTAs (32 x 32 threads for M >= 256), each summing its 32 columns over
 *     all M rows: 24 CTAs for N = 768 on a 132-SM GPU, so its time is
 *     ceil(CTAs / SMs) * 2 * M * 32 element reads at a measured rate per CTA
 *     cycle (LN_GB_ELEMS_PER_CTA_CYCLE), or its bytes at the roofline if
 *     that is longer.
 * Every kernel pays kernel_overhead. On a GPU without a clock (boost_mhz)
 * or SM count every kernel runs at the roofline. *k receives the parts
 * (NULL: not wanted). */
struct ds_ln_kernels {
  int kernels;        /* launches in the pass */
  double bytes;       /* all the pass's kernels move, weights included */
  double row_ns;      /* the row kernels: forward's, or the input gradient's,
                       * with kernel_overhead */
  double gamma_beta_ns; /* backward: the gamma/beta reduction's kernels, with
                         * kernel_overhead (0 forward or without weights) */
  int gamma_beta_partial; /* the partial-sum path (M > 65536, few columns) */
};
double ds_layer_norm_ns(const struct ds_compute *c, const struct ds_layer *l, int64_t batch, int backward, struct ds_ln_kernels *k);

#endif
