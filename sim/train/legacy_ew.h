#ifndef DDPSIM_SIM_TRAIN_LEGACY_EW_H
#define DDPSIM_SIM_TRAIN_LEGACY_EW_H

/*
 * Elementwise kernels off PyTorch's vectorised path.
 *
 * A CUDA elementwise op (gpu_kernel, ATen/native/cuda/CUDALoops.cuh; a copy
 * too) runs vectorized_elementwise_kernel, which moves 16 bytes per load,
 * only when its TensorIterator is contiguous: every tensor operand dense, in
 * one layout, none broadcast. Otherwise it runs elementwise_kernel<128, 4>
 * (<128, 2> for 4-byte outputs, below), which computes every operand's
 * offset for every element (an
 * OffsetCalculator of integer divisions per dimension) and loads one
 * element at a time. On an H200 those kernels are bound by the SMs, not by
 * HBM: in this project's trace of SE-ResNeXt-101 (AMP, channels-last,
 * batch 128; bench/results/gpu-2026-11-26b-h200/prof/
 * se_resnext101_32x4d-amp-b128-nhwc.json.gz) they took 16.5 of 63.8 ms of
 * kernels, at 0.9-2.3 TB/s where the vectorised ones reach 3.6-4.1.
 *
 * The model file counts them per layer and pass (model.h ds_legacy_ew,
 * written by tools/export_model.py): their bytes and their operand-elements
 * (one element of one tensor operand, output included), in two kinds by
 * how their loads coalesce, and of the strided ones those that mix dtypes
 * under autocast. Their time is the slower of
 *   - their bytes at the memory roofline (compute_roofline.c), and
 *   - their operand-elements times SM cycles per operand-element, over the
 *     GPU's SMs x boost clock, by kind and by the kernel's element size:
 *       strided (an operand broadcast or not dense, or operands in other
 *       layouts that keep the output's unit-stride dimension: consecutive
 *       threads read consecutive elements; the squeeze-and-excitation gate's
 *       addcmul and mul by an (N, C, 1, 1) scale, the global pool's backward
 *       div of an expanded gradient): 0.212 for 2-byte elements, 0.248 for
 *       4-byte ones;
 *       transposed (a dense operand whose unit-stride dimension is not the
 *       output's, so consecutive threads read a plane apart: autograd adding
 *       an NCHW gradient to a channels-last one): 0.561 and 0.624.
 *     The element size matters because the kernel does: gpu_kernel_impl_nocast
 *     (CUDALoops.cuh) launches elementwise_kernel<128, 4> for 2-byte outputs
 *     but <128, 2> for 4-byte ones (unroll_factor = sizeof(arg0_t) >= 4 ? 2 :
 *     4), each thread computing half as many offsets with their loads in
 *     flight, and the traces and microbenchmarks name those two kernels.
 *     2-byte rates: least-squares fits through the origin on the kernels of
 *     at least 2^20 elements of this project's trace of SE-ResNeXt-101 (AMP,
 *     channels-last, batch 128; bench/results/gpu-2026-11-26b-h200/prof/
 *     se_resnext101_32x4d-amp-b128-nhwc.json.gz), each (op, shape) group's
 *     median time less the 4 us kernel_overhead the charge adds back
 *     (docs/architecture.md, "Fitted kernel rates"), 17 groups: strided
 *     0.198-0.231 over addcmul, mul and div at four shapes each, transposed
 *     0.435-0.568 over add_ at four shapes and one threshold_backward
 *     (bench/legacy_ew_fit.py prints them; with --overhead-us 0 the rates
 *     fitted before the overhead was taken out, 0.217 and 0.566). 4-byte rates:
 *     the fp32 rows of the elementwise microbenchmark (bench/gpu_kernels.py
 *     --only elementwise on the H200, bench/results/gpu-2026-11-26d-h200/
 *     elementwise.csv: a calibration set, not a training row), least squares
 *     through the origin of the time per call less the 4 us kernel_overhead
 *     against operand-elements / (SMs x clock), 48 strided rows (mul by an
 *     (N, C, 1, 1) gate, addcmul with it, the pool's backward; NCHW and
 *     channels-last; ResNet's four stage outputs at batch 128 and 32) and 16
 *     transposed ones (add_ across layouts); bench/elementwise_check.py
 *     prints them. The same microbenchmark's half rows give 0.201 and 0.593,
 *     within 6 % of the trace's 2-byte rates, and the SE-ResNeXt-101 fp32
 *     trace (bench/results/gpu-2026-11-26d-h200/prof; validation, not fitted)
 *     0.237 strided (0.255 before the overhead was taken out). Per op the
 *     rate still varies (fp32: addcmul 0.23, mul 0.26, the pool's backward
 *     0.31 per operand-element, with the overhead in: the offsets are
 *     computed per element, the loads per operand), which one rate per kind
 *     averages. Copies of a permuted tensor are charged as their kind too,
 *     and there the microbenchmark disagrees: copy_perm (strided) 0.340 half,
 *     0.414 fp32, copy_transpose (transposed, a 7x7 to 56x56 plane) 0.278 and
 *     0.405; in the project's BERT and GPT-2 H200 traces, not fitted, copies
 *     ran at 0.30-0.52 (strided) and 0.87-0.95 (transposed, larger planes):
 *     a transposed copy's cost depends on its plane, which the counts do not
 *     carry (docs/architecture.md).
 *     The kernel's element size: 4 bytes where the pass's bytes keep their
 *     fp32 size (an fp32 run; under --amp an op autocast keeps in fp32),
 *     else 2.
 *     A third kind, cast, under --amp only: of the strided operand-elements,
 *     those whose op mixes dtypes under autocast (the file's fourth number,
 *     forward ops only): 0.446, whatever the element size. An op whose
 *     operands' dtypes differ from its functor's (GPT-2's attention mask:
 *     half scores plus an fp32 mask broadcast over the heads, out fp32 by
 *     type promotion) fails
 *     needs_dynamic_casting in gpu_kernel_impl (CUDALoops.cuh), and where
 *     its iterator is not contiguous runs elementwise_kernel<128, 4> with
 *     every operand's element loaded through c10::fetch_and_cast and the
 *     result stored through c10::cast_and_store (a switch on the operand's
 *     ScalarType per element) beside the offsets: about twice the
 *     nocast kernel's SM work. The unroll is 4 whatever the output's size.
 *     Fit: this project's trace of the GPT-2 bf16 fit row (batch 8, H200;
 *     bench/results/gpu-2026-11-26-h200/prof/gpt2-bf16-b8-p.json.gz), its
 *     one such group, the mask's add (aten::add of [8, 12, 1024, 1024]
 *     bf16 and [8, 1, 1024, 1024] fp32, 12 a step, 3.02e8 operand-elements
 *     each, median 519.5 us, less the 4 us kernel_overhead: 0.446; `python3
 *     bench/legacy_ew_fit.py bench/results/gpu-2026-11-26-h200/prof/
 *     gpt2-bf16-b8-p.json.gz --sms 132 --clock-mhz 1980` prints it; 0.450
 *     before the overhead was taken out). The H100 trace of the same run
 *     (validation) took 557.9 us a call, 0.479. Contiguous mixed-dtype
 *     ops (GPT-2's residual adds of a half and an fp32 tensor) run
 *     unrolled_elementwise_kernel instead, not this kind: the model file's
 *     amp_cast_ew, ds_legacy_cast_ew_ns below; a mixed-dtype transposed op
 *     (none seen) stays transposed,
 *     and the backward's mixed ops are not counted (the mask's add has no
 *     gradient to the mask; autograd casts the scores' one, vectorised).
 * Other GPUs are inferred (the same cycles per operand-element on their SMs
 * and clock, as for max-pool's kernels), and so are other ops (a mask's
 * where), which neither the trace nor the microbenchmark ran. Without the
 * GPU's SMs and clock, or without the counts in the model file, the bytes
 * stay in the layer's one roofline, as before.
 */
