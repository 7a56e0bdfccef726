#!/usr/bin/env python3
"""Time single kernels the way PyTorch's training runs them, one shape at a time.

The model files charge a grouped convolution, an elementwise kernel or a pool
at a rate per class. The whole-model traces (bench/torch_measure.py) say how
far a class is off, not why; this script times each kind of kernel alone,
over the shapes the models have, so a rate can be read per shape (issue #12):

  conv     ResNeXt's grouped 3x3 convolutions (32 groups, 4 to 64 channels
           per group) and the dense 3x3 of the same channels, as aten's
           convolution forward and convolution_backward's two halves (input
           gradient, weight gradient), in fp32 with cuDNN's default TF32,
           fp32 without TF32, fp16 NCHW and fp16 channels-last;
  memory   ReLU in place and its backward, the residual add, max-pool 3x3/2
           and its backward, batch norm's training forward and backward, and
           a copy, at ResNet-50's activation sizes and over a sweep of sizes;
  host     the host's time per dispatched aten op (a CUDA add on one
           element, the GPU idle behind it) and per autograd node;
  gemm     the transformers' linear GEMMs at their real shapes (tokens x
           in x out, forward and both gradients), FP32 and TF32, beside the
           square GEMM of equal FLOPs that ddpreal calibrate times;
  bmm      the attention core's batched products (head dim 64) of BERT-base,
           GPT-2 and BERT-base-squad, forward and backward, FP32, TF32, fp16
           and bf16;
  rn50conv ResNet-50's own convolutions (1x1s and the stem included; the
           `elements` column says how often the model runs each), forward and
           both gradients, TF32 NCHW and channels-last, fp16 channels-last,
           each call on the next of `sets` copies of its tensors (a working
           set of twice the L2: cold, as in training); the calls are queued behind
           a spin kernel (GPU time, however short), with each call's launches, their
           names and device time, its NCHW<->NHWC transposes apart (`--modes`
           picks the modes); `--rn50-timing plain` times them back to back as on
           2026-11-27, where a call shorter than the host's dispatch (~30 us on the
           lent H200s) timed the host (bench/results/gpu-2026-11-27-h200/notes-rn50conv.md);
  convwidth
           the same timing of dense convolutions at one GEMM M (batch x 28 x 28;
           --width-side another side):
           1x1s over every (Cin, Cout) of 64-2048, 3x3s with Cin = Cout 64-1024
           (41 shapes; `elements` 1): whether the rate follows the GEMM's narrow
           side (bench/conv_call_fit.py --width);
  elementwise
           PyTorch's elementwise kernel paths at ResNet/ResNeXt stage outputs
           (batch 32 and 128, fp32/fp16/bf16, NCHW and channels-last): same-
           layout add/mul/add_, the SE gate's broadcast (N, C, 1, 1) operand
           (mul, addcmul, global-average-pool backward's expand / (H*W)),
           add_ across layouts, and copies of a permuted tensor (the last
           dimension kept innermost, and swapped); each with the kernel that
           ran (torch.profiler):
           vectorized_elementwise_kernel, unrolled_ or plain elementwise_kernel.
  castreduce
           autocast's casts (fp32 <-> fp16/bf16) of the transformers' activations
           (4096 and 8192 tokens x 768, 2304, 3072) and weights, and the bias
           gradients' sum over rows (fp32, fp16, bf16) at the same shapes, each
           with the kernel that ran (sim/train/cast_reduce.h's rates); and the
           attention mask's add (half scores + an fp32 mask broadcast over the
           heads, GPT-2 b8 and BERT-base b32 shapes: the dynamic-casting
           strided kernel).
  layernorm
           layer norm as aten runs it (native_layer_norm and its backward,
           aten/src/ATen/native/cuda/layer_norm_kernel.cu) at BERT-base's,
           BERT-base-squad's and GPT-2's rows of 768 (batch x sequence: 4096,
           9216, 8192) and a sweep of rows (the gamma/beta reduction runs
           ceil(N/32) CTAs, and a partial-sum path above 65536 rows), with fp32,
           fp16 and bf16 inputs and autocast's fp32 layer norm on a bf16
           input: the pass's time, then each kernel's (torch.profiler), so
           ddpsim's per-SM forward rate and per-CTA gamma/beta rate
           (sim/train/norm.c, fitted on one trace) can be checked per kernel.

Each row is the median of `--iters` CUDA-event intervals after `--warmup`
calls (cudnn.benchmark on, as in training), with the FLOPs and the bytes the
kernel must move, so a rate and a bandwidth can be read from it. Rows are
written as they are measured, so a run cut short keeps them. Every row
carries the GPU's SM count, L2 size and SM clocks (what ddpsim's transfers
between GPUs scale by). `--device cpu --quick` is a dry run of every code
path at toy sizes (host timers, the CPU profiler), for checking the script
where there is no GPU.

This file holds what is timed (the shapes, the modes, one generator of rows
per kind) and the command line; how a call is timed and profiled, and the
machine's description each row carries, are bench/kernel_timing.py's.
"""

import argparse
import csv
import os
import itertools
import math
import time

import torch
import torch.nn.functional as F

# The timing and profiling helpers live in kernel_timing.py; every name it
# defines is imported here, the unused ones too, so that scripts and recorded
# commands that use them as gpu_kernels.NAME (conv_wide_queued.py's gk.gpu_info,
# the bmm re-run in results/gpu-2026-11-27-h200/notes-bmm.md) keep working.
from kernel_timing import (  # noqa: F401
    KERNEL_NAME, TRANSPOSE_KERNELS, call_kernels, cpu_model, gpu_info, kernel_short,
    kernel_timing_start, kernel_times, kernels_of, nvidia_smi_clocks, profiled_kernels,
    sm_clock_now, timed, timed_queued)


# ResNeXt's grouped 3x3 layers: (group width, input side, stride) per stage,
# the first block of stages 2-4 striding (torchvision's Bottleneck puts the
# stride on the 3x3). 32x4d: ResNeXt-50 and DeepLearningExamples' ResNeXt-101;
# 32x8d: ResNeXt-101 of PyTorch's DDP benchmark.
def resnext_layers(width_per_group):
    layers, side = [], 56
    for stage in range(4):
        width = 32 * width_per_group * (2 ** stage)
        if stage > 0:
            layers.append((width, side, 2))
            side //= 2
        layers.append((width, side, 1))
    return layers


