#!/usr/bin/env python3
"""Generate ddpsim's GPU table (topologies/gpus.yaml) from the reference CSV.

Reads ../shared/data/gpu_specs.csv (relative to the repository root; see
--data) and writes topologies/gpus.yaml; the GPUs the CSV lacks (PCIe and
workstation cards, Blackwell, GeForce) and the facts `ddpsim topo import`
needs for every GPU (PCI device ids, nvidia-smi names, boost clock, NVLink
generation and link count) are in the tables below, each with its source. Output depends only on the CSV
(same input, byte-identical output). With --check nothing is written: the
table is regenerated in memory and compared with the one in the tree; the
exit status is 1 when it differs. (The model files come from real PyTorch:
tools/export_model.py.)

Standard library only.
"""

import argparse
import csv
import os
import re
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_DATA = os.path.join(os.path.dirname(REPO), "shared", "data")
SRC = "../shared/data"  # as cited in the generated comments


class GenError(Exception):
    pass


PCIE_X16_GBPS = {3: 16, 4: 32, 5: 64}  # per direction


# Measured efficiencies per op class and math (gpus.yaml `efficiency`, read by
# sim/net/gpu_table.c; sim/train/compute.h says how they are used): each is a
# published achieved rate over the peak it was achieved against, value =
# measured / peak rounded to 3 digits, with what was measured and where.
# Keys CLASS_MATH (conv, matmul, attention x fp32, tf32, half), conv_MATH_fwd and
# conv_MATH_bwd (a convolution's passes apart, where measured apart) and memory (the
# fraction of HBM bandwidth a device-to-device copy reaches). A key left out
# was not measured: the topology's flops_efficiency (mem_efficiency) applies.
# Rules: never chosen to make a validation/ row fit; a derived value shows
# its arithmetic. One rule for every efficiency fitted from measured kernel times (conv_*
# of V100, H200 and H100, attention_* of H200 and H100, matmul_half of H200; not the
# H200's matmul_fp32 and matmul_tf32, below): ddpsim charges each kernel
# kernel_overhead + max(FLOPs / (efficiency x peak), bytes / (memory efficiency x
# bandwidth)) (sim/train/compute.h), so the efficiency is total FLOPs / (peak x (total time
# - kernel_overhead x the kernels ddpsim charges for them)), every measured pass pooled,
# also those ddpsim charges by their bytes at the value (there the value does not bind;
# each entry says where that is most of them). What is a proxy says so (PROXY, below,
# marks it for gpus.yaml's efficiency_proxy and ddpsim's compute-rates line):
#  - conv_*: V100's FP32 and half have cuDNN's own measurements (DeepBench, below) and A100
#    CUTLASS's implicit-GEMM kernels (below; A100's TF32 value is still the
#    f16 kernel's fraction: no TF32 convolution measurement was found); H100's
#    and H200's TF32 and half values are cuDNN's own (ResNet-50's convolutions on
#    this project's H200, below); their FP32 value is still a proxy: since cuDNN
#    runs convolutions as implicit GEMMs, the same GPU's GEMM measurement in FP32 stands in
#    (an upper bound: on A100 the f16 convolution reached 0.534 of peak where
#    large GEMMs reach 0.869).
#  - attention_*: H200's and H100's are the attention core's own batched products, timed
#    alone (below); on the other GPUs not set: attention's batched matmuls take matmul's
#    value.
#  - half: fp16 and bf16 share the tensor rate; the measurement is of either.
# (key, measured, peak, unit, what was measured, source)
_LAYLUP = "https://github.com/lablup/mlxcel/issues/1654"
_PT_TF32 = ("https://pytorch.org/docs/stable/notes/cuda.html"
            "#tensorfloat-32-tf32-on-ampere-and-later-devices")
_MAMF = ("https://github.com/stas00/ml-engineering/blob/master/compute/accelerator/README.md"
         "#maximum-achievable-matmul-flops-comparison-table")
# The CUTLASS README's profiler examples name no GPU; taken as A100 (not
# verified): its sm80 kernel's 166.5 TFLOPS of f16 with f32 accumulation
# exceeds the dense peak of every other Ampere or Turing part (GA102: 71),
# and the examples are built for sm75/sm80 only. CUTLASS's kernels, not cuDNN's; the
# README's next figure (its numbers are not in the text) has CUTLASS's implicit-GEMM
# fprop, dgrad and wgrad "comparable to cuDNN when running Resnet-50 layers on an NVIDIA
# A100". A100's conv values stay this one problem's (n=8, 224x224, 128->128 3x3, forward,
# 118.5 GFLOP a call): no published measurement of cuDNN at ResNet-50's shapes on an A100
# was found (DeepBench has no A100 results; searched 2026-11-27), and V100's shows what
# that leaves out: ResNet-50's passes at batch 16 ran at 0.297 there, the
# sheet's large calls (its "Vision" and "Speaker ID" rows of 7-45 GFLOP, 3x3 and 5x5 at
# 64-512 channels, compute-bound) at 0.573 pooled (0.33-0.77 per pass). TF32
# takes the f16 fraction: on this project's H200 (a check, not transferred) ResNet-50's
# own TF32 channels-last convolutions at batch 128 reached the same fraction of the TF32
# peak as fp16's of the fp16 peak (0.343 and 0.343); NCHW's 0.236 times cuDNN's
# transposes, which ddpsim charges apart (bench/conv_rates.py --rn50 on
# bench/results/gpu-2026-11-27-h200/rn50conv-b128.csv).
_CUTLASS = ("https://github.com/NVIDIA/cutlass/blob/main/README.md (and docs.nvidia.com/cutlass "
            "quickstart, 'Building one Convolution CUDA kernel')")
# V100 convolutions: Baidu DeepBench's training results for V100 (DGX-1, SXM2; CUDA
# 10.1.243, cuDNN 7.6.2.24), results/train/DeepBench_NV_V100.xlsx, sheets "Results FP32"
# (FP32 math; cuDNN's fastest algorithm by cudnnFind*: Winograd for the 3x3s, implicit
# GEMM for the 1x1s) and "Results - FP16 ip, Mixed math" (NHWC, tensor-op math, the
# algorithms code/nvidia/conv_bench.cu pins: IMPLICIT_PRECOMP_GEMM forward). Each row
# gives forward, input-gradient and weight-gradient times of one shape. Aggregated the
# way ddpsim charges them (one factor for forward and backward, FLOPs of a direct
# convolution, 2*N*P*Q*K*C*R*S per pass): ResNet-50's convolutions at batch 16 (the
# largest batch DeepBench ran these shapes at), each shape counted as often as ResNet-50
# has it -- DeepBench's "Resnet" rows (the 1x1s, stride 2 on a stage's first 1x1 as in the
# original ResNet, where torchvision's v1.5 strides the 3x3; and 3x3 512 at 7x7), the
# 3x3s at 56/28/14 from its "Face Recognition" rows (the same shapes at batch 16), conv1
# (7x7/2, 3->64 at 224, no input gradient) from "Vision"; layer1's first 1x1 (64->64)
# and layer2's downsample (256->512/2) have no row (3.0 % of the forward FLOPs), left out.
# Summed over the three passes: 355.294 GFLOP in 29.914 ms (FP32) and 9.973 ms (FP16), in
# 102 kernels as ddpsim charges them (51 layers' forward and backward), 0.408 ms of
# kernel_overhead (dgx1-v100.yaml's 4 us) taken off, the rule above: 355.294 GFLOP /
# 29.506 ms = 12.041 TFLOPS (0.767) and / 9.565 ms = 37.145 (0.297). Per pass as timed,
# FP32: forward 13.86, input gradient 12.57, weight gradient 9.93 TFLOPS; FP16: 41.88,
# 37.88, 29.52. `python3 bench/deepbench_conv.py DeepBench_NV_V100.xlsx` prints the sums and
# both values (the workbook as of DeepBench commit 30c51150, 2019-10-07; fetched with
# `git show 30c51150:results/train/DeepBench_NV_V100.xlsx`, not in this repository).
# The FP16 sheet is cuDNN's tensor-core convolutions as cudnn.benchmark could pick them:
# the pinned algorithms are those cuDNN runs on tensor cores (its legacy API guide,
# "Tensor Core operations, supported algorithms": IMPLICIT_PRECOMP_GEMM or
# WINOGRAD_NONFUSED forward, ALGO_1 or WINOGRAD_NONFUSED for either gradient), so only
# Winograd-nonfused, for the 3x3s at stride 1, is left out; the sheet was submitted by
# NVIDIA with the patch that set NHWC and tensor-op math (DeepBench commit 30c51150,
# "ensure Tensor Cores to be used in more cases"). Every pass is pooled (until 2026-11-27
# conv_half pooled only the passes of at least 158.2 FLOPs per byte, V100's ridge at the
# full peak, 125 TFLOPS / (0.878 x 900 GB/s): 0.382; but at that value ddpsim's ridge is
# 0.382 x 158.2 = 60.4, so the 1x1s at 28x28 (102 FLOP/B in fp16) and the stem (124),
# charged by their FLOPs, were left out of the fit; selecting self-consistently, threshold
# = value x 158.2, converges at 0.287 without the overhead rule, all passes give 0.285).
# At 0.297 ddpsim's ridge is 47.0 FLOP/B: of these shapes at batch 16 only the strided
# 256->128 1x1 at 56x56 (28.4) is under it; FP32's at 0.767 is 15.2 (that one too, 14.2).
# DeepBench's batch 16 is small for training: at batch 8 the same shapes (less conv1)
# reach 0.614 (FP32) and 0.274 (FP16) by the same rule, against 0.767 and 0.297 at 16, so
# at the training batches of validation/ (64-256) these are lower bounds, FP16's the more
# (a tensor-core call is 8x shorter at the same size); the large GEMM (matmul_half, 0.780)
# bounds it from above. Cross-check, not transferred: on this project's H200 (8x V100's
# tensor peak, so batch 128 there is about batch 16 here in work per peak), ResNet-50's own
# fp16 channels-last convolutions at batch 128 pooled to 0.343 of peak (`bench/conv_rates.py
# --rn50` on bench/results/gpu-2026-11-27-h200/rn50conv-b128.csv).
_DEEPBENCH_V100 = ("https://github.com/baidu-research/DeepBench results/train/"
                   "DeepBench_NV_V100.xlsx (cuDNN 7.6.2, CUDA 10.1)")
