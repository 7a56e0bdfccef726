#ifndef DDPSIM_SIM_TRAIN_CAST_REDUCE_H
#define DDPSIM_SIM_TRAIN_CAST_REDUCE_H

/*
 * Two kernels whose time is not their bytes at the memory roofline.
 *
 * Upcasts. A copy from a half type (fp16, bf16) to fp32 (autocast's cast of
 * a half input for one of its fp32 ops: GPT-2's pow, softmax; the
 * ToCopyBackward0 of every fp32 -> half cast, a weight's included) takes
 * CUDA's dynamic-casting path: direct_copy_kernel_cuda (ATen/native/cuda/
 * Copy.cu) gives only fp32 -> half a kernel of its own (gpu_kernel_nocast,
 * vectorised), so half -> fp32 dispatches gpu_kernel on the fp32 output,
 * needs_dynamic_casting holds, and gpu_kernel_impl (CUDALoops.cuh) launches
 * unrolled_elementwise_kernel with LoadWithCast / StoreWithCast: every
 * element loaded alone through a switch on its dtype. Those kernels are
 * bound by the SMs, not HBM: DS_UPCAST_CYCLES SM cycles per element, the
 * least-squares fit through the origin of the time per kernel less the 4 us
 * kernel_overhead against elements / (SMs x clock) over the 198 upcast
 * kernels of at least 2^20 elements in this project's H200 GPT-2 bf16 trace
 * (bench/results/gpu-2026-11-26-h200/prof/gpt2-bf16-b8-p.json.gz; 0.738;
 * FIT on that run, whose validation row is marked fit already; 2.1 TB/s
 * where the vectorised downcasts reach 4.2). Validation: the H200 BERT-base
 * AMP fp16 trace's upcasts run 0.708 per element with their launch (raw),
 * 0.435 less 4 us (its kernels are small: 3.1 M elements).
 * bench/copy_cast_families.py prints both. The fp32 -> half casts
 * (forward casts for matmuls, the engine's gradient casts) stay at the
 * roofline, as the traces show them (4.2 TB/s on the H200).
 *
 * Row reductions. A bias gradient sums the output gradient's rows: one
 * reduce_kernel (ATen/native/cuda/Reduce.cuh) over a dense [rows, outputs]
 * tensor, reducing the non-contiguous dimension ("vectorize along
 * output"). setReduceConfig: each lane loads output_vec_size adjacent
 * outputs, get_output_vec_size's 4 halved until it divides the outputs
 * (4, 2 or 1; the caching allocator's 512-byte alignment never lowers
 * it); set_block_dimension gives CTAs of at most 512 / output_vec_size
 * threads, block.x the outputs' vectors (at most 32), block.y the rows,
 * each the largest power of two at most its extent (last_pow2); the rows
 * are split across block.y where that leaves a thread 16 of them or it
 * has 256 (values_per_thread = rows / block.y), else each warp takes
 * outputs of its own and a thread sums every row, vt0 = 4 loads at a time:
 * ceil(rows / 4) steps (the H200 traces' [32, 3], [32, 768] and [8,
 * 786432] grids and blocks are these); where values_per_thread >= 256
 * (max_values_per_thread) and the output CTAs are at most target_grid =
 * SMs x floor(maxThreadsPerMultiProcessor / the CTA's threads) (the
 * GPU's most resident threads per SM, by its compute_capability: the
 * table in sim/net/gpu_table.c, gpu_table.h ds_gpu_max_threads_per_sm;
 * 2048 where it does not say) it splits them across
 * ctas_per_output = max(min(div_up(target_grid, output CTAs),
 * div_up(values_per_thread, 16)), div_up(values_per_thread, 256)) CTAs
 * too, and the last CTA of each output column,
 * found by a semaphore, sums the CTAs' partials from global memory, each
 * thread ctas_per_output / 4 of them. Its time is its bytes at the roofline
 * plus a chain of dependent memory round trips: each thread's values
 * (div_up(values_per_thread, ctas_per_output)) and then the partials
 * (div_up(ctas_per_output, block.y)), DS_ROW_REDUCE_STEP_CYCLES each: 455 SM
 * cycles, the least-squares fit through the origin of each kernel's time
 * less its roofline and kernel_overhead against its steps, over the 96
 * bias-gradient reductions of the same H200 GPT-2 bf16 trace (FIT; 48
 * [8192, 768], 24 [8192, 2304], 24 [8192, 3072], 46-48 steps). Validation
 * (bench/copy_cast_families.py on the other traces): BERT-base AMP fp16
 * b32's [4096, 768] and [4096, 3072] (32 steps) predicted 12.9 and 17.4 us,
 * measured 12.1 and 18.4; BERT fp32 14.4 and 23.4 (13.3, 26.0); GPT-2 fp32
 * [8192, 768] and [8192, 3072] 21.1 and 38.7 (19.6, 40.8). The semaphores'
 * memset (about 1 us) is left out. Other GPUs: the same cycles on their
 * SMs and clock.
 */
#include <stdint.h>

#include "base/status.h"
#include "sim/train/model.h"

struct ds_compute;
struct ds_cnode;

#define DS_UPCAST_CYCLES 0.738
#define DS_ROW_REDUCE_STEP_CYCLES 455.0

/* Reads a layer's optional amp_upcast_bytes (at most its amp_cast_bytes)
 * and bwd_row_reductions ([[rows per sample, outputs], ...], at most
 * DS_ROW_REDUCTIONS_MAX, each with an optional third number, 2 or 4: its
 * bytes per element under autocast) into l. */
ds_status ds_cast_reduce_read(const struct ds_cnode *item, struct ds_layer *l,
                              struct ds_err *err);

/* Upcast kernels moving `bytes` in all (2 B read, 4 B written per
 * element), `kernels` launches: the slower of their elements at
 * DS_UPCAST_CYCLES on the GPU's SMs and clock and their bytes at the
 * roofline, plus one kernel_overhead each; the roofline alone without a
 * clock. 0 for no bytes. */
double ds_upcast_ns(const struct ds_compute *c, double bytes, double kernels);

/* The dependent memory steps of one reduce_kernel summing `rows` rows of
 * `outputs` columns on a GPU of `sms` SMs holding `sm_max_threads` threads
 * each (above; 0: unknown, taken as 2048). */
double ds_row_reduce_steps(double rows, double outputs, int sms, int sm_max_threads);

/* The bytes per element layer l's row reduction i reads: the run's
 * activation size (fp32, or half under --amp), but under autocast with
 * the file's autocast traffic (ds_compute_autocast_traffic) the size the
 * exporter found for it where it wrote one: a reduce_kernel reads the
 * gradient in the dtype it has, and an op autocast runs in fp32 (an add
 * of fp32 embeddings, GPT-2's and BERT's position embeddings' broadcast
 * add) makes an fp32 gradient. */
double ds_row_reduce_elem_bytes(const struct ds_compute *c, const struct ds_layer *l,
                                int32_t i);

/* Layer l's backward row reductions at `batch`, each in
 * ds_row_reduce_elem_bytes: each its bytes (rows x outputs read, outputs
 * written) at the roofline, its overhead and its steps; *bytes their
 * bytes. 0 (and *bytes 0) when the file lists none or the GPU has no
 * clock. */
double ds_row_reduce_ns(const struct ds_compute *c, const struct ds_layer *l, int64_t batch,
                        double *bytes);

#endif