#include <stddef.h>
#include <stdint.h>

#include "base/config.h"
#include "base/status.h"
#include "sim/train/model.h"

#define DS_LEGACY_STRIDED_CYCLES 0.212
#define DS_LEGACY_TRANSPOSED_CYCLES 0.561
#define DS_LEGACY_STRIDED_CYCLES_FP32 0.248
#define DS_LEGACY_TRANSPOSED_CYCLES_FP32 0.624
#define DS_LEGACY_CAST_CYCLES 0.446
/* The contiguous dynamic-casting kernel, SM cycles per operand-element
 * (below ds_legacy_cast_ew_ns). */
#define DS_LEGACY_UNROLLED_CAST_CYCLES 0.334

struct ds_compute;

/* Reads a layer item's optional legacy_ew and nhwc_legacy_ew (model.h):
 * maps of fwd, bwd, accum, copy to [bytes, strided operand-elements,
 * transposed operand-elements] with an optional fourth, the autocast cast
 * operand-elements (at most the strided ones, fwd only), each a non-negative
 * integer of at most 1e15, the strided and transposed together at most the
 * bytes + 1 (each moves at least a byte); zero when absent. The bytes are
 * part of the pass's own and may not exceed them (op_fwd_bytes, else
 * fwd_bytes; bwd_bytes, which a bwd count needs; bwd_accum_bytes;
 * bwd_copy_bytes), so l's other keys must have been read. */
ds_status ds_legacy_ew_read(const struct ds_cnode *item, struct ds_layer *l, struct ds_err *err);

/* After every layer is read: a model file with no nhwc_legacy_ew anywhere
 * (exported from a model whose input is not 4-d, where channels-last
 * changes nothing) runs its legacy_ew counts under --channels-last too. */
void ds_legacy_ew_finish(struct ds_layer *layers, size_t n);