_V100 = [
    ("matmul_fp32", 14.0, 15.7, "TFLOPS", "cuBLAS SGEMM at m=2048 shapes, V100", _LAYLUP),
    ("matmul_half", 97.5, 125, "TFLOPS", "cuBLAS f16 GEMM at m=2048, V100: 95 to 100 (midpoint)",
     _LAYLUP),
    ("conv_fp32", 12.041, 15.7, "TFLOPS", "cuDNN FP32 convolutions of ResNet-50's shapes at "
     "batch 16, forward + input + weight gradient: 355.294 GFLOP in 29.914 ms less 102 x 4 us "
     "kernel_overhead, V100 SXM2; a lower bound at training batches (`python3 "
     "bench/deepbench_conv.py`)", _DEEPBENCH_V100),
    ("conv_half", 37.145, 125, "TFLOPS", "cuDNN tensor-op (NHWC fp16) convolutions of "
     "ResNet-50's shapes at batch 16, every pass, forward + input + weight gradient: 355.294 "
     "GFLOP in 9.973 ms less 102 x 4 us kernel_overhead, V100 SXM2; a lower bound at training "
     "batches (`python3 bench/deepbench_conv.py`)", _DEEPBENCH_V100),
    ("memory", 790, 900, "GB/s", "cudaMemcpy device to device, V100 16GB PCIe (HBM2 at 900 GB/s, "
     "as SXM2's)",
     "https://www.paranumal.com/single-post/2018/02/08/rough-n-ready-roofline-nvidia-v100-edition"),
]
_A100 = [
    ("matmul_fp32", 18.88, 19.49, "TFLOPS", "cuBLAS SGEMM 5120x4096x4096, A100 80GB PCIe "
     "(same SMs and FP32 peak as SXM4)", "https://github.com/Yinghan-Li/YHs_Sample/issues/4"),
    ("matmul_tf32", 134.2, 156, "TFLOPS", "torch matmul 10240^3 with TF32 'takes 0.016s on "
     "GA100': 2*10240^3/0.016 s = 134.2 TFLOPS", _PT_TF32),
    ("matmul_half", 271.2, 312, "TFLOPS", "BF16 matmul, best shape 1024x10240x5120 (MAMF), A100 SXM",
     _MAMF),
    ("conv_fp32", 16.1362, 19.5, "TFLOPS", "CUTLASS implicit-GEMM fprop on CUDA cores, 3x3, "
     "n=8 224x224 c=k=128, FP32 (cutlass_simt_sfprop_optimized_128x128_8x2_nhwc)", _CUTLASS),
    ("conv_tf32", 166.526, 312, "TFLOPS", "no TF32 convolution measurement found: the fraction of "
     "the f16 tensor-core convolution below (same implicit-GEMM tensor-core kernels)", _CUTLASS),
    ("conv_half", 166.526, 312, "TFLOPS", "CUTLASS implicit-GEMM fprop on tensor cores, same "
     "problem, f16 in, f32 accumulate (cutlass_tensorop_s16816fprop_optimized_f16_128x128_32x5)",
     _CUTLASS),
    ("memory", 1.80, 2.04, "TB/s", "streaming read kernel on A100 80GB SXM, 88% of peak by Nsight "
     "Compute too (the thread cites a GTC talk: ~90% at most)",
     "https://forums.developer.nvidia.com/t/trouble-to-reach-peak-bandwidth-of-a100/339083"),
]
# matmul_unaligned_half: a half-precision GEMM whose operands' leading dimensions are not
# multiples of 8 elements runs cuBLAS's narrow-load kernels (sim/train/compute.h). FIT on
# the H200 GPT-2 bf16 b8 run (validation/training.csv marks that row `fit`), from its
# profiler trace bench/results/gpu-2026-11-26-h200/prof/gpt2-bf16-b8-p.json.gz: the LM head
# (8192 tokens x 768 -> 50257, tied to the embedding) ran
# cutlass_75_tensorop_bf16_s1688gemm_bf16_{128x128_tn, 256x128_nn, 128x256_nt}_align1,
# forward 6.635 ms, input gradient 4.500 ms, weight gradient 4.265 ms (mean of the two
# profiled iterations). Each GEMM is 2 * 8192 * 50257 * 768 = 632.38 GFLOP, so
# 3 * 632.38e9 / 15.400e-3 s = 123.2 TFLOP/s, of the 989.4 TFLOP/s bf16 peak.
# H100 SXM takes H200's value: the same GH100 chip (132 SMs, 1980 MHz, the same tensor
# cores); the kernel is bound inside the SM, not by HBM. The H100 run (its trace's
# kernel table, bench/results/gpu-2026-11-26-h200/h100/prof/gpt2-bf16-b8-p.txt: 6.697,
# 4.543, 4.321 ms) is validation, not fitted. Other GPUs: not measured.
_UNALIGNED_TRACE = ("bench/results/gpu-2026-11-26-h200/prof/gpt2-bf16-b8-p.json.gz "
                    "(this project, 2026-11-26; FIT on the H200 GPT-2 bf16 run)")
_UNALIGNED = ("matmul_unaligned_half", 123.2, 989.4, "TFLOPS",
              "cuBLAS align1 bf16 GEMMs of GPT-2's LM head, 3 x 632.38 GFLOP in 15.400 ms, H200",
              _UNALIGNED_TRACE)
# matmul_fp32, matmul_tf32 of H200 and H100: the transformers' linears at their real shapes
# (tokens M x in-features K -> out-features N: BERT-base at batch 32, GPT-2 at batch 8,
# BERT-base-squad at batch 24; forward, input-gradient and weight-gradient GEMMs, torch.mm
# with TF32 off and on), timed one at a time on a lent H200 (`bench/gpu_kernels.py --only
# gemm`). `python3 bench/gemm_rates.py bench/results/gpu-2026-11-26d-h200/gemm.csv` prints
# the values: total FLOPs / total time over the three models' GEMMs, each shape counted as
# often as a transformer block runs it (BERT's four 768x768 projections). They replace
# `ddpreal calibrate`'s square GEMMs of the same FLOPs (41.76 and 160.9 TFLOP/s on the H200,
# 42.25 and 151.1 on the H100), which are not the shapes ddpsim charges and, with edges
# cbrt(M N K) that are not multiples of 4, keep TF32 off cuBLAS's aligned tensor-core
# kernels: gemm.csv's squares ran at 42.1 (FP32) and 105.7 (TF32) pooled, TF32 at 74-107
# for edges 1342 to 2791, 240 for the one multiple of 4 (2684). Not fitted on any
# validation row: the profiled runs are the check (GPT-2 fp32's linears traced at 48.2
# TFLOP/s on both the H200 and the H100, BERT-base fp32's at 44.1; docs/validation.md).
# gemm.csv's rows are CUDA-event intervals of back-to-back calls: where a kernel is shorter
# than the host's dispatch (28-43 us, found for bmm and rn50conv the next day) the row is
# the host's pace, so the pooled value is a lower bound; BERT-base b32's 4096x768x768 TF32
# forward and input gradient (29.5 and 30.0 us; 29.7 and 30.3 in the 2026-11-27 repeat)
# are such rows (`bench/gemm_rates.py` warns
# under 35 us). Not re-timed: the values stay.
# Two rules for one GPU's matmul rates: these two are gemm.csv's intervals as timed, with
# no kernel_overhead taken off, where the H200's matmul_half (below) follows the rule at
# the top (less 4 us per kernel ddpsim charges). They were set on 2026-11-26, before that
# rule was applied to matmul values, from CUDA-event intervals (which hold the ~1.2 us
# gap between back-to-back kernels, and for the shortest rows the host's dispatch pace),
# not profiler kernel times; so ddpsim charges each of these GEMMs 4 us on top of an
# interval that already holds part of it, and the two values are slightly low. By the
# rule (2 charged kernels per layer, forward and backward, 32 for the three models' blocks
# weighted as above): matmul_fp32 46.10 TFLOP/s = 0.689 (0.685 now), matmul_tf32 235.03 =
# 0.475 (0.460 now). Not changed here: re-deriving them from kernel times (a trace of the
# same GEMMs) is the honest fix, the rule applied to intervals only an approximation.
# H100 SXM takes the H200's values: the same GH100 chip (132 SMs, 1980 MHz boost); the
# GEMMs are bound inside the SMs (the fastest, GPT-2's 768x768 TF32 forward, would move its
# operands through the H100's 3.35 TB/s HBM in 42 % of its time). Not measured on an H100.
_LINEARS_CSV = ("bench/results/gpu-2026-11-26d-h200/gemm.csv, `python3 bench/gemm_rates.py` "
                "on it (this project, 2026-11-26)")
_LINEARS_FP32 = ("matmul_fp32", 45.80, 66.9, "TFLOPS", "cuBLAS FP32 GEMMs of BERT-base's, "
                 "GPT-2's and BERT-base-squad's linears at their real shapes, forward and both "
                 "gradients, total FLOPs / total time, H200", _LINEARS_CSV)
_LINEARS_TF32 = ("matmul_tf32", 227.53, 494.7, "TFLOPS", "the same GEMMs in TF32 math "
                 "(torch.backends.cuda.matmul.allow_tf32), H200", _LINEARS_CSV)
# matmul_half of H200: the transformers' aligned linears in half precision as the fit rows'
# own H200 traces ran them (validation/training.csv marks both runs `fit`):
# bench/results/gpu-2026-11-26-h200/prof/bert-base-amp-b32-p.json.gz (BERT-base, autocast
# fp16, batch 32: cuBLASLt's nvjet_sm90_hsh_* kernels) and gpt2-bf16-b8-p.json.gz (GPT-2,
# autocast bf16, batch 8: nvjet_sm90_tst_*). Every GEMM kernel of class `matmul`
# (tools/trace_classes.py: not the attention's batched products, which attention_half
# prices, nor the LM head) with half inputs and M, K, N multiples of 8 (BERT's 3-way
# classifier is not: matmul_unaligned_half's), with the memsets its op launches; FLOPs
# 2 M K N from each GEMM op's own input shapes in the trace, which sum to the model files'
# matmul FLOPs (fwd_flops + bwd_flops of the gemm_align-8 matmul layers x batch: 2087.5 and
# 4174.7 GFLOP, equal). By the rule above: ddpsim charges a matmul layer one kernel forward
# and one backward (dgrad and wgrad in one roofline, sim/train/compute_layer.c bwd_time), so the
# time is less 4 us per forward GEMM op and per backward node: BERT-base 2087.5 GFLOP in
# 3.615 ms less 146 x 4 us, 688.7 TFLOP/s (0.696); GPT-2 4174.7 GFLOP in 6.157 ms less 96 x
# 4 us, 723.2 (0.731); pooled (each trace's iteration once) 6262.2 GFLOP in 9.772 ms less
# 242 x 4 us = 8.804 ms, 711.3 TFLOP/s. `python3 bench/half_gemm_rates.py` prints them
# (its output: bench/results/gpu-2026-11-26-h200/half_gemm_rates.txt). Forward 0.759,
# backward 0.700 pooled; as timed 0.584 (BERT-base) and 0.685 (GPT-2), 0.648 pooled: the
# two traces differ as timed by BERT's shorter kernels (4096 tokens against 8192; the
# 768x768 GEMMs take 10-12 us against 17-22), and agree within 5 % once each charged kernel
# gives back its 4 us; with 4 us off every GEMM kernel instead (dgrad and wgrad each) the
# pooled value would be 0.761. A property of cuBLAS's GEMMs at these shapes, not of one
# run: both traces ran the same tile configurations for the same (K, N) (192x128 for the
# 768-wide outputs, 256x128 for the 3072-wide, 128x160 for the wide weight gradients), the
# rate rises with the GEMM's size in both (768x768: 405-494 TFLOP/s at 4096 tokens,
# 445-576 at 8192; the 2304- and 3072-wide ones 619-752), and the H100's kernel tables of
# the same runs put these kernels at 1.012-1.032x the H200's time
# (bench/results/gpu-2026-11-26-h200/README.md, call 3): bound inside the SMs. Below MAMF's
# best shape on a GH200 (828.6, 0.838), which it replaces: that is one large GEMM's rate,
# an upper bound for these K = 768-3072 shapes. At 0.719 ddpsim's H200 ridge is 711.3 /
# 4.172 = 170 FLOPs per byte; the 4096- and 8192-token GEMMs move 350 or more in their
# forward (half activations in and out, the weight once), BERT's pooler (M = 32) about 30:
# the value binds for all but the pooler. The H100 SXM takes this value as a stand-in
# (2026-11-27), not its own MAMF best shape (794.5 TFLOP/s, 0.803): the quantity ddpsim
# charges is the rate at the linears' shapes, which MAMF's one large GEMM bounds from
# above, as it did on the GH200; the H100 is the same GH100 chip at the same clocks, and
# its own kernel tables of these runs (validation rows' traces, not fitted to) put these
# GEMMs at 1.012-1.032x the H200's time, as the SM-bound rate of one chip would.
_LINEARS_HALF_TRACES = ("bench/results/gpu-2026-11-26-h200/prof/bert-base-amp-b32-p.json.gz and "
                        "gpt2-bf16-b8-p.json.gz, `python3 bench/half_gemm_rates.py` on them "
                        "(this project, 2026-11-26; FIT on the H200 BERT-base AMP and GPT-2 bf16 "
                        "runs)")