MODES = {  # name: (dtype, cudnn.allow_tf32, channels_last)
    "fp32-tf32": (torch.float32, True, False),
    "fp32": (torch.float32, False, False),
    "fp16": (torch.float16, True, False),
    "fp16-nhwc": (torch.float16, True, True),
    "fp32-tf32-nhwc": (torch.float32, True, True),
}
CONV_MODES = ["fp32-tf32", "fp32", "fp16", "fp16-nhwc"]  # the ResNeXt tables'
RN50_MODES = ["fp32-tf32", "fp32-tf32-nhwc", "fp16-nhwc"]


def conv_timings(dev, mode, batch, cin, cout, k, side, stride, pad, groups, warmup, iters,
                 cold=False, timer=None):
    """One convolution in `mode` (MODES): the median ms of each pass, the
    forward (aten's convolution) and convolution_backward's two halves
    (input gradient, weight gradient), with the pass's FLOPs and the bytes
    of its input, weight and output, and how many copies of the tensors the
    calls rotated through. cold: enough copies (up to 8) that the working
    set is twice the L2, so each call finds its tensors in HBM as a training
    step does (at batch 32 a ResNet-50 1x1 layer's 13 MB input would stay
    in an H200's 50 MB L2 call after call); else one copy (the ResNeXt
    tables' timing). timer(fn): what each pass's entry is (with the mode's
    TF32 setting still on); default the median ms of `timed`."""
    dtype, tf32, nhwc = MODES[mode]
    torch.backends.cudnn.allow_tf32 = tf32
    fmt = torch.channels_last if nhwc else torch.contiguous_format
    out_side = (side + 2 * pad - k) // stride + 1
    esz = torch.tensor([], dtype=dtype).element_size()
    moved = (batch * cin * side * side + cout * (cin // groups) * k * k +
             2 * batch * cout * out_side * out_side) * esz
    l2 = torch.cuda.get_device_properties(dev).L2_cache_size if dev.type == "cuda" else 0
    sets = min(8, max(1, math.ceil(2 * l2 / moved))) if cold else 1
    tensors = []
    for _ in range(sets):
        x = torch.randn(batch, cin, side, side, device=dev, dtype=dtype)
        x = x.contiguous(memory_format=fmt)
        w = torch.randn(cout, cin // groups, k, k, device=dev, dtype=dtype)
        w = w.contiguous(memory_format=fmt)
        y = F.conv2d(x, w, stride=stride, padding=pad, groups=groups)
        tensors.append((x, w, torch.randn_like(y)))
    rot = itertools.cycle(range(sets))

    def fwd():
        x, w, _ = tensors[next(rot)]
        return F.conv2d(x, w, stride=stride, padding=pad, groups=groups)

    def back(mask):
        def run():
            x, w, gy = tensors[next(rot)]
            return torch.ops.aten.convolution_backward(
                gy, x, w, None, [stride, stride], [pad, pad], [1, 1], False, [0, 0], groups, mask)
        return run
    passes = {"fwd": fwd,
              "dgrad": back([True, False, False]),
              "wgrad": back([False, True, False])}
    x, w, gy = tensors[0]
    flops = 2 * gy.numel() * (cin // groups) * k * k
    bytes_ = (x.numel() + w.numel() + gy.numel()) * x.element_size()
    if timer is None:
        def timer(fn):
            return timed(fn, dev, warmup, iters)
    times = {p: timer(fn) for p, fn in passes.items()}
    torch.backends.cudnn.allow_tf32 = True
    return times, flops, bytes_, sets


def conv_rows(dev, batch, warmup, iters, plan):
    widths = (4, 8) if plan == "full" else (4,)
    modes = CONV_MODES if plan == "full" else ["fp32"]
    for wpg in widths:
        layers = resnext_layers(wpg) if plan == "full" else [(128, 8, 1)]
        for width, side, stride in layers:
            for groups in (32, 1):
                for mode in modes:
                    times, flops, bytes_, _ = conv_timings(dev, mode, batch, width, width, 3,
                                                           side, stride, 1, groups, warmup, iters)
                    for p, ms in times.items():
                        yield dict(kind="conv", name="%dx%dd/%s" % (32, wpg, p), mode=mode,
                                   shape="%dx%dx%dx%d s%d g%d" % (batch, width, side, side,
                                                                 stride, groups),
                                   groups=groups, group_width=width // groups, ms=ms,
                                   flops=flops, bytes=bytes_)


# ResNet-50's activations at batch 32 (channels, side) and the ops that run on
# them: the stem's ReLU and max-pool, and each stage's block output.
RESNET_ACTS = [(64, 112), (64, 56), (256, 56), (128, 28), (512, 28), (1024, 14), (2048, 7)]


# The transformers' linear layers as the traces run them: tokens M (batch x
# sequence) by in-features K to out-features N. BERT-base at batch 32, sequence
# 128 (query/key/value/output 768x768, intermediate 768x3072, output 3072x768);
# GPT-2 small at batch 8, sequence 1024 (c_attn 768x2304, c_proj 768x768,
# c_fc 768x3072, mlp c_proj 3072x768); BERT-base-squad at batch 24, sequence 384.
GEMM_SHAPES = [("bert-base-b32", 4096, k, n) for k, n in ((768, 768), (768, 3072), (3072, 768))] + \
    [("gpt2-b8", 8192, k, n) for k, n in ((768, 2304), (768, 768), (768, 3072), (3072, 768))] + \
    [("bert-base-squad-b24", 9216, k, n) for k, n in ((768, 768), (768, 3072), (3072, 768))]


def gemm_rows(dev, warmup, iters, plan):
    """Each linear's three GEMMs (forward Y = X W^T, input gradient dX = dY W,
    weight gradient dW = dY^T X), as aten.mm runs them, in FP32 (no TF32) and
    TF32, beside the square GEMM of the same FLOPs (edge cbrt(M N K)), the
    shape `ddpreal calibrate` times for a schedule op that carries only its
    FLOPs: whether the models' tall GEMMs run faster than that square (the
    H100/H200 traces ran GPT-2's linears at 48.2 TFLOP/s, the square
    calibration gave 42.3: docs/validation.md)."""
    shapes = GEMM_SHAPES if plan == "full" else [("smoke", 64, 32, 48)]
    for model, m, k, n in shapes:
        for tf32 in (False, True):
            torch.backends.cuda.matmul.allow_tf32 = tf32
            x = torch.randn(m, k, device=dev)
            wt = torch.randn(n, k, device=dev)
            dy = torch.randn(m, n, device=dev)
            edge = max(1, round((m * n * k) ** (1 / 3)))
            sq = torch.randn(edge, edge, device=dev)
            passes = {"fwd": (lambda: torch.mm(x, wt.t()), (m, n, k)),
                      "dgrad": (lambda: torch.mm(dy, wt), (m, k, n)),
                      "wgrad": (lambda: torch.mm(dy.t(), x), (n, k, m)),
                      "square": (lambda: torch.mm(sq, sq), (edge, edge, edge))}
            for name, (fn, (mm, nn, kk)) in passes.items():
                ms = timed(fn, dev, warmup, iters)
                yield dict(kind="gemm", name="%s-%dx%dx%d-%s" % (model, m, k, n, name),
                           mode="tf32" if tf32 else "fp32", shape="%dx%dx%d" % (mm, nn, kk),
                           ms=ms, flops=2 * mm * nn * kk, bytes=4 * (mm * kk + kk * nn + mm * nn))
    torch.backends.cuda.matmul.allow_tf32 = False


# The attention core's batched products (eager attention, head dim 64):
# (model, batch x heads, sequence). BERT-base b32 (12 heads, 128), GPT-2 b8
# (12 heads, 1024), BERT-base-squad b24 (12 heads, 384).
BMM_SHAPES = [("bert-base-b32", 32 * 12, 128), ("gpt2-b8", 8 * 12, 1024),
              ("bert-base-squad-b24", 24 * 12, 384)]
BMM_MODES = {"fp32": (torch.float32, False), "tf32": (torch.float32, True),
             "fp16": (torch.float16, False), "bf16": (torch.bfloat16, False)}


def bmm_rows(dev, warmup, iters, plan, info):
    """The attention core's batched GEMMs as aten.bmm and its autograd node run
    them: forward scores S = Q K^T (s x s x 64) and context O = P V (s x 64 x s),
    backward (BmmBackward0 of each) dP = dO V^T, dV = P^T dO, dQ = dS K and K^T's
    gradient Q^T dS (64 x s x s: autograd differentiates the transposed key, the
    bmm's second operand), in FP32, TF32, fp16 and bf16: the rates gpus.yaml's
    attention_* are set from (bench/bmm_rates.py pools them; matmul's 0.685
    and 0.460 overstated them: the traces ran GPT-2's at 0.58 of the FP32 peak
    and BERT-squad's at 0.16 of TF32's). Each call is queued behind a spin kernel
    (timed_queued): BERT-base b32's products take 6-32 us, less than the host
    needs to dispatch a bmm, and the 2026-11-27 run's plain intervals (`timed`)
    were the host's 31-43 us in every math. kernel_us: the kernels of one call
    alone (torch.profiler; cuBLASLt's workspace memset included)."""
    shapes = BMM_SHAPES if plan == "full" else [("smoke", 4, 32)]
    modes = list(BMM_MODES) if plan == "full" else ["fp32"]
    d = 64
    cuda, _, clock_hz = kernel_timing_start(dev, info)
    for model, bh, sq in shapes:
        for mode in modes:
            dtype, tf32 = BMM_MODES[mode]
            torch.backends.cuda.matmul.allow_tf32 = tf32
            q, k, v, do = (torch.randn(bh, sq, d, device=dev, dtype=dtype) for _ in range(4))
            p = torch.randn(bh, sq, sq, device=dev, dtype=dtype)
            passes = {"qk": (lambda: torch.bmm(q, k.transpose(1, 2)), (sq, sq, d)),
                      "pv": (lambda: torch.bmm(p, v), (sq, d, sq)),
                      "dp": (lambda: torch.bmm(do, v.transpose(1, 2)), (sq, sq, d)),
                      "dv": (lambda: torch.bmm(p.transpose(1, 2), do), (sq, d, sq)),
                      "dq": (lambda: torch.bmm(p, k), (sq, d, sq)),
                      "dk": (lambda: torch.bmm(q.transpose(1, 2), p), (d, sq, sq))}
            el = q.element_size()
            for name, (fn, (mm, nn, kk)) in passes.items():
                ms, ahead = timed_queued(fn, dev, warmup, iters, clock_hz)
                clock = sm_clock_now(dev)
                names, kus = kernels_of(fn, dev)
                short = [kernel_short(kn) for kn in names]
                yield dict(kind="bmm", name="%s-%s" % (model, name), mode=mode,
                           shape="%dx%dx%dx%d" % (bh, mm, nn, kk), ms=ms,
                           flops=2 * bh * mm * nn * kk,
                           bytes=el * bh * (mm * kk + kk * nn + mm * nn),
                           kernel=";".join(kn for kn, _ in short),
                           kernel_args=";".join(a for _, a in short),
                           kernel_us="%.2f" % kus, kernel_full=" ;; ".join(names)[:300],
                           queued_ahead=ahead, sm_clock_mhz=clock)
            del q, k, v, do, p
    torch.backends.cuda.matmul.allow_tf32 = False


def rn50_conv_layers(batch):
    """ResNet-50's convolutions (torchvision's), each distinct (in, out,
    kernel, stride, input side) once with how often the model runs it."""
    import torchvision.models as tvm
    model = tvm.resnet50(weights=None)
    seen, order = {}, []

    def hook(mod, inp, out):
        key = (mod.in_channels, mod.out_channels, mod.kernel_size[0], mod.stride[0],
               mod.padding[0], inp[0].shape[-1])
        if key not in seen:
            order.append(key)
            seen[key] = 0
        seen[key] += 1
    hooks = [m.register_forward_hook(hook) for m in model.modules()
             if isinstance(m, torch.nn.Conv2d)]
    with torch.no_grad():
        model(torch.randn(1, 3, 224, 224))
    for h in hooks:
        h.remove()
    return [(key, seen[key]) for key in order]


RN50_SMOKE_LAYERS = [((8, 8, 1, 1, 0, 8), 3), ((8, 16, 3, 1, 1, 8), 2), ((3, 8, 7, 2, 3, 16), 1)]


# The width sweep (`--only convwidth`): dense convolutions at one GEMM M (batch x 28 x 28
# output positions), 1x1s over every (Cin, Cout) of CONV_WIDTHS and 3x3s with Cin = Cout:
# whether a convolution's rate at equal M follows the implicit GEMM's narrow side,
# min(Cin k^2, Cout), as ResNet-50 against ResNeXt's widths suggests
# (bench/results/gpu-2026-11-27d-h200/notes-conv-call.md section 5). At 28 x 28 (784
# positions) NCHW 1x1s are where ddpsim expects cuDNN's GEMM on NCHW, no transposes
# (compute_conv.c CONV_NCHW_GEMM_MIN_POSITIONS 196).
CONV_WIDTHS = (64, 128, 256, 512, 1024, 2048)
CONV_WIDTH_SIDE = 28
CONV_WIDTH_SMOKE_LAYERS = [((8, 16, 1, 1, 0, 8), 1), ((16, 8, 1, 1, 0, 8), 1),
                           ((8, 8, 3, 1, 1, 8), 1)]


def conv_width_layers(plan, side=CONV_WIDTH_SIDE):
    """(in, out, kernel, stride, padding, input side), 1: the width sweep's shapes at
    `side` x `side` (--width-side: 14 is where ResNet's layer3 1x1s run, the smallest
    output ddpsim expects cuDNN's GEMM on NCHW at)."""
    if plan != "full":
        return CONV_WIDTH_SMOKE_LAYERS
    layers = [((ci, co, 1, 1, 0, side), 1) for ci in CONV_WIDTHS for co in CONV_WIDTHS]
    return layers + [((c, c, 3, 1, 1, side), 1) for c in CONV_WIDTHS[:5]]


def rn50_conv_rows(dev, batch, warmup, iters, plan, info, modes=None, timing="queued",
                   kind="rn50conv", layers=None):
    """ResNet-50's own convolutions at `batch`, 1x1s and the stem included,
    forward and both gradients, in TF32 (NCHW, as fp32 training runs them,
    and channels-last, where cuDNN needs no transposes) and fp16
    channels-last (as the AMP fit row, ResNeXt-101 AMP b128, runs autocast's
    convolutions): what conv_tf32 and conv_half should be for ResNet-50
    (the H200 trace ran its TF32 convolutions at 122.4 TFLOP/s, the 3x3-only
    dense tables at 193-225: bench/results/gpu-2026-11-26d-h200/README.md).
    `elements` is how many times the model runs the shape; `flops` the
    pass's as tools/export_model.py counts it (model_export/flops.py conv_pass_flops: 2 x output
    elements x input channels x kernel area, each gradient alike).

    timing "queued" (the default since 2026-11-27): each pass's calls are
    queued behind a spin kernel (timed_queued), so a call shorter than the
    host's dispatch is timed at its GPU time, and one profiled call gives
    the launches it makes (`n_kernels`: cuDNN's backward may run a kernel,
    a split-K reduction and a memset), their names (`kernel`, with
    launches per call in `kernel_args`), their device time (`kernel_us`)
    and the part that is NCHW<->NHWC transposes (`xpose_us`, `n_xpose`).
    "plain": the 2026-11-27 rows (gpu-2026-11-27-h200/rn50conv-b*.csv):
    calls back to back, no synchronise, none under ~28 us (the host's
    dispatch), no kernel columns.

    `kind` and `layers` (as rn50_conv_layers returns them) time other shapes
    the same way (the width sweep, conv_width_layers)."""
    if layers is None:
        layers = rn50_conv_layers(batch) if plan == "full" else RN50_SMOKE_LAYERS
    modes = modes or (RN50_MODES if plan == "full" else ["fp32-tf32"])
    queued = timing == "queued"
    timer = None
    if queued:
        _, _, clock_hz = kernel_timing_start(dev, info)

        def timer(fn):
            ms, ahead = timed_queued(fn, dev, warmup, iters, clock_hz)
            clock = sm_clock_now(dev)
            n, names, kus, xus, xn = call_kernels(fn, dev)
            short = [(kernel_short(k), c) for k, c in names]
            return dict(ms=ms, queued_ahead=ahead, sm_clock_mhz=clock,
                        n_kernels="%g" % n, kernel=";".join(k for (k, _), _ in short),
                        kernel_args=";".join("%g" % c for _, c in short),
                        kernel_us="%.2f" % kus, xpose_us="%.2f" % xus, n_xpose="%g" % xn,
                        kernel_full=" ;; ".join(k for k, _ in names)[:600])
    for (cin, cout, kk, stride, pad, side), count in layers:
        for mode in modes:
            times, flops, bytes_, sets = conv_timings(dev, mode, batch, cin, cout, kk, side,
                                                      stride, pad, 1, warmup, iters, cold=True,
                                                      timer=timer)
            for name, t in times.items():
                extra = t if queued else dict(ms=t)
                yield dict(extra, kind=kind,
                           name="%dx%dk%ds%d/%s" % (cin, cout, kk, stride, name),
                           mode=mode, shape="%dx%dx%dx%d" % (batch, cin, side, side),
                           groups=1, elements=count, flops=flops, bytes=bytes_,
                           sets=sets, timing=timing)
            if dev.type == "cuda":
                torch.cuda.empty_cache()


def memory_rows(dev, batch, warmup, iters, plan):
    modes = ("fp32", "fp16", "fp16-nhwc") if plan == "full" else ("fp32",)
    acts = RESNET_ACTS if plan == "full" else [(8, 16)]
    for mode in modes:
        dtype, _, nhwc = MODES[mode]
        fmt = torch.channels_last if nhwc else torch.contiguous_format
        for ch, side in acts:
            x = torch.randn(batch, ch, side, side, device=dev, dtype=dtype)
            x = x.contiguous(memory_format=fmt)
            b = torch.randn_like(x)
            g = torch.randn_like(x)
            n = x.numel() * x.element_size()
            bn = torch.nn.BatchNorm2d(ch).to(dev)
            wt, bias = bn.weight.float(), bn.bias.float()
            rm, rv = bn.running_mean.clone(), bn.running_var.clone()
            shape = "%dx%dx%dx%d" % (batch, ch, side, side)

            def bn_fwd():
                return torch.ops.aten.native_batch_norm(x, wt, bias, rm, rv, True, 0.1, 1e-5)
            _, mean, invstd = bn_fwd()

            ops = {
                "relu_": (lambda: x.relu_(), 2 * n),
                "relu_bwd": (lambda: torch.ops.aten.threshold_backward(g, x, 0), 3 * n),
                "add": (lambda: torch.add(x, b), 3 * n),
                "add_": (lambda: x.add_(b), 3 * n),
                "copy": (lambda: b.copy_(x), 2 * n),
                "bn_fwd": (bn_fwd, 3 * n),
                "bn_bwd": (lambda: torch.ops.aten.native_batch_norm_backward(
                    g, x, wt, rm, rv, mean, invstd, True, 1e-5, [True, True, True]), 5 * n),
            }
            if (ch, side) == (64, 112):
                pooled, idx = F.max_pool2d_with_indices(x, 3, 2, 1)
                gp = torch.randn_like(pooled)
                pn = pooled.numel() * pooled.element_size()
                ops["maxpool"] = (lambda: F.max_pool2d(x, 3, 2, 1), n + pn)
                ops["maxpool_bwd"] = (lambda: torch.ops.aten.max_pool2d_with_indices_backward(
                    gp, x, [3, 3], [2, 2], [1, 1], [1, 1], False, idx), n + 2 * pn)
            for name, (fn, moved) in ops.items():
                ms = timed(fn, dev, warmup, iters)
                yield dict(kind="memory", name=name, mode=mode, shape=shape, groups="",
                           group_width="", ms=ms, flops=0, bytes=moved)
            del x, b, g
    # a size sweep: where the elementwise kernels reach the copy bandwidth
    sizes = [2 ** k for k in range(16, 30, 1)] if plan == "full" else [2 ** 16, 2 ** 20]
    for size in sizes:
        x = torch.randn(size // 4, device=dev)
        b = torch.randn_like(x)
        for name, fn, moved in (("sweep_relu_", lambda: x.relu_(), 2 * size),
                                ("sweep_add", lambda: torch.add(x, b), 3 * size),
                                ("sweep_copy", lambda: b.copy_(x), 2 * size)):
            ms = timed(fn, dev, warmup, iters)
            yield dict(kind="memory", name=name, mode="fp32", shape="%d" % (size // 4),
                       groups="", group_width="", ms=ms, flops=0, bytes=moved)
        del x, b


def host_rows(dev, reps, plan):
    """The host's time per dispatched op and per autograd node, the GPU idle
    behind it: min over reps of the mean per call."""
    n = 20000 if plan == "full" else 2000
    x = torch.zeros(1, device=dev)
    out = torch.empty_like(x)

    def per_call(fn, calls):
        best = float("inf")
        for _ in range(reps):
            if dev.type == "cuda":
                torch.cuda.synchronize()
            t0 = time.perf_counter()
            fn(calls)
            if dev.type == "cuda":
                torch.cuda.synchronize()
            best = min(best, (time.perf_counter() - t0) * 1e6 / calls)
        return best

    def adds(k):
        for _ in range(k):
            torch.add(x, x, out=out)

    def adds_alloc(k):
        for _ in range(k):
            torch.add(x, x)

    w = torch.zeros(1, device=dev, requires_grad=True)

    def chain_fwd_bwd(k):  # k ops recorded by autograd, then their k nodes run
        for _ in range(k // 500):
            y = w
            for _ in range(500):
                y = y * 1.0
            y.backward()

    def chain_fwd(k):
        for _ in range(k // 500):
            y = w
            for _ in range(500):
                y = y * 1.0

    rows = [("add_out", per_call(adds, n)), ("add_alloc", per_call(adds_alloc, n)),
            ("mul_graph_fwd", per_call(chain_fwd, n))]
    fb = per_call(chain_fwd_bwd, n)
    rows.append(("mul_graph_fwd_bwd", fb))
    rows.append(("autograd_node", fb - rows[-2][1]))
    for name, us in rows:
        yield dict(kind="host", name=name, mode="", shape="", groups="", group_width="",
                   ms=us / 1e3, flops=0, bytes=0)


# ResNet/ResNeXt stage outputs (channels, side), where the residual adds and
# the SE gates' elementwise kernels run (the last layer of each stage).
STAGE_ACTS = [(256, 56), (512, 28), (1024, 14), (2048, 7)]
EW_DTYPES = {"fp16": torch.float16, "fp32": torch.float32, "bf16": torch.bfloat16}
LAYOUTS = {"nchw": torch.contiguous_format, "nhwc": torch.channels_last}


def layout_of(t):
    if t.is_contiguous():
        return "nchw"
    return "nhwc" if t.is_contiguous(memory_format=torch.channels_last) else "strided"


def ew_ops(shape, dtype, dev):
    """(op, layout, make, activation-sized tensors read or written per call,
    (N, C, 1, 1) ones read) of one shape and dtype; make() builds fresh
    tensors and returns the call on them. The layout is the operands' (for
    gap_bwd the (N, C, 1, 1) gradient's, whose expand has the same strides
    either way); the row's out_layout says what the result came out as."""
    n, c = shape[:2]
    side2 = shape[2] * shape[3]

    def act(fmt):
        return torch.randn(shape, device=dev, dtype=dtype).contiguous(memory_format=fmt)

    def gate(fmt):  # the SE gate's sigmoid output, a 1x1 convolution's layout
        return torch.rand(n, c, 1, 1, device=dev, dtype=dtype).contiguous(memory_format=fmt)

    ops = []
    for lay, fmt in LAYOUTS.items():
        def pair(f, fmt=fmt):
            a, b = act(fmt), act(fmt)
            return lambda: f(a, b)

        def bcast(f, full, fmt=fmt):
            xs, s = [act(fmt) for _ in range(full)], gate(fmt)
            return lambda: f(*xs, s)

        def gap_bwd(fmt=fmt):  # mean((2, 3), keepdim=True)'s backward
            g = gate(fmt)
            return lambda: g.expand(shape) / side2
        ops += [("add", lay, lambda f=pair: f(torch.add), 3, 0),
                ("mul", lay, lambda f=pair: f(torch.mul), 3, 0),
                ("add_", lay, lambda f=pair: f(torch.Tensor.add_), 3, 0),
                ("mul_bcast", lay, lambda f=bcast: f(torch.mul, 1), 2, 1),
                ("addcmul_bcast", lay, lambda f=bcast: f(torch.addcmul, 2), 3, 1),
                ("gap_bwd", lay, gap_bwd, 1, 1)]

    def mixed(dst, src):
        a, b = act(LAYOUTS[dst]), act(LAYOUTS[src])
        return lambda: a.add_(b)
    ops += [("add_mixed", "nhwc+=nchw", lambda: mixed("nhwc", "nchw"), 3, 0),
            ("add_mixed", "nchw+=nhwc", lambda: mixed("nchw", "nhwc"), 3, 0)]

    # copies of a permuted tensor (a transformer's head split and merge: the last
    # dimension stays innermost; a key transpose: it does not), which run the
    # non-vectorised kernel too and ran 1.4-2.4x slower per operand-element than
    # the SE gate's ops in BERT's and GPT-2's H200 traces (sim/train/legacy_ew.h)
    def copy(dims):
        a = act(torch.contiguous_format)
        return lambda: a.permute(*dims).contiguous()
    ops += [("copy_perm", "nchw", lambda: copy((0, 2, 1, 3)), 2, 0),
            ("copy_transpose", "nchw", lambda: copy((0, 1, 3, 2)), 2, 0)]
    return ops


def elementwise_rows(dev, warmup, iters, plan, info):
    batches = (128, 32) if plan == "full" else (1,)
    acts = STAGE_ACTS if plan == "full" else [(c // 8, side) for c, side in STAGE_ACTS]
    cuda, l2, clock_hz = kernel_timing_start(dev, info)
    if cuda:  # and a second of copies, so the clocks are up for the first case
        a, b = torch.empty(2 ** 26, device=dev), torch.empty(2 ** 26, device=dev)
        t0 = time.perf_counter()
        while time.perf_counter() - t0 < 1:
            for _ in range(20):
                b.copy_(a)
            torch.cuda.synchronize()
        del a, b
    for dname, dtype in EW_DTYPES.items():
        for n in batches:
            for c, side in acts:
                shape = (n, c, side, side)
                elems = n * c * side * side
                el = torch.empty((), dtype=dtype).element_size()
                for op, lay, make, per_elem, gate_elems in ew_ops(shape, dtype, dev):
                    moved = (per_elem * elems + gate_elems * n * c) * el
                    # enough copies that the working set is twice the L2: each
                    # call reads from memory, as in training
                    # (and the outputs rotate too: each set keeps its last one)
                    sets = min(32, max(1, math.ceil(2 * l2 / moved)))
                    calls = [make() for _ in range(sets)]
                    kept = [None] * sets
                    rot = itertools.cycle(range(sets))

                    def fn():
                        k = next(rot)
                        kept[k] = calls[k]()
                        return kept[k]
                    out = layout_of(fn())
                    ms, ahead = timed_queued(fn, dev, warmup, iters, clock_hz)
                    clock = sm_clock_now(dev)
                    names, kus = kernels_of(fn, dev)
                    short = [kernel_short(k) for k in names]
                    yield dict(kind="elementwise", name=op, mode=dname, layout=lay,
                               out_layout=out, shape="%dx%dx%dx%d" % shape, groups="",
                               group_width="", elements=elems, ms=ms, flops=0, bytes=moved,
                               kernel=";".join(k for k, _ in short),
                               kernel_args=";".join(a for _, a in short),
                               kernel_us="%.2f" % kus,
                               kernel_gbps="%.1f" % (moved / kus / 1e3) if kus > 0 else "",
                               kernel_full=" ;; ".join(names), queued_ahead=ahead, sets=sets,
                               sm_clock_mhz=clock)
                    del calls, kept, fn
            if cuda:
                torch.cuda.empty_cache()


# The transformers' rows (tokens x features) whose casts and bias gradients the
# castreduce kind times: BERT-base b32 (4096 tokens), GPT-2 b8 (8192), and their
# widths (hidden 768, QKV 2304, MLP 3072); and a weight of each (features x features).
CAST_ROWS = (4096, 8192)
CAST_WIDTHS = (768, 2304, 3072)


def castreduce_rows(dev, warmup, iters, plan, info):
    """Autocast's casts and the bias gradients' reductions (sim/train/cast_reduce.h):
    fp32 -> fp16/bf16 (Copy.cu's vectorised gpu_kernel_nocast) and fp16/bf16 -> fp32
    (the dynamic-casting unrolled_elementwise_kernel) of activations (tokens x width)
    and weights (768 x width), and sum(0) of a tokens x width gradient in fp32, fp16
    and bf16 (reduce_kernel over rows, its grid in kernel_args): each with the kernel
    that ran and its time alone (kernel_us)."""
    rows = CAST_ROWS if plan == "full" else (64,)
    widths = CAST_WIDTHS if plan == "full" else (48, 96)
    feats = 768 if plan == "full" else 48
    cuda, l2, clock_hz = kernel_timing_start(dev, info)
    shapes = [("act", (m, w)) for m in rows for w in widths] + \
        [("weight", (feats, w)) for w in widths]
    cases = []
    for half_name in ("fp16", "bf16"):
        half = EW_DTYPES[half_name]
        for what, shape in shapes:
            cases.append(("downcast", half_name, what, shape, torch.float32, half))
            cases.append(("upcast", half_name, what, shape, half, torch.float32))
    for dname in ("fp32", "fp16", "bf16"):
        for m in rows:
            for w in widths:
                cases.append(("bias_grad_sum", dname, "act", (m, w), EW_DTYPES[dname], None))
    for name, mode, what, shape, src, dst in cases:
        n = shape[0] * shape[1]
        src_b = torch.empty((), dtype=src).element_size()
        if dst is None:  # the reduction reads the gradient, writes one row
            moved = (n + shape[1]) * src_b
        else:
            moved = n * (src_b + torch.empty((), dtype=dst).element_size())
        sets = min(32, max(1, math.ceil(2 * l2 / moved)))
        xs = [torch.randn(shape, device=dev).to(src) for _ in range(sets)]
        rot = itertools.cycle(range(sets))
        if dst is None:
            def fn(xs=xs, rot=rot):
                return xs[next(rot)].sum(0)
        else:
            def fn(xs=xs, rot=rot, dst=dst):
                return xs[next(rot)].to(dst)
        ms, ahead = timed_queued(fn, dev, warmup, iters, clock_hz)
        clock = sm_clock_now(dev)
        names, kus = kernels_of(fn, dev)
        short = [kernel_short(k) for k in names]
        yield dict(kind="castreduce", name=name, mode=mode, layout=what, out_layout="",
                   shape="%dx%d" % shape, groups="", group_width="", elements=n, ms=ms,
                   flops=0, bytes=moved, kernel=";".join(k for k, _ in short),
                   kernel_args=";".join(a for _, a in short), kernel_us="%.2f" % kus,
                   kernel_gbps="%.1f" % (moved / kus / 1e3) if kus > 0 else "",
                   kernel_full=" ;; ".join(names), queued_ahead=ahead, sets=sets,
                   sm_clock_mhz=clock)
        del xs, fn
    # the attention mask's add in Hugging Face's eager attention under autocast:
    # half scores (batch, heads, seq, seq) + the fp32 mask (batch, 1, seq, seq),
    # broadcast over the heads, out fp32: operands of two dtypes, so PyTorch runs
    # the dynamic-casting elementwise_kernel (gpu_kernel_impl, not _nocast) on a
    # strided operand, a kind legacy_ew.h has no rate for (GPT-2 bf16's H200
    # trace: 519 us a call at b8, twice what the strided 2-byte rate charges)
    masks = [(8, 12, 1024), (32, 12, 128)] if plan == "full" else [(1, 2, 64)]
    for half_name in ("fp16", "bf16"):
        for b, heads, seq in masks:
            n = b * heads * seq * seq
            moved = n * (EW_DTYPES[half_name].itemsize + 4) + b * seq * seq * 4
            sets = min(32, max(1, math.ceil(2 * l2 / moved)))
            pairs = [(torch.randn(b, heads, seq, seq, device=dev).to(EW_DTYPES[half_name]),
                      torch.randn(b, 1, seq, seq, device=dev)) for _ in range(sets)]
            rot = itertools.cycle(range(sets))

            def fn(pairs=pairs, rot=rot):
                scores, mask = pairs[next(rot)]
                return scores + mask
            ms, ahead = timed_queued(fn, dev, warmup, iters, clock_hz)
            clock = sm_clock_now(dev)
            names, kus = kernels_of(fn, dev)
            short = [kernel_short(k) for k in names]
            yield dict(kind="castreduce", name="mask_add", mode=half_name, layout="bcast_heads",
                       out_layout="fp32", shape="%dx%dx%dx%d" % (b, heads, seq, seq),
                       groups="", group_width="", elements=n, ms=ms, flops=0, bytes=moved,
                       kernel=";".join(k for k, _ in short),
                       kernel_args=";".join(a for _, a in short), kernel_us="%.2f" % kus,
                       kernel_gbps="%.1f" % (moved / kus / 1e3) if kus > 0 else "",
                       kernel_full=" ;; ".join(names), queued_ahead=ahead, sets=sets,
                       sm_clock_mhz=clock)
            del pairs, fn
    if cuda:
        torch.cuda.empty_cache()


# (model, rows = batch x sequence) of the traces' layer norms, N = 768
LN_SHAPES = [("bert-base", 32 * 128), ("gpt2", 8 * 1024), ("bert-base-squad", 24 * 384)]
LN_SWEEP_ROWS = [1024, 2048, 16384, 32768, 65536, 81920]
LN_MODES = {"fp32": (torch.float32, False), "fp16": (torch.float16, False),
            "bf16": (torch.bfloat16, False), "amp-bf16": (torch.bfloat16, True)}


def layernorm_rows(dev, warmup, iters, plan):
    """Layer norm's forward and backward kernels (native_layer_norm,
    native_layer_norm_backward with gamma and beta), per shape and input
    dtype; `amp-bf16` runs F.layer_norm on a bf16 input under autocast (its
    fp32 kernels, after the input's cast). bytes = what ddpsim charges: the
    forward X read, Y written (2 passes), the backward's input gradient (dY,
    X read, dX written) and gamma/beta reduction (dY, X read again): 5
    passes; mean and rstd fp32. One row per pass, then one per kernel."""
    n = 768 if plan == "full" else 64
    shapes = LN_SHAPES + [("sweep", r) for r in LN_SWEEP_ROWS] if plan == "full" \
        else [("smoke", 256)]
    modes = list(LN_MODES) if plan == "full" else ["fp32", "amp-bf16"]
    for model, rows in shapes:
        for mode in modes if model != "sweep" else ["fp32"]:
            dtype, amp = LN_MODES[mode]
            x = torch.randn(rows, n, device=dev, dtype=dtype, requires_grad=amp)
            w = torch.randn(n, device=dev, dtype=torch.float32 if amp else dtype,
                            requires_grad=amp)
            b = torch.randn_like(w, requires_grad=amp)
            el = 4 if amp else x.element_size()
            stats = 2 * 4 * rows
            if amp:
                def fwd():
                    with torch.autocast(dev.type, dtype=torch.bfloat16):
                        return F.layer_norm(x, [n], w, b)
                y = fwd()
                dy = torch.randn_like(y)

                def bwd():
                    return torch.autograd.grad(y, (x, w, b), dy, retain_graph=True)
            else:
                def fwd():
                    return torch.ops.aten.native_layer_norm(x, [n], w, b, 1e-5)
                _, mean, rstd = fwd()
                dy = torch.randn_like(x)

                def bwd():
                    return torch.ops.aten.native_layer_norm_backward(
                        dy, x, [n], mean, rstd, w, b, [True, True, True])
            passes = (("fwd", fwd, 2 * rows * n * el + stats),
                      ("bwd", bwd, 5 * rows * n * el + 2 * stats))
            for name, fn, moved in passes:
                ms = timed(fn, dev, warmup, iters)
                row = dict(kind="layernorm", mode=mode, shape="%dx%d" % (rows, n),
                           groups="", group_width="", flops=0, sm_clock_mhz="")
                yield dict(row, name="%s-%s" % (model, name), ms=ms, bytes=moved)
                for kname, us in kernel_times(fn, dev):
                    short, targs = kernel_short(kname)
                    yield dict(row, name="%s-%s/kernel" % (model, name), ms=us / 1e3,
                               bytes=0, kernel=short, kernel_args=targs,
                               kernel_us="%.2f" % us, kernel_full=kname[:300])
            del x, w, b, dy


KINDS = ("host", "memory", "conv", "elementwise", "gemm", "bmm", "rn50conv", "convwidth",
         "castreduce", "layernorm")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True, help="CSV of one row per kernel and shape")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--plan", default="full", choices=("full", "smoke"))
    ap.add_argument("--quick", action="store_true", help="the same as --plan smoke")
    ap.add_argument("--only", default="host,memory,conv",
                    help="kinds to run, in order, of: " + ", ".join(KINDS))
    ap.add_argument("--modes", help="rn50conv, convwidth: comma-separated modes (of %s; default %s, "
                    "--quick fp32-tf32)" % (", ".join(MODES), ",".join(RN50_MODES)))
    ap.add_argument("--rn50-timing", default="queued", choices=("queued", "plain"),
                    help="rn50conv, convwidth: calls queued behind a spin kernel, with each call's "
                    "kernels (default), or timed back to back as on 2026-11-27 (plain)")
    ap.add_argument("--width-side", type=int, default=CONV_WIDTH_SIDE,
                    help="convwidth: the input (= output) side of its shapes (default %d)"
                    % CONV_WIDTH_SIDE)
    a = ap.parse_args()
    if a.width_side < 1:
        ap.error("--width-side: expected a positive side, got %d" % a.width_side)
    if a.quick:
        a.plan = "smoke"
    only = a.only.split(",")
    for kind in only:
        if kind not in KINDS:
            ap.error("--only: unknown kind %r (expected %s)" % (kind, ", ".join(KINDS)))
    modes = a.modes.split(",") if a.modes else None
    for m in modes or ():
        if m not in MODES:
            ap.error("--modes: unknown mode %r (expected %s)" % (m, ", ".join(MODES)))
    dev = torch.device(a.device)
    torch.backends.cudnn.benchmark = True
    info = dict(gpu_info(dev), cpu=cpu_model(), torch=torch.__version__,
                cudnn=torch.backends.cudnn.version() if dev.type == "cuda" else "")
    print("# " + " ".join("%s=%s" % kv for kv in info.items()), flush=True)
    if dev.type == "cuda":
        print("# nvidia-smi: %s" % nvidia_smi_clocks(), flush=True)
    cols = ["kind", "name", "mode", "layout", "out_layout", "shape", "groups", "group_width",
            "elements", "ms", "flops", "bytes", "tflops", "gbps", "kernel", "kernel_args",
            "kernel_us", "kernel_gbps", "queued_ahead", "sets", "sm_clock_mhz", "timing",
            "n_kernels", "xpose_us", "n_xpose", "kernel_full",
            *info]
    kinds = {"conv": lambda: conv_rows(dev, a.batch, a.warmup, a.iters, a.plan),
             "memory": lambda: memory_rows(dev, a.batch, a.warmup, a.iters, a.plan),
             "host": lambda: host_rows(dev, 5, a.plan),
             "elementwise": lambda: elementwise_rows(dev, a.warmup, a.iters, a.plan, info),
             "gemm": lambda: gemm_rows(dev, a.warmup, a.iters, a.plan),
             "bmm": lambda: bmm_rows(dev, a.warmup, a.iters, a.plan, info),
             "rn50conv": lambda: rn50_conv_rows(dev, a.batch, a.warmup, a.iters, a.plan, info,
                                                modes, a.rn50_timing),
             "convwidth": lambda: rn50_conv_rows(dev, a.batch, a.warmup, a.iters, a.plan,
                                                 info, modes, a.rn50_timing, "convwidth",
                                                 conv_width_layers(a.plan, a.width_side)),
             "castreduce": lambda: castreduce_rows(dev, a.warmup, a.iters, a.plan, info),
             "layernorm": lambda: layernorm_rows(dev, a.warmup, a.iters, a.plan)}
    tmp = a.out + ".tmp"
    with open(tmp, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=cols, restval="")
        w.writeheader()
        for kind in only:
            t0 = time.perf_counter()
            for r in kinds[kind]():
                s = r["ms"] / 1e3
                r.update(tflops="%.2f" % (r["flops"] / s / 1e12) if r["flops"] else "",
                         gbps="%.1f" % (r["bytes"] / s / 1e9) if r["bytes"] else "",
                         ms="%.4f" % r["ms"], **info)
                w.writerow(r)
                f.flush()
            print("%s: %.1f s" % (kind, time.perf_counter() - t0), flush=True)
    os.replace(tmp, a.out)


if __name__ == "__main__":
    main()
