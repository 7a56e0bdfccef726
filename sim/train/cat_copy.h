#ifndef DDPSIM_SIM_TRAIN_CAT_COPY_H
#define DDPSIM_SIM_TRAIN_CAT_COPY_H

/*
 * torch.cat's generic CUDA kernel.
 *
 * cat_out_cuda (ATen/native/cuda/Shape.cu) runs parallel_cat<128, 1> when
 * every input is contiguous (CatArrayBatchedCopy_contig, or the aligned and
 * vectorised variants: the bytes at the roofline), but parallel_cat<64, 64>
 * when one is not (at most 4 dimensions, one dtype). That one marks every
 * input non-contiguous (isContiguous false whenever stride_size > 1) and
 * launches CatArrayBatchedCopy on 2 x SMs blocks of 512 threads per input
 * (getCatGrid), each thread in a grid-stride loop moving one element at a
 * time, its output offset and its input offset each computed by
 * CatArrIndexToOffset: an unsigned division and remainder per dimension
 * after the first, 2 x (dims - 1) per element. Those divisions, not HBM,
 * bound it: in this project's H200 GPT-2 bf16 trace (bench/results/
 * gpu-2026-11-26-h200/prof/gpt2-bf16-b8-p.json.gz) Hugging Face's KV-cache
 * update (DynamicLayer.update: cat of an empty tensor and the transposed
 * [8, 12, 1024, 64] key or value view, dim -2; 24 an iteration, 6 divisions
 * an element) takes 41.5 us and split's backward on the c_attn gradient
 * (three [8, 1024, 768], one transposed; 12 an iteration, 4 divisions) 69.3
 * us: 0.6 and 1.1 TB/s, where the roofline says about 5 and 16 us. The fp32
 * trace of the same model takes the same times (40.0 and 74.5 us) with
 * twice the bytes: the SMs bound them.
 *
 * The model file counts them per layer and pass (cat_copy: bytes, index
 * divisions; tools/export_model.py). Their time is the slower of their
 * bytes at the roofline and their divisions x DS_CAT_DIVISION_CYCLES SM
 * cycles over the GPU's SMs x boost clock, plus the launch either way.
 * DS_CAT_DIVISION_CYCLES = 0.237: FIT, least squares through the origin of
 * each kernel's time less the 4 us kernel_overhead against its divisions /
 * (132 SMs x 1980 MHz) over the 36 cat kernels an iteration of that trace
 * (whose validation row is marked fit already); it predicts 38.3 us for the
 * KV cat (-8 %) and 72.6 us for split's backward (+5 %). Validation: the
 * H200 GPT-2 fp32 trace (gpt2-fp32-b8.json.gz: 40.0 and 74.5 us, -4 % and
 * -3 %) and the H100 bf16 table (h100/prof/gpt2-bf16-b8-p.txt: 40.6 and
 * 75.6 us, -6 % and -4 %). One rate for both shapes leaves out what
 * differs between them: the KV cat's one non-empty input fills half the
 * SMs' threads (2 x SMs blocks of 512), split's backward's three fill them.
 * Other GPUs: the same cycles on their SMs and clock. Without the GPU's
 * SMs and clock the bytes stay at the roofline.
 *
 * A pass's divisions are bounded by its bytes. Each element the kernel
 * moves costs 2 x (dims - 1) divisions, at most 6 (CAT_ARRAY_MAX_INPUT_DIMS
 * = 4 in Shape.cu), and is written once in at least 1 byte (the smallest
 * dtype cat dispatches: bool, int8, uint8, the fp8 types). The bytes count
 * every element's write and, where the exporter counts it, its read
 * (tools/model_export/kernels.py note_cat: recorder.py's user_bytes leaves
 * out the reads of parameters and buffers), so the file's bytes are at
 * least the elements and the divisions at most 6 a byte. With every read
 * counted the bound
 * would be 3 a byte (1 byte read and 1 written an element); fp32's 8 bytes
 * an element give 0.75 (GPT-2's KV cat), bf16's 4 give 1.5. The file gives
 * both counts per sample, each rounded to an integer (model_export/ops.py
 * per_sample): within 0.5 of its value, so a count may be 6 x 0.5 + 0.5
 * above the bound; DS_CAT_DIVISIONS_ROUNDING = 3 allows that. A count
 * beyond it (a file's [0, 1e15]) is an error (exit 2) naming the key.
 */
#include <stdint.h>

#include "base/config.h"
#include "base/status.h"
#include "sim/train/model.h"

/* SM cycles per index division of CatArrayBatchedCopy (above; FIT on the
 * H200 GPT-2 bf16 trace). */
#define DS_CAT_DIVISION_CYCLES 0.237

/* The most index divisions a byte of cat_copy (above): 2 x (4 - 1) an
 * element, an element at least 1 byte written; and the slack for the two
 * counts' per-sample rounding (6 x 0.5 + 0.5, rounded down). */
#define DS_CAT_DIVISIONS_PER_BYTE_MAX 6
#define DS_CAT_DIVISIONS_ROUNDING 3

struct ds_compute;

/* Reads layer item's optional cat_copy into l->cat_copy (zero when
 * absent); exit 2's message names the key ("cat_copy.fwd") where a value is
 * malformed, its bytes exceed the pass's (op_fwd_bytes, bwd_copy_bytes) or
 * its divisions exceed DS_CAT_DIVISIONS_PER_BYTE_MAX a byte (above). */
ds_status ds_cat_copy_read(const struct ds_cnode *item, struct ds_layer *l, struct ds_err *err);

/* What layer l's generic cats of pass pass (DS_ATTN_FWD, DS_ATTN_BWD) take at
 * batch `batch` beyond their bytes at the roofline, which the pass's other
 * kernels already charge: 0 without them or without the GPU's SMs and
 * clock. */
double ds_cat_copy_extra_ns(const struct ds_compute *c, const struct ds_layer *l, int pass,
                            int64_t batch);

#endif