_LINEARS_HALF = ("matmul_half", 711.3, 989.4, "TFLOPS", "cuBLASLt fp16 and bf16 GEMMs of "
                 "BERT-base's (AMP b32) and GPT-2's (bf16 b8) aligned linears in training, "
                 "forward and both gradients: 6262.2 GFLOP in 9.772 ms less 242 x 4 us "
                 "kernel_overhead, H200", _LINEARS_HALF_TRACES)
# conv_half of H200 and H100: cuDNN's dense 3x3 convolutions in fp16, channels-last (NHWC),
# timed one at a time on a lent H200 (`bench/gpu_kernels.py --only conv --batch B`, B = 32,
# 64, 128: the groups-1 rows, ResNeXt-50/101's 3x3 layers at full width, 128 to 2048
# channels at 56x56 to 7x7, strided or not; forward, input gradient, weight gradient; each
# the median CUDA-event time of the call, cudnn.benchmark on). `python3 bench/conv_rates.py
# bench/results/gpu-2026-11-26d-h200/conv-b{32,64,128}.csv` prints the value: total FLOPs
# (a direct convolution's, 2 x output elements x input channels x 9) / total time over the
# 126 rows, by the rule above (42 shapes x a forward and a backward kernel at 4 us: 32.699
# ms less 0.336), 21752.3 GFLOP / 32.363 ms = 672.1 TFLOP/s (665.2, 0.672, as timed; 616.9,
# 682.5 and 669.9 TFLOP/s at batch 32, 64, 128 as timed; another H200's run of the same
# tool, bench/results/gpu-2026-11-26b-h200/kernels*.csv, within 3 %). Channels-last
# only: the NCHW rows (434.6 pooled) time cuDNN's NCHW<->NHWC transposes with the kernel,
# and ddpsim charges those apart (compute_conv.c, conv_transpose_bytes). It replaces the bf16
# matmul MAMF (828.6, 0.838). An upper bound for ResNet-50's narrower layers: its AMP b128
# channels-last trace (a validation row's: a check, not fitted) ran them at 398.8 TFLOP/s
# (0.403; 3x3s 547.3, 1x1s 351.4), ResNeXt-101 32x4d's wider dense ones at 532.0.
# Not replaced by ResNet-50's own shapes timed the same way (`--only rn50conv --batch 128`,
# bench/results/gpu-2026-11-27-h200/rn50conv-b128.csv, fp16 channels-last: 339.4 TFLOP/s,
# 0.343, `python3 bench/conv_rates.py --rn50`): each call is timed with CUDA events back to
# back and none is under 28 us, so where training's kernel is short the call times the
# host's dispatch: 1.18x the trace's kernel time over the model, micro / trace 2.48
# (median) where the trace's kernel is under 25 us, 1.71 at 25-35, 1.14 at 35-45, 1.04
# above (`--compare TRACE --mode fp16-nhwc --shapes`; bench/results/gpu-2026-11-27-h200/
# notes-rn50conv.md): a lower bound, 0.343 against the trace's 0.403, and with it ddpsim's
# convolutions in that run took 10.6 ms against the trace's 7.8 (6.9 at 0.672).
# conv_tf32_fwd and conv_tf32_bwd of H200 and H100 (compute.h: a convolution's forward and
# backward each at their own efficiency; any pass without one takes the pooled conv_tf32):
# cuDNN runs different kernels for the two (fprop against dgrad and wgrad), so the same
# trace, split by the op each kernel ran under, by the same rule (each op one kernel of 4 us
# overhead; a backward op's input and weight gradients together, as ddpsim charges a
# layer's backward, the stem's without the input gradient: the FLOPs ddpsim counts,
# models/resnet50.yaml's fwd_flops and bwd_flops x 32). `python3 bench/conv_rates.py
# --trace bench/results/gpu-2026-11-26-h200/prof/resnet50-fp32-b32.json.gz` prints them:
# forward 261.6 GFLOP in 1.892 ms less 53 x 4 us = 1.680 ms, 155.7 TFLOP/s (`gpus.yaml
# conv_tf32_fwd: 155.7 / 494.7 TFLOPS = 0.315`); backward 515.6 GFLOP in 4.457 ms less 53 x
# 4 us = 4.245 ms, 121.5 TFLOP/s (`gpus.yaml conv_tf32_bwd: 121.5 / 494.7 TFLOPS = 0.246`);
# the two give the pooled value's 5.924 ms back. The second H200's trace of the same run
# (gpu-2026-11-26b-h200) gives 155.0 and 122.0 (0.313, 0.247): a check, not fitted. No
# conv_half split: the pooled conv_half is the dense 3x3 CSVs' (below), not a trace's; the
# one half fit row's trace (ResNeXt-101 32x4d AMP channels-last b128, fit for the NHWC batch
# norm) gives 586.3 forward and 549.9 backward (0.593, 0.556; 0.568 pooled), a different
# value from another set, not a split of 0.679; the CSVs themselves by the same rule (4 us
# off each forward row, 2 off each gradient row) 639.2 and 689.9 (0.646, 0.697). Neither is
# set; conv_half stays pooled.
# conv_tf32 of H200 and H100: cuDNN's TF32 kernels (compute + helpers, transposes apart:
# ddpsim charges those as memory-bound kernels) in the torch.profiler trace of the fit row
# ResNet-50 FP32 (TF32 conv) batch 32 on the H200 (validation/training.csv marks it `fit`):
# 777.2 GFLOP in 6.348 ms per iteration (the second H200's trace of the same run,
# gpu-2026-11-26b-h200, 6.337), by the rule above (53 convolutions x forward and backward =
# 106 kernels at the H200 and H100 topologies' 4 us, 0.424 ms): 777.2 GFLOP / 5.924 ms =
# 131.2 TFLOP/s, the value `python3 bench/conv_rates.py --trace
# bench/results/gpu-2026-11-26-h200/prof/resnet50-fp32-b32.json.gz` prints on its line
# `gpus.yaml conv_tf32: 131.2 / 494.7 TFLOPS = 0.265`. Every pass pooled: at 0.265 the
# ridge is 0.265 x 494.7 / 4.172 = 31.4 FLOPs per byte, and ddpsim charges the passes under
# it (about 8 % of the FLOPs, a review's count, 2026-11-27) by their bytes: there the value
# does not bind. The microbenchmark of the same shapes (`--only rn50conv
# --batch 32`, TF32 channels-last, no transposes) agrees where training's kernels are long
# (micro / trace 1.04 at 35-45 us, 1.07 above) and carries the host's dispatch where they
# are short (1.91 under 25 us, 1.22 at 25-35): its mix, 100.8 TFLOP/s (0.204), is 1.21x
# the trace's time. At batch 128 it gives 169.8 (0.343): the rate rises with the batch
# (and with the layers' widths: ResNeXt-101 32x8d's dense ones ran at 218.6 in its b32
# trace), which one value cannot follow; a fixed time per kernel beside a FLOP rate
# follows both (t0 18.2 us, 223.7 TFLOP/s TF32, 828.1 fp16: `python3 bench/conv_rates.py
# --fit-call`; notes-rn50conv.md), not in ddpsim. Replaces the cuBLAS proxy (SGEMMs shaped
# as the 3x3 implicit GEMMs: 155.7 on H200, 129.6 on H100).
# H100 SXM takes the H200's values (same GH100 chip, 132 SMs, 1980 MHz); the most
# bandwidth-hungry row would move its operands through the H100's 3.35 TB/s in 43 % of its
# time. Not measured on an H100: its training kernel tables
# (bench/results/gpu-2026-11-26-h200/h100/prof/resnet50-*.txt) put its ResNet-50
# convolution ops at 1.18x the H200's time in AMP NHWC b128 (9.22 against 7.80 ms), 1.11x
# in NCHW, 1.08x in fp32 b32, so H100's values overstate its rate more than H200's do.
_CONV_CSV = ("bench/results/gpu-2026-11-26d-h200/conv-b32.csv, conv-b64.csv, conv-b128.csv, "
             "`python3 bench/conv_rates.py` on them (this project, 2026-11-26)")
_CONV_HALF = ("conv_half", 672.1, 989.4, "TFLOPS", "cuDNN fp16 channels-last dense 3x3 "
              "convolutions at ResNeXt's widths (128-2048 channels, 56x56-7x7), forward and both "
              "gradients, batch 32, 64 and 128, total FLOPs / total time less 84 x 4 us "
              "kernel_overhead, H200", _CONV_CSV)