/* The non-vectorised kernels of layer l's pass p for `batch` samples, in the
 * layout the run uses (--channels-last picks nhwc_legacy_ew): returns their
 * time in nanoseconds and sets *bytes to the bytes they move, scaled from
 * fp32 to the activation dtype, which the caller takes out of the pass's
 * roofline. Their SM cycles are the rates of the kernel's element size (4
 * bytes where the pass's bytes keep their fp32 size), and under --amp the
 * cast rate for the cast operand-elements. The time includes one
 * kernel_overhead: they are kernels of their own beside the pass's
 * vectorised ones. Both 0 when the model file has no
 * counts for the pass or the GPU's SMs or clock are unknown. */
double ds_legacy_ew_ns(const struct ds_compute *c, const struct ds_layer *l,
                       enum ds_legacy_pass p, int64_t batch, double *bytes);

/* Reads the model file's root key loss_legacy_ew (model.h loss_legacy):
 * [bytes, strided operand-elements, transposed operand-elements], each a
 * non-negative integer of at most 1e15, the elements at most the bytes + 1
 * and the bytes at most loss_copy_bytes (read first); zeros when absent. */
ds_status ds_legacy_ew_read_loss(const struct ds_cnode *root, struct ds_model *m,
                                 struct ds_err *err);

/* The loss's copies on the non-vectorised kernel for `samples` samples, as
 * ds_legacy_ew_ns prices a layer's pass: the slower of their bytes (scaled
 * to the activation dtype: the logits are half under --amp) at the
 * roofline and their operand-elements at the element size's rates, plus
 * one kernel_overhead; *bytes gets those bytes, which the caller takes out
 * of the copies' roofline. Both 0 without counts or without the GPU's SMs
 * and clock. GPT-2's shifted logits on the H200 (bf16, batch 8; the fit
 * row's trace, not fitted here): the clone and the slice's copy ran
 * elementwise_kernel<128, 4> in 940 and 945 us, 0.299 SM cycles per
 * operand-element (1.75 TB/s); 0.212 charges 671 each (overhead
 * included), the roofline 395. */
double ds_legacy_loss_ns(const struct ds_compute *c, const struct ds_model *m, double samples,
                         double *bytes);

/* The bytes those kernels move, scaled the same way, whatever the GPU's
 * clock: a caller that prices the pass's vectorised kernels from keys of
 * their own (an attention core's attn_rest, compute.h) adds them there
 * where ds_legacy_ew_ns gives no time. 0 without counts. */
double ds_legacy_ew_bytes(const struct ds_compute *c, const struct ds_layer *l,
                          enum ds_legacy_pass p, int64_t batch);
/* Under --amp with the file's autocast bytes, the forward's contiguous
 * elementwise ops that mix dtypes (model.h amp_cast_ew: GPT-2's residual
 * adds, half attention output plus the fp32 stream, and its GELU's half
 * input times and plus fp32 terms). Their iterator is contiguous but fails
 * needs_dynamic_casting, so gpu_kernel_impl (ATen/native/cuda/CUDALoops.cuh)
 * launches unrolled_elementwise_kernel with LoadWithCast / StoreWithCast:
 * no vector loads, each element fetched through a switch on its operand's
 * ScalarType (c10::fetch_and_cast), no offsets to compute. Time: the
 * slower of their bytes at the memory roofline and their operand-elements
 * x DS_LEGACY_UNROLLED_CAST_CYCLES over SMs x boost clock, plus one
 * kernel_overhead; *bytes gets their bytes for batch samples, which the
 * caller takes out of the pass's roofline. 0 without the counts, without
 * --amp or without the GPU's SMs and clock.
 * Fit: this project's trace of the GPT-2 bf16 fit row (batch 8, H200;
 * bench/results/gpu-2026-11-26-h200/prof/gpt2-bf16-b8-p.json.gz), its
 * forward's such unrolled_elementwise_kernel calls, the copies (casts,
 * cast_reduce.h) apart: aten::add of bf16 and fp32 at [8, 1024, 768] (48
 * calls, median 25.1 us, 0.292 cycles per operand-element less the 4 us
 * kernel_overhead), aten::add and aten::mul of bf16 and fp32 at [8, 1024,
 * 3072] (24 each, 100.6 and 101.2 us, 0.335 and 0.336), 2.5-2.6 TB/s
 * where the vectorised kernels reach 4.1; least squares through the origin
 * on the medians less the overhead the charge adds back (docs/
 * architecture.md, "Fitted kernel rates"): 0.334 (`python3
 * bench/legacy_ew_fit.py --unrolled bench/results/gpu-2026-11-26-h200/
 * prof/gpt2-bf16-b8-p.json.gz --sms 132 --clock-mhz 1980`; 0.349 before
 * the overhead was taken out). The backward's mixed muls (fp32 gradient
 * times the half input: 93.8 us, 0.311) are not counted: the export's
 * backward dtypes are the layer output's. */
double ds_legacy_cast_ew_ns(const struct ds_compute *c, const struct ds_layer *l, int64_t batch,
                            double *bytes);

#endif
