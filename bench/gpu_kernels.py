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
           element, the GPU idle behind it) and per autograd node.

Each row is the median of `--iters` CUDA-event intervals after `--warmup`
calls (cudnn.benchmark on, as in training), with the FLOPs and the bytes the
kernel must move, so a rate and a bandwidth can be read from it. Rows are
written as they are measured, so a run cut short keeps them.
"""

import argparse
import csv
import os
import platform
import statistics
import time

import torch
import torch.nn.functional as F


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def timed(fn, dev, warmup, iters):
    """Median ms of fn() over iters, each bracketed by CUDA events (host time
    with a synchronise on CPU)."""
    for _ in range(warmup):
        fn()
    out = []
    if dev.type == "cuda":
        torch.cuda.synchronize()
        ev = [torch.cuda.Event(enable_timing=True) for _ in range(iters + 1)]
        ev[0].record()
        for i in range(iters):
            fn()
            ev[i + 1].record()
        torch.cuda.synchronize()
        out = [ev[i].elapsed_time(ev[i + 1]) for i in range(iters)]
    else:
        for _ in range(iters):
            t0 = time.perf_counter()
            fn()
            out.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(out)


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
}


def conv_rows(dev, batch, warmup, iters, plan):
    widths = (4, 8) if plan == "full" else (4,)
    modes = list(MODES) if plan == "full" else ["fp32"]
    for wpg in widths:
        layers = resnext_layers(wpg) if plan == "full" else [(128, 8, 1)]
        for width, side, stride in layers:
            for groups in (32, 1):
                for mode in modes:
                    dtype, tf32, nhwc = MODES[mode]
                    torch.backends.cudnn.allow_tf32 = tf32
                    fmt = torch.channels_last if nhwc else torch.contiguous_format
                    x = torch.randn(batch, width, side, side, device=dev, dtype=dtype)
                    x = x.contiguous(memory_format=fmt)
                    w = torch.randn(width, width // groups, 3, 3, device=dev, dtype=dtype)
                    w = w.contiguous(memory_format=fmt)
                    y = F.conv2d(x, w, stride=stride, padding=1, groups=groups)
                    gy = torch.randn_like(y)

                    def back(mask):
                        return lambda: torch.ops.aten.convolution_backward(
                            gy, x, w, None, [stride, stride], [1, 1], [1, 1], False, [0, 0],
                            groups, mask)
                    passes = {
                        "fwd": lambda: F.conv2d(x, w, stride=stride, padding=1, groups=groups),
                        "dgrad": back([True, False, False]),
                        "wgrad": back([False, True, False]),
                    }
                    flops = 2 * y.numel() * (width // groups) * 9
                    el = x.element_size()
                    bytes_ = (x.numel() + w.numel() + y.numel()) * el
                    for p, fn in passes.items():
                        ms = timed(fn, dev, warmup, iters)
                        yield dict(kind="conv", name="%dx%dd/%s" % (32, wpg, p), mode=mode,
                                   shape="%dx%dx%dx%d s%d g%d" % (batch, width, side, side,
                                                                 stride, groups),
                                   groups=groups, group_width=width // groups, ms=ms,
                                   flops=flops, bytes=bytes_)
                    del x, w, y, gy
    torch.backends.cudnn.allow_tf32 = True


# ResNet-50's activations at batch 32 (channels, side) and the ops that run on
# them: the stem's ReLU and max-pool, and each stage's block output.
RESNET_ACTS = [(64, 112), (64, 56), (256, 56), (128, 28), (512, 28), (1024, 14), (2048, 7)]


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


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True, help="CSV of one row per kernel and shape")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--plan", default="full", choices=("full", "smoke"))
    ap.add_argument("--only", default="host,memory,conv", help="kinds to run, in order")
    a = ap.parse_args()
    dev = torch.device(a.device)
    torch.backends.cudnn.benchmark = True
    info = dict(gpu=torch.cuda.get_device_name(0) if dev.type == "cuda" else "cpu",
                cpu=cpu_model(), torch=torch.__version__,
                cudnn=torch.backends.cudnn.version() if dev.type == "cuda" else "")
    print("# " + " ".join("%s=%s" % kv for kv in info.items()), flush=True)
    cols = ["kind", "name", "mode", "shape", "groups", "group_width", "ms", "flops", "bytes",
            "tflops", "gbps", "gpu", "cpu", "torch", "cudnn"]
    tmp = a.out + ".tmp"
    with open(tmp, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=cols)
        w.writeheader()
        for kind in a.only.split(","):
            t0 = time.perf_counter()
            rows = {"conv": lambda: conv_rows(dev, a.batch, a.warmup, a.iters, a.plan),
                    "memory": lambda: memory_rows(dev, a.batch, a.warmup, a.iters, a.plan),
                    "host": lambda: host_rows(dev, 5, a.plan)}[kind]()
            for r in rows:
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