# attention_fp32, attention_tf32, attention_half of H200 and H100: the attention core's
# batched products (head dim 64) of BERT-base b32, GPT-2 b8 and BERT-base-squad b24 (forward
# Q K^T and P V; BmmBackward0's dO V^T, P^T dO, dS K and Q^T dS), torch.bmm in FP32, TF32,
# fp16 and bf16, each call queued behind a spin kernel and its kernels timed alone by
# torch.profiler (cuBLASLt's workspace memset included), on a lent H200 (a separate inline
# device call at c83220b, on gpu_kernels.py's helpers; the same timing
# bench/gpu_kernels.py's bmm rows use since 98ebbaf: bench/results/gpu-2026-11-27-h200/
# notes-bmm.md). By the rule above: ddpsim charges each product kernel_overhead (the
# attention pass's roofline + (kernels - 1) x overhead, sim/train/compute_layer.c attn_core_time;
# 2 kernels forward, 4 backward per layer), so each row's time less 4 us. `python3
# bench/bmm_rates.py bench/results/gpu-2026-11-27-h200/bmm-queued.csv --gpu "NVIDIA H200"`
# prints the values: total FLOPs / total (time - 4 us per product), each product once per
# model (one layer of each, as a block runs them); half pools the fp16 and bf16 rows
# (BERT-base b32 0.337, gpt2-b8 0.233, squad 0.208 of the 989.4 peak). Without the overhead
# rule (until 2026-11-27): 0.548, 0.197, 0.200. Not the same day's plain bmm.csv: its
# CUDA-event intervals of back-to-back calls were the host's dispatch (31-43 us) wherever a
# kernel is shorter (BERT-base b32 in every math, SQuAD in half), 0.541 / 0.173 / 0.139
# pooled so (without the overhead rule). Where the value binds: ddpsim prices each pass's
# products at one roofline, their FLOPs against their bytes (the model files'
# attn_products): at these values the ridge of the H200 (memory 4.172 TB/s) is 9.0 FLOPs per
# byte in FP32, 24.9 in TF32, 54.1 in half; the products move 16 (BERT-base), 24 (SQuAD) and
# 28.4 (GPT-2) FLOPs per byte in FP32 and TF32, 32, 48 and 56.9 in half. So FP32 binds for
# every model, but TF32 and half bind for GPT-2 only: BERT-base's and SQuAD's products are
# charged by their bytes, whatever these two values are. Checks, not fitted: the traces ran
# the same kernels (same cuBLAS/nvjet names) at 0.581 (GPT-2 fp32), 0.401 (BERT-base fp32),
# 0.162 (SQuAD TF32), 0.209 (GPT-2 bf16), 0.105 (BERT-base AMP) of the peak as timed, where
# the benchmark's rows of the same model give 0.585, 0.415, 0.173, 0.218, 0.130 as timed
# (`python3 bench/bmm_rates.py --trace T` on bench/results/gpu-2026-11-26*-h200/prof/
# *.json.gz; the CSV's with --kernel-overhead-us 0).
# H100 SXM: measured, the H200's values times the H100 / H200 ratio of the same products:
# bench/results/gpu-2026-11-27b-h100/bmm.csv timed the bmm rows on an H100 by the plain
# CUDA-event interval, as the H200's bmm.csv; only GPT-2 b8's products there outlast the
# host's dispatch (the H200's interval and kernel-only GPT-2 rows agree: 0.602 / 0.221 /
# 0.222 against 0.592 / 0.227 / 0.233 by the rule), so the ratio is GPT-2 b8's on both
# (less 4 us a row): FP32 40.09 / 40.29 TFLOP/s (0.599 / 0.602), TF32 78.28 / 109.52
# (0.158 / 0.221: the H100 1.40x slower; as timed 0.154 / 0.214, 1.39x), half 156.16 /
# 219.26 (0.158 / 0.222; as timed 0.151 / 0.207). `python3 bench/bmm_rates.py
# bench/results/gpu-2026-11-27-h200/bmm-queued.csv --gpu "NVIDIA H200" --scale
# bench/results/gpu-2026-11-27b-h100/bmm.csv bench/results/gpu-2026-11-27-h200/bmm.csv
# --scale-models gpt2-b8` prints them (`scaled` lines). The FP32 products are bound inside
# the SMs (the ratio 0.995); in TF32 and half (16-57 FLOPs per byte) the H100's 3.35 TB/s
# against the H200's 4.8 TB/s makes them slower. The model mix is the H200's (the H100's
# BERT-base and SQuAD rows are the host's pace: 0.049 and 0.021 in TF32 and half).
_BMM_CSV = ("bench/results/gpu-2026-11-27-h200/bmm-queued.csv, `python3 bench/bmm_rates.py "
            "--gpu \"NVIDIA H200\"` on it (this project, 2026-11-27)")
_BMM_H100 = ("bench/results/gpu-2026-11-27b-h100/bmm.csv and gpu-2026-11-27-h200/bmm.csv "
             "(GPT-2 b8's rows) with the H200's bmm-queued.csv, `python3 bench/bmm_rates.py "
             "--scale ... --scale-models gpt2-b8` (this project, 2026-11-27)")
_ATTN_FP32 = ("attention_fp32", 37.51, 66.9, "TFLOPS", "cuBLAS FP32 batched GEMMs of the "
              "attention core (head dim 64; BERT-base b32, GPT-2 b8, BERT-base-squad b24; "
              "forward and backward), kernels alone less 4 us kernel_overhead each, total FLOPs "
              "/ total time, H200", _BMM_CSV)
_ATTN_TF32 = ("attention_tf32", 104.07, 494.7, "TFLOPS", "the same products in TF32 math, H200; "
              "binds for GPT-2 only (BERT-base's and SQuAD's are charged by their bytes)",
              _BMM_CSV)
_ATTN_HALF = ("attention_half", 225.71, 989.4, "TFLOPS", "the same products in fp16 and bf16 "
              "(pooled), H200; binds for GPT-2 only (BERT-base's and SQuAD's are charged by "
              "their bytes)", _BMM_CSV)
_H100_ATTN = [
    ("attention_fp32", 37.33, 66.9, "TFLOPS", "H200's 37.51 x H100 / H200 of GPT-2 b8's "
     "products timed the same way on both (40.09 / 40.29 TFLOP/s, interval less 4 us a row)",
     _BMM_H100),
    ("attention_tf32", 74.39, 494.7, "TFLOPS", "H200's 104.07 x H100 / H200 of GPT-2 b8's TF32 "
     "products (78.28 / 109.52); binds for GPT-2 only", _BMM_H100),
    ("attention_half", 160.76, 989.4, "TFLOPS", "H200's 225.71 x H100 / H200 of GPT-2 b8's fp16 "
     "and bf16 products (156.16 / 219.26); binds for GPT-2 only", _BMM_H100),
]
_RN50_TRACE = ("bench/results/gpu-2026-11-26-h200/prof/resnet50-fp32-b32.json.gz, `python3 "
               "bench/conv_rates.py --trace` on it (this project, 2026-11-26; FIT on the H200 "
               "ResNet-50 FP32 batch-32 run)")
_CONV_TF32 = ("conv_tf32", 131.2, 494.7, "TFLOPS", "cuDNN's TF32 convolutions of ResNet-50 "
              "FP32 batch 32 training, compute and helper kernels, transposes apart: 777.2 "
              "GFLOP in 6.348 ms less 106 x 4 us kernel_overhead, H200 (the script's "
              "`gpus.yaml conv_tf32` line)", _RN50_TRACE)
_CONV_TF32_FWD = ("conv_tf32_fwd", 155.7, 494.7, "TFLOPS", "cuDNN's TF32 convolutions of "
                  "ResNet-50 FP32 batch 32 training, forward ops, as conv_tf32: 261.6 GFLOP in "
                  "1.892 ms less 53 x 4 us kernel_overhead, H200 (the script's `gpus.yaml "
                  "conv_tf32_fwd` line)", _RN50_TRACE)
_CONV_TF32_BWD = ("conv_tf32_bwd", 121.5, 494.7, "TFLOPS", "cuDNN's TF32 convolutions of "
                  "ResNet-50 FP32 batch 32 training, backward ops (input and weight gradients), "
                  "as conv_tf32: 515.6 GFLOP in 4.457 ms less 53 x 4 us kernel_overhead, H200 "
                  "(the script's `gpus.yaml conv_tf32_bwd` line)", _RN50_TRACE)
_H100_CAL2 = ("bench/results/gpu-2026-11-26-h200/h100/calibrate-bert-base.log "
              "(this project, 2026-11-26)")
# H100 measured as H200 below (same method, same day; the 2026-11-23 run fitted
# ResNet-50's layer-sized square SGEMMs for matmul and let convolutions take them).
_H100 = [
    _LINEARS_FP32[:4] + ("H200's (same GH100 chip and clocks): " + _LINEARS_FP32[4],
                         _LINEARS_FP32[5]),
    _LINEARS_TF32[:4] + ("H200's (same GH100 chip and clocks): " + _LINEARS_TF32[4],
                         _LINEARS_TF32[5]),
    _LINEARS_HALF[:4] + ("H200's (same GH100 chip and clocks): " + _LINEARS_HALF[4],
                         _LINEARS_HALF[5]),
    ("conv_fp32", 41.77, 66.9, "TFLOPS", "convolution proxy: SGEMMs shaped as ResNet-50's 3x3 "
     "implicit GEMMs at batch 32 (FP32 math), H100 SXM; cuBLAS, not cuDNN", _H100_CAL2),
    _CONV_TF32[:4] + ("H200's (same GH100 chip and clocks): " + _CONV_TF32[4], _CONV_TF32[5]),
    _CONV_TF32_FWD[:4] + ("H200's (same GH100 chip and clocks): " + _CONV_TF32_FWD[4],
                          _CONV_TF32_FWD[5]),
    _CONV_TF32_BWD[:4] + ("H200's (same GH100 chip and clocks): " + _CONV_TF32_BWD[4],
                          _CONV_TF32_BWD[5]),
    _CONV_HALF[:4] + ("H200's (same GH100 chip and clocks): " + _CONV_HALF[4], _CONV_HALF[5]),
    ("memory", 2979, 3350, "GB/s", "cudaMemcpy device to device of 512 MiB, 2*S/t, H100 SXM",
     _H100_CAL2),
    _UNALIGNED[:4] + ("H200's (same GH100 chip and clocks): " + _UNALIGNED[4],
                      _UNALIGNED[5]),
] + _H100_ATTN
_H200_CAL = ("bench/results/gpu-2026-11-26-h200/calibrate-bert-base.log and calibrate-resnet50.log "
             "(this project, 2026-11-26)")
# H200 measured by `ddpreal calibrate` on a lent H200 (bench/results/gpu-2026-11-26-h200).
# The rates are the fits with the per-call overhead fixed at the measured launch time
# (3.45 us), the form ddpsim uses (kernel_overhead + F / (efficiency * peak)); the free
# fits' intercepts (13-29 us) are not a launch cost ddpsim has.
_H200 = [
    _LINEARS_FP32,
    _LINEARS_TF32,
    _LINEARS_HALF,
    ("conv_fp32", 41.54, 66.9, "TFLOPS", "convolution proxy: SGEMMs shaped as ResNet-50's 3x3 "
     "implicit GEMMs at batch 32 (FP32 math), H200; cuBLAS, not cuDNN", _H200_CAL),
    _CONV_TF32,
    _CONV_TF32_FWD,
    _CONV_TF32_BWD,
    _CONV_HALF,
    ("memory", 4172, 4800, "GB/s", "cudaMemcpy device to device of 512 MiB, 2*S/t, H200",
     _H200_CAL),
    _UNALIGNED,
    _ATTN_FP32,
    _ATTN_TF32,
    _ATTN_HALF,
]
EFFICIENCY = {
    "V100-SXM2-16/32GB": _V100,
    "A100-SXM4-40GB": _A100,  # the 80 GB card's memory (a stand-in, PROXY); same SMs and clocks
    "A100-SXM4-80GB": _A100,
    # The PCIe card's own (an EXTRA_GPUS entry): matmul_fp32's SGEMM was measured on an
    # A100 80GB PCIe (YHs_Sample issue 4, above); the rest are the SXM4 cards' GA100
    # fractions, each a stand-in (PROXY). The peaks they divide are the same (19.5, 156,
    # 312 TFLOPS: the datasheet's PCIe and SXM columns agree), so the fractions carry over
    # as far as the chip sets them; what may not is the board: 300 W against SXM4's 400 W
    # (the datasheet's max TDP), which can hold tensor-core clocks lower, and HBM2e at 1935
    # against 2039 GB/s.
    "A100-PCIE-80GB": _A100,
    # The 40 GB PCIe card: nothing measured on it was found (searched 2026-11-27), so every
    # value is the GA100 fractions above, each a stand-in (PROXY). The peaks divided are the
    # same (19.5, 156, 312 TFLOPS) and so are the SMs and boost clock (108, 1410 MHz); the
    # board is not: 250 W against the 80 GB PCIe card's 300 W and SXM4's 400 W, which NVIDIA
    # put at up to 90 % of the 400 W card's performance in sustained loads at its launch
    # (https://wccftech.com/nvidia-ampere-a100-pcie-gpu-launch-20x-volta/, 2020-06-22: 250 W,
    # 40 GB HBM2 at 1555 GB/s), so each fraction is an upper bound as far as power holds the
    # clocks; memory is HBM2 at 1555 GB/s, as A100-SXM4-40GB's.
    "A100-PCIE-40GB": _A100,
    "H100-SXM5-80GB": _H100,
    "H200-SXM-141GB": _H200,
}
# The EFFICIENCY values that stand in for a measurement of their own: another GPU's,
# another math's or another operation's (or, for memory, another memory's) measured
# fraction used in place of this one's. gpus.yaml's `efficiency_proxy` map carries them with the reason below,
# which ddpsim's compute-rates line prints ("a stand-in (GPU table: REASON) for conv_tf32"),
# so it is short (at most 63 characters; no quotes or backslashes: sim/net/gpu_table.c).
# Decided entry by entry (2026-11-27; revised the same day, issue #12: a value measured on
# another GPU is a stand-in however close the GPU, by default). What is NOT here is a
# measurement of this class in this math on this GPU itself: the same chip measured as
# this SKU (form factor and memory), or a source naming the chip or form factor without
# saying which memory variant (the SXM2 V100s, the SXM4 A100s) where the value is not
# the memory's.
#  - A100 conv_tf32: the f16 tensor-core convolution's fraction (no TF32 convolution
#    measurement was found: see _CUTLASS).
#  - H100 and H200 conv_fp32: cuBLAS SGEMMs shaped as ResNet-50's 3x3 implicit GEMMs
#    (`ddpreal calibrate`), a GEMM standing in for cuDNN's convolution.
#  - A100-SXM4-40GB memory: the 80 GB card's read-kernel fraction of its HBM2e's 2039 GB/s,
#    applied to the 40 GB card's HBM2 at 1555 GB/s, another memory at another clock.
#  - H100 conv_tf32, conv_tf32_fwd, conv_tf32_bwd, conv_half, matmul_fp32, matmul_tf32,
#    matmul_half, matmul_unaligned_half: the H200's (the same GH100 chip, 132 SMs and 1980 MHz, but
#    another GPU: HBM3e at 4.8 TB/s against HBM3 at 3.35, and its own board); conv_tiles'
#    half values are the H200's too, and reach the run's line through conv_half.
#  - A100 matmul_fp32 (both SXM4 cards): an A100 80GB PCIe's SGEMM (the same GA100 SMs and
#    FP32 peak; a PCIe card, at 300 W). Not a stand-in on A100-PCIE-80GB: its own.
#  - A100-PCIE-80GB's other values: the SXM4 cards' GA100 fractions. conv_*: as the SXM4
#    cards' (CUTLASS's unnamed GPU; TF32 the f16 fraction). matmul_tf32 (PyTorch's "GA100",
#    SKU unnamed, which the SXM4 cards take as their own) and matmul_half (MAMF's "A100
#    SXM"): a 400 W SXM4 board most likely, where this card is held to 300 W. memory: the
#    80 GB SXM4 card's read-kernel fraction of its HBM2e at 2039 GB/s, applied to this
#    card's HBM2e at 1935 GB/s (another clock, as A100-SXM4-40GB's).
#  - A100-PCIE-40GB: every value. matmul_fp32: the A100 80GB PCIe's SGEMM (another card, at
#    300 W; this one is held to 250 W). The rest as A100-PCIE-80GB's, at 250 W; memory: the
#    80 GB SXM4 card's fraction of its HBM2e, applied to this card's HBM2 at 1555 GB/s (as
#    A100-SXM4-40GB's).
#  - V100-SXM2 memory (16 and 32 GB): a V100 16GB PCIe card's cudaMemcpy (the paranumal
#    post: "The V100 16GB PCI-E card"), the same HBM2 at 900 GB/s on another board.
#  - A100 conv_fp32 and conv_half (both SXM4 cards): CUTLASS's implicit-GEMM convolutions
#    from its README's profiler example (see _CUTLASS), which names no GPU: taken as an
#    A100's, a measurement no source ties to this GPU (a 2026-11-27 review).
# Not stand-ins, with why: H100's memory (its own cudaMemcpy); H100's attention_* (the H100 timed on the same products as the H200, GPT-2
# b8's, the ratio scaling the H200's model mix: the H100's own measurement of how it
# differs); V100 conv_* (DeepBench's DGX-1 V100 SXM2, memory variant unnamed) and matmul_*
# (a "Tesla V100", variant unnamed; its 14.0 FP32 TFLOPS would be a PCIe card's whole
# peak, so an SXM2); A100 matmul_tf32 (PyTorch's "GA100", SKU unnamed) and matmul_half
# (MAMF's "A100 SXM", memory unnamed); A100-SXM4-80GB memory (a read kernel rather than a copy, of this card's own HBM2e); the
# half values measured in bf16 or fp16 (one tensor rate: "half" above).
_CONV_TF32_FROM_HALF = "the f16 convolution's fraction of peak"
_CONV_FP32_FROM_SGEMM = "cuBLAS SGEMMs shaped as ResNet-50's 3x3 convolutions"
_FROM_H200 = "the H200's, the same GH100 chip and clocks"
_FROM_A100_PCIE = "an A100 80GB PCIe's, the same GA100 SMs and FP32 peak"
_CUTLASS_UNNAMED = "CUTLASS's README profiler run on a GPU it does not name"
PROXY = {
    "V100-SXM2-16/32GB": {"memory": "a V100 16GB PCIe card's, the same HBM2 at 900 GB/s"},
    "A100-SXM4-40GB": {"conv_tf32": _CONV_TF32_FROM_HALF,
                       "conv_fp32": _CUTLASS_UNNAMED, "conv_half": _CUTLASS_UNNAMED,
                       "matmul_fp32": _FROM_A100_PCIE,
                       "memory": "the 80 GB card's fraction of its HBM2e"},
    "A100-SXM4-80GB": {"conv_tf32": _CONV_TF32_FROM_HALF, "matmul_fp32": _FROM_A100_PCIE,
                       "conv_fp32": _CUTLASS_UNNAMED, "conv_half": _CUTLASS_UNNAMED},
    "A100-PCIE-80GB": {"conv_tf32": _CONV_TF32_FROM_HALF,
                       "conv_fp32": _CUTLASS_UNNAMED, "conv_half": _CUTLASS_UNNAMED,
                       "matmul_tf32": "a GA100 of unnamed SKU; this card is held to 300 W",
                       "matmul_half": "an A100 SXM's, the same GA100; this card is held to 300 W",
                       "memory": "the 80 GB SXM4's fraction of its HBM2e at 2039 GB/s"},
    "A100-PCIE-40GB": {"conv_tf32": _CONV_TF32_FROM_HALF,
                       "conv_fp32": _CUTLASS_UNNAMED, "conv_half": _CUTLASS_UNNAMED,
                       "matmul_fp32": "an A100 80GB PCIe's at 300 W; this card is held to 250 W",
                       "matmul_tf32": "a GA100 of unnamed SKU; this card is held to 250 W",
                       "matmul_half": "an A100 SXM's, the same GA100; this card is held to 250 W",
                       "memory": "the 80 GB SXM4's fraction of its HBM2e at 2039 GB/s"},
    "H100-SXM5-80GB": {"conv_fp32": _CONV_FP32_FROM_SGEMM,
                       **{k: _FROM_H200 for k in ("conv_tf32", "conv_tf32_fwd", "conv_tf32_bwd",
                                                  "conv_half", "matmul_fp32", "matmul_tf32",
                                                  "matmul_half", "matmul_unaligned_half")}},
    "H200-SXM-141GB": {"conv_fp32": _CONV_FP32_FROM_SGEMM},
}
# conv_MATH_fwd and conv_MATH_bwd (a convolution's forward and backward apart, each
# beside its pooled conv_MATH, which gpu_table.c requires with them)
EFF_KEYS = [k for m in ("fp32", "tf32", "half")
            for k in ("conv_" + m, "conv_%s_fwd" % m, "conv_%s_bwd" % m)] + \
    [c + "_" + m for c in ("matmul", "attention")
     for m in ("fp32", "tf32", "half")] + ["matmul_unaligned_half", "memory"]


def efficiency_lines(gpu, has_tf32):
    """The `efficiency` map of one GPU and a comment line per value."""
    entries = EFFICIENCY.get(gpu, [])
    out, keys = [], set()
    entries = sorted(entries, key=lambda e: EFF_KEYS.index(e[0]))
    for key, measured, peak, unit, what, src in entries:
        check(key in EFF_KEYS and key not in keys, "%s: efficiency key %r" % (gpu, key))
        check(has_tf32 or "tf32" not in key, "%s: %s without TF32" % (gpu, key))
        keys.add(key)
        check(not key.endswith(("_fwd", "_bwd")) or any(e[0] == key[:-4] for e in entries),
              "%s: %s without %s" % (gpu, key, key[:-4]))
        v = round(measured / peak, 3)
        check(0 < v <= 1, "%s: %s = %g" % (gpu, key, v))
        out.append("    #   %s %.3f = %g / %g %s: %s (%s)"
                   % (key, v, measured, peak, unit, what, src))
    if not out:
        return []
    vals = ", ".join("%s: %.3f" % (k, round(m / p, 3)) for k, m, p, _, _, _ in entries)
    out = ["    # efficiency: measured achieved / peak (tools/gen_gpus.py EFFICIENCY)"] + out + [
        "    efficiency: {%s}" % vals]
    proxies = PROXY.get(gpu, {})
    for key, why in proxies.items():
        check(key in keys, "%s: PROXY names %s, which has no efficiency" % (gpu, key))
        check(0 < len(why) < 64 and why.isprintable() and '"' not in why and "\\" not in why,
              "%s: PROXY %s's reason %r" % (gpu, key, why))
    if proxies:
        out += ["    # efficiency_proxy: the values above that stand in for a measurement of "
                "their own (tools/gen_gpus.py PROXY)",
                "    efficiency_proxy: {%s}" % ", ".join(
                    '%s: "%s"' % (k, proxies[k]) for k in sorted(proxies, key=EFF_KEYS.index))]
    return out


# conv_tiles (gpus.yaml; sim/net/topo.h struct ds_conv_tiles, sim/train/compute_roofline.c
# conv_tiles): a dense convolution in that math takes fwd_us / bwd_us + max(FLOPs / (fwd /
# bwd x peak x u), bytes' time) beside kernel_overhead, u = M n / (ceil(T / SMs) SMs tile_m
# tile_n), T = ceil(M / tile_m) ceil(n / tile_n), M = batch x output positions, n =
# min(Cin k^2, Cout): the implicit GEMM's tiles, the narrow side padding each, the last wave
# idling SMs. n is the narrower of the reduction depth Cin k^2 and Cout; both backward passes
# are charged on the forward's M and n, a proxy the fitted bwd absorbs (the real dgrad and
# wgrad GEMMs have other shapes). No fit data covers batches below 32: there the fixed
# 2 / 14 us per charge and a small u dominate (H200 ResNet-50 AMP channels-last batch 1
# backward 1.35 ms at conv_half -> 2.46 ms). half of H200: fitted (least squares of log(model / measured), tile from a grid,
# the fixed times from 0-60 us in 2 us steps) on ResNet-50's 23 shapes (x their count) and
# ResNeXt's 14 dense 3x3 shapes at full width (once each), fp16 channels-last, batch 32 and
# 128, each pass queued behind a spin and profiled: `python3 bench/conv_tile_fit.py --t0
# --rn50 bench/results/gpu-2026-11-27d-h200/rn50conv-half-b*.csv --wide
# bench/results/gpu-2026-11-27e-h200/wide-b*.csv --mode fp16-nhwc` prints `tile tm 64 tn
# 128; E fwd 0.686 bwd 0.701; t0 fwd 2 us bwd 14 us` (conv_tile_fit-half.txt there). Checked,
# not fitted, on the AMP b128 channels-last traces' dense convolutions: ResNet-50 -1.3 / -3.3
# % (fwd / bwd), ResNeXt-101 32x4d +1.9 / +3.7 %, SE-ResNeXt-101 32x4d +6.8 / +11.5 %, against
# conv_half's -12.1 / -21.8, -2.9 / -9.0, -6.0 / -16.0 % (notes-conv-call.md section 7 in
# bench/results/gpu-2026-11-27d-h200). TF32 has none: fitted the same way its ResNeXt 32x4d
# forwards come out 18-26 % fast (NCHW training's 1x1 GEMM kernels, a family no queued row
# times at their widths), outside the 10-15 % the fit had to meet. H100 SXM takes the
# H200's, as conv_half (same GH100 chip, 132 SMs, 1980 MHz). Grouped convolutions keep
# their measured times (grouped_conv.h); a calibration file's convolution value of the math
# replaces these (calib.c).
_TILES_HALF = {"tile_m": 64, "tile_n": 128, "fwd": 0.686, "bwd": 0.701, "fwd_us": 2,
               "bwd_us": 14}
CONV_TILES = {
    "H100-SXM5-80GB": {"half": _TILES_HALF},
    "H200-SXM-141GB": {"half": _TILES_HALF},
}


def conv_tiles_lines(gpu):
    """The `conv_tiles` map of one GPU (none where CONV_TILES has no entry)."""
    tiles = CONV_TILES.get(gpu)
    if not tiles:
        return []
    maths = []
    for math in ("fp32", "tf32", "half"):
        if math in tiles:
            t = tiles[math]
            check(0 < t["fwd"] <= 1 and 0 < t["bwd"] <= 1, "%s: conv_tiles %s" % (gpu, math))
            maths.append("%s: {tile_m: %d, tile_n: %d, fwd: %.3f, bwd: %.3f, fwd_us: %g, "
                         "bwd_us: %g}" % (math, t["tile_m"], t["tile_n"], t["fwd"], t["bwd"],
                                          t["fwd_us"], t["bwd_us"]))
    return ["    # conv_tiles: a dense convolution by its implicit GEMM's tiles "
            "(tools/gen_gpus.py CONV_TILES)", "    conv_tiles: {%s}" % ", ".join(maths)]


def check(cond, msg):
    if not cond:
        raise GenError(msg)


def read_csv(data, name):
    path = os.path.join(data, name)
    try:
        with open(path, newline="", encoding="utf-8") as f:
            return list(csv.DictReader(f))
    except OSError as e:
        raise GenError("cannot read %s: %s" % (path, e.strerror))


def num(s, what, gpu):
    s = s.strip()
    check(re.fullmatch(r"\d+(\.\d+)?", s) is not None, "%s: %s %r is not a number" % (gpu, what, s))
    return s


def short_source(s):
    """The source column as one line: its leading clauses, up to 140 characters."""
    parts = [p.strip() for p in re.split(r"(?:;|\.)\s+", " ".join(s.split())) if p.strip()]
    out = parts[0]
    for p in parts[1:]:
        if len(out) + 2 + len(p) > 140:
            break
        out += "; " + p
    return out.replace("\\", "\\\\").replace('"', '\\"')


# Where the values of the tables below come from (cited by key in each record).
DS = {
    "pciids": "https://pci-ids.ucw.cz/read/PC/10de (the PCI ID Repository, vendor 10de)",
    "devid": "https://github.com/NVIDIA/gpu-admin-tools gpu/devid_names.py, devid_chips.py",
    "v100": "https://images.nvidia.com/content/technologies/volta/pdf/volta-v100-datasheet-update-us-1165301-r5.pdf",
    "volta_wp": "https://images.nvidia.com/content/volta-architecture/pdf/volta-architecture-whitepaper.pdf",
    "a100": "https://www.nvidia.com/content/dam/en-zz/Solutions/Data-Center/a100/pdf/nvidia-a100-datasheet-us-nvidia-1758950-r4-web.pdf",
    "ampere_wp": "https://images.nvidia.com/aem-dam/en-zz/Solutions/data-center/nvidia-ampere-architecture-whitepaper.pdf",
    "h100": "https://resources.nvidia.com/en-us-tensor-core/nvidia-tensor-core-gpu-datasheet",
    "hopper_wp": "https://resources.nvidia.com/en-us-tensor-core/gtc22-whitepaper-hopper",
    "h200": "https://nvdam.widen.net/s/nb5zzzsjdf/hpc-datasheet-sc23-h200-datasheet-3002446",
    "gb200": "https://www.nvidia.com/en-us/data-center/gb200-nvl72/",
    "l4": "https://resources.nvidia.com/en-us-data-center-overview/l4-gpu-datasheet",
    "l40s": "https://resources.nvidia.com/en-us-l40s/l40s-datasheet-28413",
    "a10": "https://www.nvidia.com/content/dam/en-zz/Solutions/Data-Center/a10/pdf/datasheet-new/nvidia-a10-datasheet.pdf",
    "a40": "https://images.nvidia.com/content/Solutions/data-center/a40/nvidia-a40-datasheet.pdf",
    "ga102_wp": "https://www.nvidia.com/content/PDF/nvidia-ampere-ga-102-gpu-architecture-whitepaper-v2.pdf",
    "ada_wp": "https://images.nvidia.com/aem-dam/Solutions/geforce/ada/nvidia-ada-gpu-architecture.pdf",
    "rtxbw_wp": "https://images.nvidia.com/aem-dam/Solutions/geforce/blackwell/nvidia-rtx-blackwell-gpu-architecture.pdf",
    "turing_wp": "https://images.nvidia.com/aem-dam/en-zz/Solutions/design-visualization/technologies/turing-architecture/NVIDIA-Turing-Architecture-Whitepaper.pdf",
}

# Facts `ddpsim topo import` needs, for the GPUs of the CSV: boost clock
# (MHz), NVLink generation and link count (0: none), PCI device ids (hex,
# vendor 0x10de), nvidia-smi's product names. Sources: clocks from the
# architecture whitepapers (V100 SXM2 1530: volta_wp; A100 1410: ampere_wp;
# H100/H200 SXM 1980: hopper_wp); links: the same (6 x NVLink2, 12 x NVLink3,
# 18 x NVLink4); device ids: pciids; names: as nvidia-smi prints them.
CSV_FACTS = {
    "V100-SXM2-16GB": dict(boost_mhz=1530, nvlink_gen=2, nvlink_links=6, pci_ids=["0x1db1"],
                           smi_names=["Tesla V100-SXM2-16GB"]),
    "V100-SXM2-32GB": dict(boost_mhz=1530, nvlink_gen=2, nvlink_links=6, pci_ids=["0x1db5"],
                           smi_names=["Tesla V100-SXM2-32GB"]),
    "A100-SXM4-40GB": dict(boost_mhz=1410, nvlink_gen=3, nvlink_links=12, pci_ids=["0x20b0"],
                           smi_names=["NVIDIA A100-SXM4-40GB", "A100-SXM4-40GB"]),
    "A100-SXM4-80GB": dict(boost_mhz=1410, nvlink_gen=3, nvlink_links=12, pci_ids=["0x20b2"],
                           smi_names=["NVIDIA A100-SXM4-80GB", "A100-SXM4-80GB"]),
    "H100-SXM5-80GB": dict(boost_mhz=1980, nvlink_gen=4, nvlink_links=18, pci_ids=["0x2330"],
                           smi_names=["NVIDIA H100 80GB HBM3", "NVIDIA H100-SXM5-80GB"]),
    "H200-SXM-141GB": dict(boost_mhz=1980, nvlink_gen=4, nvlink_links=18, pci_ids=["0x2335"],
                           smi_names=["NVIDIA H200"]),
}

# The GPUs the CSV lacks. Rates in TFLOPS, dense (the datasheets' sparse
# figures halved); fp16/bf16 are tensor rates with FP32 accumulate, what
# PyTorch's autocast matmuls use (GeForce cards run them at half their FP16-
# accumulate rate; the whitepapers list both). mem: the marketed GB (MEM_MIB), mem_bw in
# GB/s, nvlink_bw per direction over all links (datasheets quote both
# directions together: halved), pcie: generation of the x16 host link.
# Each record's `src` names the entries of DS its values come from; `cc`
# is its CUDA compute capability (CC_SOURCE).
EXTRA_GPUS = [
    dict(name="V100-PCIE-16GB", arch="Volta", cc="7.0", sms=80, boost_mhz=1380, fp32=14, fp16=112,
         mem=16, mem_bw=900, nvlink_gen=0, pcie=3, pci_ids=["0x1db4"],
         smi_names=["Tesla V100-PCIE-16GB"], src=["v100", "volta_wp", "pciids"]),
    dict(name="V100-PCIE-32GB", arch="Volta", cc="7.0", sms=80, boost_mhz=1380, fp32=14, fp16=112,
         mem=32, mem_bw=900, nvlink_gen=0, pcie=3, pci_ids=["0x1db6"],
         smi_names=["Tesla V100-PCIE-32GB"], src=["v100", "volta_wp", "pciids"]),
    # NVLink bridge joins two A100 PCIe cards: 600 GB/s bidirectional, 12 links.
    dict(name="A100-PCIE-40GB", arch="Ampere", cc="8.0", sms=108, boost_mhz=1410, fp32=19.5, tf32=156,
         fp16=312, bf16=312, mem=40, mem_bw=1555, nvlink_gen=3, nvlink_links=12, nvlink_bw=300,
         pcie=4, pci_ids=["0x20f1"], smi_names=["NVIDIA A100-PCIE-40GB", "A100-PCIE-40GB"],
         src=["a100", "ampere_wp", "pciids"]),
    dict(name="A100-PCIE-80GB", arch="Ampere", cc="8.0", sms=108, boost_mhz=1410, fp32=19.5, tf32=156,
         fp16=312, bf16=312, mem=80, mem_bw=1935, nvlink_gen=3, nvlink_links=12, nvlink_bw=300,
         pcie=4, pci_ids=["0x20b5"], smi_names=["NVIDIA A100 80GB PCIe"],
         src=["a100", "ampere_wp", "pciids"]),
    # H100 PCIe: 51 FP32, 756 TF32 / 1,513 FP16 and BF16 with sparsity;
    # NVLink bridge 600 GB/s bidirectional (12 NVLink4 links).
    dict(name="H100-PCIE-80GB", arch="Hopper", cc="9.0", sms=114, boost_mhz=1755, fp32=51, tf32=378,
         fp16=756, bf16=756, mem=80, mem_bw=2000, nvlink_gen=4, nvlink_links=12, nvlink_bw=300,
         pcie=5, pci_ids=["0x2331"], smi_names=["NVIDIA H100 PCIe"],
         src=["h100", "hopper_wp", "pciids"]),
    # HGX B200, per GPU (the "Individual Blackwell GPU Specifications" table of
    # the GB200 NVL72 page, HGX B200 column): 75 TFLOPS FP32, 2.2 PFLOPS TF32
    # and 4.5 PFLOPS FP16/BF16 with sparsity, 180 GB HBM3e at 7.7 TB/s, NVLink5
    # 1.8 TB/s (18 links). SM count and clock are not in the datasheet: 148
    # SMs (2 dies x 74) as CUDA's device query reports; no clock given.
    dict(name="B200-SXM-180GB", arch="Blackwell", cc="10.0", sms=148, fp32=75, tf32=1100, fp16=2250,
         bf16=2250, mem=180, mem_bw=7700, nvlink_gen=5, nvlink_links=18, nvlink_bw=900, pcie=5,
         pci_ids=["0x2901"], smi_names=["NVIDIA B200"], src=["gb200", "devid", "pciids"]),
    # GB200, per GPU (same table, GB200 NVL72 column): 80 TFLOPS FP32, 2.5
    # PFLOPS TF32 and 5 PFLOPS FP16/BF16 with sparsity, 186 GB HBM3e at 8 TB/s,
    # NVLink5 1.8 TB/s. The GPU's host link is NVLink-C2C to
    # Grace; pcie is its PCIe Gen5 for NICs.
    dict(name="GB200-186GB", arch="Blackwell", cc="10.0", sms=148, fp32=80, tf32=1250, fp16=2500,
         bf16=2500, mem=186, mem_bw=8000, nvlink_gen=5, nvlink_links=18, nvlink_bw=900, pcie=5,
         pci_ids=["0x2941"], smi_names=["NVIDIA GB200"], src=["gb200", "devid", "pciids"]),
    # L4: 30.3 FP32, 120 TF32 / 242 FP16 and BF16 with sparsity, 24 GB GDDR6 at 300 GB/s.
    dict(name="L4-24GB", arch="Ada", cc="8.9", sms=58, boost_mhz=2040, fp32=30.3, tf32=60, fp16=121,
         bf16=121, mem=24, mem_bw=300, nvlink_gen=0, pcie=4, pci_ids=["0x27b8"],
         smi_names=["NVIDIA L4"], src=["l4", "ada_wp", "pciids"]),
    # L40S: 91.6 FP32, 366 TF32 / 733 FP16 and BF16 with sparsity, 48 GB GDDR6 at 864 GB/s.
    dict(name="L40S-48GB", arch="Ada", cc="8.9", sms=142, boost_mhz=2520, fp32=91.6, tf32=183,
         fp16=362.05, bf16=362.05, mem=48, mem_bw=864, nvlink_gen=0, pcie=4,
         pci_ids=["0x26b9"], smi_names=["NVIDIA L40S"], src=["l40s", "ada_wp", "pciids"]),
    # A10: 31.2 FP32, 125 TF32 / 250 FP16 and BF16 with sparsity, 24 GB GDDR6 at 600 GB/s.
    dict(name="A10-24GB", arch="Ampere", cc="8.6", sms=72, boost_mhz=1695, fp32=31.2, tf32=62.5,
         fp16=125, bf16=125, mem=24, mem_bw=600, nvlink_gen=0, pcie=4, pci_ids=["0x2236"],
         smi_names=["NVIDIA A10"], src=["a10", "ga102_wp", "pciids"]),
    # A40: 37.4 FP32, 149.6 TF32 / 299.4 FP16 and BF16 with sparsity, 48 GB
    # GDDR6 at 696 GB/s; NVLink bridge 112.5 GB/s bidirectional (4 links).
    dict(name="A40-48GB", arch="Ampere", cc="8.6", sms=84, boost_mhz=1740, fp32=37.4, tf32=74.8,
         fp16=149.7, bf16=149.7, mem=48, mem_bw=696, nvlink_gen=3, nvlink_links=4,
         nvlink_bw=56.25, pcie=4, pci_ids=["0x2235"], smi_names=["NVIDIA A40"],
         src=["a40", "ga102_wp", "pciids"]),
    # RTX 3090 (GA102 whitepaper, appendix table): 35.6 FP32; FP16 tensor with
    # FP32 accumulate 71 (142 with FP16 accumulate); TF32 35.6; 24 GB GDDR6X at
    # 936 GB/s; NVLink bridge 112.5 GB/s bidirectional (4 links).
    dict(name="RTX3090-24GB", arch="Ampere", cc="8.6", sms=82, boost_mhz=1695, fp32=35.6, tf32=35.6,
         fp16=71, bf16=71, mem=24, mem_bw=936, nvlink_gen=3, nvlink_links=4, nvlink_bw=56.25,
         pcie=4, pci_ids=["0x2204"], smi_names=["NVIDIA GeForce RTX 3090"],
         src=["ga102_wp", "pciids"]),
    # RTX 4090 (Ada whitepaper, appendix table): 82.6 FP32; FP16/BF16 tensor
    # with FP32 accumulate 165.2; TF32 82.6; 24 GB GDDR6X at 1008 GB/s; no NVLink.
    dict(name="RTX4090-24GB", arch="Ada", cc="8.9", sms=128, boost_mhz=2520, fp32=82.6, tf32=82.6,
         fp16=165.2, bf16=165.2, mem=24, mem_bw=1008, nvlink_gen=0, pcie=4,
         pci_ids=["0x2684"], smi_names=["NVIDIA GeForce RTX 4090"], src=["ada_wp", "pciids"]),
    # RTX 5090 (RTX Blackwell whitepaper, appendix table): 104.8 FP32; FP16/BF16
    # tensor with FP32 accumulate 209.5 (838 with FP16 accumulate and
    # sparsity); TF32 104.8; 32 GB GDDR7 at 1792 GB/s; PCIe Gen5; no NVLink.
    dict(name="RTX5090-32GB", arch="Blackwell", cc="12.0", sms=170, boost_mhz=2407, fp32=104.8,
         tf32=104.8, fp16=209.5, bf16=209.5, mem=32, mem_bw=1792, nvlink_gen=0, pcie=5,
         pci_ids=["0x2b85"], smi_names=["NVIDIA GeForce RTX 5090"],
         src=["rtxbw_wp", "devid", "pciids"]),
    # RTX 2080 Ti (Turing whitepaper, appendix table, reference clock 1545):
    # 13.4 FP32; FP16 tensor with FP32 accumulate 53.8 (107.6 with FP16
    # accumulate); no TF32/BF16; 11 GB GDDR6 at 616 GB/s; NVLink2 bridge 100
    # GB/s bidirectional (2 links).
    dict(name="RTX2080Ti-11GB", arch="Turing", cc="7.5", sms=68, boost_mhz=1545, fp32=13.4, fp16=53.8,
         mem=11, mem_bw=616, nvlink_gen=2, nvlink_links=2, nvlink_bw=50, pcie=3,
         pci_ids=["0x1e04", "0x1e07"], smi_names=["NVIDIA GeForce RTX 2080 Ti", "GeForce RTX 2080 Ti"],
         src=["turing_wp", "pciids"]),
]


# Memory capacity, gpus.yaml `mem`: what the device has, as nvidia-smi reports it
# (`Memory-Usage` total or `nvidia-smi -q`'s FB Memory Usage Total, in MiB). ddpsim
# compares a run's peak allocation, counted in bytes and printed in GiB, with it: the
# datasheets' "80 GB" read as decimal GB (80e9 B = 74.5 GiB) called an A100 full 5.5 GiB
# early. Recent drivers' totals (R525 and later) include the few hundred MiB the driver
# reserves (the H200's `nvidia-smi -q`: Total 143771, Reserved 616 MiB); older drivers
# left it out (V100-SXM2-16GB: 16160 MiB under R440, 4paradigm/k8s-vgpu-scheduler
# issue 7), so one era is used throughout. What a process can allocate is a little less
# again (the CUDA context), not modelled. name: (MiB, source)
MEM_MIB = {
    "V100-SXM2-16GB": (16384, "nvidia-smi 570.211.01, Tesla V100-SXM2-16GB: 16384MiB "
                              "(https://github.com/1CatAI/1Cat-vLLM/issues/85)"),
    "V100-SXM2-32GB": (32768, "nvidia-smi 525.105.17, Tesla V100-SXM2 (name cut; 32 GB): 32768MiB "
                              "(https://github.com/Wan-Video/Wan2.1/issues/5)"),
    "A100-SXM4-40GB": (40960, "nvidia-smi 580.126.09, NVIDIA A100-SXM4-40GB: 40960MiB "
                              "(https://github.com/bottlerocket-os/bottlerocket-core-kit/pull/834)"),
    "A100-SXM4-80GB": (81920, "nvidia-smi (NVML), A100 80GB: 81,920 MiB; the form factor not "
                              "named (https://thundergolfer.com/blog/nvidia-gpu-memory-capacity)"),
    "H100-SXM5-80GB": (81559, "nvidia-smi 580.159.04, NVIDIA H100 80GB HBM3: 81559MiB, this "
                              "project's bench/results/gpu-2026-11-23-h100/nvidia-smi.txt"),
    "H200-SXM-141GB": (143771, "nvidia-smi -q 580.159.04, NVIDIA H200: FB Memory Usage Total 143771 MiB, this "
                               "project's bench/results/gpu-2026-11-26d-h200/nvidia-smi-q.log"),
    "A10-24GB": (23028, "nvidia-smi (NVML), A10: 23,028 MiB "
                        "(https://thundergolfer.com/blog/nvidia-gpu-memory-capacity)"),
    "L40S-48GB": (46068, "nvidia-smi (NVML), L40S: 46,068 MiB "
                         "(https://thundergolfer.com/blog/nvidia-gpu-memory-capacity)"),
    "RTX4090-24GB": (24564, "nvidia-smi 535.54.03, NVIDIA GeForce RTX 4090: 24564MiB "
                            "(https://github.com/vllm-project/vllm/issues/7553)"),
    "L4-24GB": (23034, "nvidia-smi (NVML), L4: 23,034 MiB "
                       "(https://thundergolfer.com/blog/nvidia-gpu-memory-capacity)"),
}
# A GPU without a published nvidia-smi total: its marketed number read as GiB, the memory
# its DRAM chips hold (power-of-two dies: A100 80GB reports exactly 81920 MiB, V100 16 GB
# 16384), an upper bound where parts are fused off (H100 SXM 80GB: 81559 MiB, 0.4 % less)
# or ECC takes its share (GDDR6 with ECC on, as A10, L4 and L40S ship: 6 % less).
MEM_MARKETED = ("no nvidia-smi total found (searched 2026-11-27): the marketed %d GB read as "
                "GiB, what its memory chips hold; an upper bound where part is fused off or "
                "ECC takes its share")


def mem_lines(name, marketed_gb):
    """gpus.yaml's mem of one GPU in MiB, with the comment saying where it comes from."""
    if name in MEM_MIB:
        mib, src = MEM_MIB[name]
        # the nvidia-smi total is within 7 % under the marketed figure read as GiB (the
        # H100's 0.4 %, the GDDR6 cards' with ECC 6 %): a guard against a mistyped entry
        check(0.93 <= mib / (marketed_gb * 1024.0) <= 1.0, "%s: MEM_MIB %d" % (name, mib))
    else:
        mib, src = int(marketed_gb) * 1024, MEM_MARKETED % int(marketed_gb)
    return ["    # mem: %s" % src, "    mem: %dMiB" % mib]


# The CUDA compute capability of each GPU: the CSV's compute_capability
# column, and for EXTRA_GPUS their `cc`, from NVIDIA's list of CUDA GPUs and
# their compute capabilities and the architecture whitepapers of DS (GA100
# 8.0, GA102 8.6, AD10x 8.9, GH100 9.0, GB100/GB200 10.0, GB20x 12.0, TU102
# 7.5, GV100 7.0). The simulator derives per-SM limits from it
# (sim/net/gpu_table.h ds_gpu_max_threads_per_sm: Reduce.cuh's target grid).
CC_SOURCE = "https://developer.nvidia.com/cuda-gpus"
# The compute capabilities each `arch` family owns, as 10 x major + minor
# (lowest, highest): the rule is stated once, with its source, in
# sim/net/gpu_table.c cc_families (the simulator refuses an entry outside
# it); this copy only lets the generator fail before the simulator would.
FAMILY_CC = {"Volta": (70, 74), "Turing": (75, 79), "Ampere": (80, 88), "Ada": (89, 89),
             "Hopper": (90, 99), "Blackwell": (100, 129)}


def cc_line(name, arch, cc):
    check(re.fullmatch(r"[1-9]\d?\.\d", cc) is not None, "%s: compute capability %r" % (name, cc))
    lo, hi = FAMILY_CC.get(arch, (0, 0))
    major, minor = cc.split(".")
    check(lo <= 10 * int(major) + int(minor) <= hi,
          "%s: compute capability %s is not %s's" % (name, cc, arch))
    return '    compute_capability: "%s"' % cc


def facts_lines(f):
    """The import facts of one GPU as YAML lines (boost_mhz only when published)."""
    out = []
    if f.get("boost_mhz"):
        out.append("    boost_mhz: %d" % f["boost_mhz"])
    out.append("    nvlink_gen: %d" % f["nvlink_gen"])
    if f["nvlink_gen"]:
        out.append("    nvlink_links: %d" % f["nvlink_links"])
    check(all(re.fullmatch(r"0x[0-9a-f]{4}", p) for p in f["pci_ids"]), "pci_ids %r" % f["pci_ids"])
    out.append("    pci_ids: [%s]" % ", ".join('"%s"' % p for p in f["pci_ids"]))
    out.append("    smi_names: [%s]" % ", ".join('"%s"' % n for n in f["smi_names"]))
    return out


def extra_entry(g):
    check(g["pcie"] in PCIE_X16_GBPS, "%s: pcie gen" % g["name"])
    check((g["nvlink_gen"] == 0) == ("nvlink_bw" not in g), "%s: nvlink" % g["name"])
    out = ["  - name: %s" % g["name"], "    arch: %s" % g["arch"],
           cc_line(g["name"], g["arch"], g["cc"]), "    sms: %d" % g["sms"],
           "    fp32: %gTFLOPS" % g["fp32"]]
    for key in ("tf32", "fp16", "bf16"):
        if key in g:
            out.append("    %s: %gTFLOPS" % (key, g[key]))
    out += mem_lines(g["name"], g["mem"]) + ["    mem_bw: %gGBps" % g["mem_bw"]]
    if g["nvlink_gen"]:
        out.append("    nvlink_bw: %gGBps" % g["nvlink_bw"])
    out.append("    pcie_bw: %dGBps" % PCIE_X16_GBPS[g["pcie"]])
    out += facts_lines(g)
    out.append('    source: "%s"' % "; ".join(DS[k] for k in g["src"]))
    out += efficiency_lines(g["name"], "tf32" in g)
    out += conv_tiles_lines(g["name"])
    return out


def gpus(data):
    rows = read_csv(data, "gpu_specs.csv")
    for gpu in EFFICIENCY:
        check(any(r["gpu"] == gpu for r in rows) or any(g["name"] == gpu for g in EXTRA_GPUS),
              "EFFICIENCY names %r, not in gpu_specs.csv or EXTRA_GPUS" % gpu)
    for gpu in PROXY:
        check(gpu in EFFICIENCY, "PROXY names %r, not in EFFICIENCY" % gpu)
    out = [
        "# GPU table. Generated by tools/gen_gpus.py from %s/gpu_specs.csv (NVIDIA datasheets "
        "via the pages named there); do not edit by hand." % SRC,
        "# fp32: vector FP32; tf32/fp16/bf16: tensor cores, dense (no sparsity), key omitted "
        "where the GPU has none. mem: memory capacity as nvidia-smi reports it (MiB; MEM_MIB in "
        "tools/gen_gpus.py), else the marketed GB read as GiB; mem_bw: HBM bandwidth.",
        "# nvlink_bw: NVLink per direction, all links together; pcie_bw: PCIe x16 per direction "
        "(Gen3 16, Gen4 32, Gen5 64 GBps).",
        "# boost_mhz: boost clock; nvlink_gen, nvlink_links: NVLink generation and link count "
        "(0: none); pci_ids, smi_names: how `ddpsim topo import` recognises the GPU.",
        "# compute_capability: CUDA compute capability (%s and the architecture whitepapers), "
        "which sets per-SM limits such as resident threads per SM." % CC_SOURCE,
        "# GPUs after H200 (and the import facts of all) are tools/gen_gpus.py's own tables; "
        "source: the datasheets and whitepapers the values come from.",
        "schema_version: 1",
        "gpus:",
    ]
    for r in rows:
        gpu = r["gpu"]
        m = re.fullmatch(r"(.*-)(\d+)/(\d+)GB", gpu)
        if m:
            variants = [(m.group(1) + m.group(k) + "GB", m.group(k)) for k in (2, 3)]
            mm = re.match(r"(\d+) or (\d+) GB", r["memory"])
            check(mm is not None and (mm.group(1), mm.group(2)) == (m.group(2), m.group(3)),
                  "%s: memory column %r" % (gpu, r["memory"]))
        else:
            mm = re.match(r"(\d+) GB", r["memory"])
            check(mm is not None, "%s: memory column %r" % (gpu, r["memory"]))
            variants = [(gpu, mm.group(1))]
        nv = r["nvlink"]
        m1 = re.search(r"(\d+(?:\.\d+)?) (?:GB/s )?per direction", nv)
        bidir = [float(x) for x in re.findall(r"(\d+(?:\.\d+)?) GB/s bidir", nv)]
        # total bidirectional = the largest "GB/s bidir" figure (V100 also quotes per link)
        if m1:
            nvlink = m1.group(1)
            check(not bidir or max(bidir) == 2 * float(nvlink), "%s: nvlink" % gpu)
        elif bidir:
            nvlink = "%g" % (max(bidir) / 2)
        else:
            check(nv.strip().lower() in ("", "n/a", "none"), "%s: nvlink %r" % (gpu, nv))
            nvlink = None
        mp = re.search(r"Gen(\d) x16", r["pcie"])
        check(mp is not None and int(mp.group(1)) in PCIE_X16_GBPS, "%s: pcie %r" % (gpu, r["pcie"]))
        pcie = PCIE_X16_GBPS[int(mp.group(1))]
        for pat, mult in ((r"~?(\d+) GB/s/dir", 1), (r"(\d+)\+\d+ GB/s", 1), (r"(\d+) GB/s bidir", 0.5)):
            mq = re.search(pat, r["pcie"])
            if mq:  # a figure quoted in the column must agree with the generation
                check(float(mq.group(1)) * mult == pcie, "%s: pcie %r" % (gpu, r["pcie"]))
        for name, mem in variants:
            out += [
                "  - name: %s" % name,
                "    arch: %s" % r["arch"],
                cc_line(name, r["arch"], r["compute_capability"].strip()),
                "    sms: %d" % int(r["SMs"]),
                "    fp32: %sTFLOPS" % num(r["fp32_TFLOPS_vector"], "fp32", gpu),
            ]
            for key, col in (("tf32", "tf32_tensor_TFLOPS_dense"), ("fp16", "fp16_tensor_TFLOPS_dense"),
                             ("bf16", "bf16_tensor_TFLOPS_dense")):
                v = r[col].strip()
                if v.lower().startswith("n/a"):
                    check(key != "fp16", "%s: fp16 is required" % gpu)
                    continue
                out.append("    %s: %sTFLOPS" % (key, num(v, key, gpu)))
            out += mem_lines(name, int(mem)) + [
                "    mem_bw: %sGBps" % num(r["hbm_bw_GBps"], "hbm_bw_GBps", gpu),
            ]
            if nvlink is not None:
                out.append("    nvlink_bw: %sGBps" % nvlink)
            out.append("    pcie_bw: %dGBps" % pcie)
            check(name in CSV_FACTS, "%s: no entry in CSV_FACTS" % name)
            out += facts_lines(CSV_FACTS[name])
            out.append('    source: "%s"' % short_source(r["source_and_notes"]))
            out += efficiency_lines(gpu, not r["tf32_tensor_TFLOPS_dense"].strip().lower()
                                    .startswith("n/a"))
            out += conv_tiles_lines(gpu)
    for g in EXTRA_GPUS:
        out += extra_entry(g)
    return "\n".join(out) + "\n"


OUTPUTS = (("topologies/gpus.yaml", gpus),)


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", default=DEFAULT_DATA,
                    help="directory of the reference CSVs (default: %(default)s)")
    ap.add_argument("--check", action="store_true",
                    help="write nothing; exit 1 if a generated file in the tree is out of date")
    args = ap.parse_args(argv)
    try:
        texts = [(rel, fn(args.data)) for rel, fn in OUTPUTS]
    except (GenError, KeyError, ValueError) as e:
        print("gen_gpus: error: %s" % e, file=sys.stderr)
        return 2
    stale = 0
    for rel, text in texts:
        path = os.path.join(REPO, rel)
        try:
            with open(path, encoding="utf-8", newline="") as f:
                old = f.read()
        except OSError:
            old = None
        if args.check:
            if old != text:
                print("gen_gpus: %s is %s; run python3 tools/gen_gpus.py"
                      % (rel, "missing" if old is None else "out of date"), file=sys.stderr)
                stale = 1
        elif old != text:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w", encoding="utf-8", newline="\n") as f:
                f.write(text)
            print("wrote %s" % rel)
    if args.check and not stale:
        print("gen_gpus: generated files are up to date")
    return stale


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
