#!/usr/bin/env python3
"""A CNN's GPU time and kernel count per iteration by class and pass: a torch.profiler
trace of a lent GPU's run against the ddpsim schedules that predict it, side by side.

    python3 bench/cnn_classes.py TRACE.json.gz models/M.yaml S0.csv S4.csv [--iters 2]

S0, S4: `bin/ddpsim --topo T --world-size 1 --strategy single --model M --batch B
--schedule S.csv` on a copy of the topology with `kernel_overhead: 0us` and on the topology
itself (4 us): S4 gives ddpsim's time per class, (S4 - S0) / 4 us the kernels it charges
an overhead for (as bench/overhead_count.py; a lower bound where an op is the larger of two
times). Classes for ResNet-style models (torchvision's names: convN, bnN, relu, add,
downsample.0/.1, maxpool, avgpool, fc): convolutions' compute kernels, cuDNN's NCHW<->NHWC
transposes and helpers (memsets, workspace init, wgrad reductions), batch norm, ReLU,
residual adds, autograd's gradient accumulations (ddpsim holds them in the ReLU whose
output's gradients meet: read the ReLU backward and accumulation rows together),
BatchNorm's num_batches_tracked += 1, max-pool, average pool, fc, loss, optimizer.
`--gap-us` (1.18) adds the GPU's idle gap per traced activity, what ddpsim's 4 us
kernel_overhead stands for beside the kernel's own time (bench/kernel_floor.py). Standard
library only.
"""
import argparse
import collections
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
import trace_classes as tc  # noqa: E402

ROWS = ["conv compute", "conv transpose", "conv helper", "bn", "relu", "grad accumulation",
        "relu bwd + accumulation", "residual add", "bn counter", "max-pool", "avg-pool", "fc",
        "loss", "optimizer", "other"]
CONV_HELPER = ("Memset", "init_device_workspace", "reduce_wgrad", "reduction::kernel")


def trace_row(cls, chain, e):
    name = e["name"]
    aten = [c["name"] for c in chain if c["name"].startswith("aten::")]
    outer = aten[0] if aten else ""
    node = next((c["name"] for c in chain if "evaluate_function:" in c["name"]), "")
    if cls == "conv" and "add_" not in outer:
        if "nchwToNhwc" in name or "nhwcToNchw" in name:
            return "conv transpose"
        return "conv helper" if any(h in name for h in CONV_HELPER) else "conv compute"
    if cls == "memory:norm":
        return "bn"
    if "max_pool" in outer:
        return "max-pool"
    if "adaptive_avg_pool" in outer or "MeanBackward" in node:
        return "avg-pool"
    if cls in ("matmul",) or "AddmmBackward" in node:
        return "fc"
    if cls in ("loss", "optimizer"):
        return cls
    if outer in ("aten::relu_", "aten::relu", "aten::threshold_backward"):
        return "relu"
    if outer == "aten::add_" and node:
        return "grad accumulation"  # autograd's engine adds where a tensor's gradients meet
    if outer in ("aten::add_", "aten::add"):
        shapes = tc.dims(next(c for c in chain if c["name"] == outer))
        return "bn counter" if shapes and shapes[0] == [] else "residual add"
    return "other"


def schedule_row(name, layer_class):
    base = name.split("/")[0]
    leaf = base.split(".")[-1]
    if name.endswith(".num_batches_tracked"):
        return "bn counter"
    if base.endswith(".transpose"):
        return "conv transpose"
    if layer_class.get(base) == "batch_norm":
        return "bn"
    if layer_class.get(base) == "conv":
        return "conv compute"
    if name == "optimizer":
        return "optimizer"
    if name == "loss":
        return "loss"
    if leaf.startswith("relu"):
        return "relu"
    if leaf == "add":
        return "residual add"
    for key, row in (("maxpool", "max-pool"), ("avgpool", "avg-pool"), ("fc", "fc")):
        if leaf == key:
            return row
    return "other"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--iters", type=int, default=2)
    tc.add_schedule_pair_args(ap)
    ap.add_argument("--gap-us", type=float, default=1.18,
                    help="the GPU's idle gap per activity added to the trace's time (1.18: "
                         "the fit trace's median, bench/results/gpu-2026-11-26-h200/kernel_floor.txt)")
    a = ap.parse_args()
    traced = collections.defaultdict(lambda: [0.0, 0.0])  # (row, pass) -> ms, kernels
    for e, chain in tc.gpu_activities(tc.load(a.trace)):
        bwd = any("evaluate_function:" in c["name"] for c in chain)
        row = trace_row(tc.classify(chain), chain, e)
        p = "step" if row == "optimizer" else ("bwd" if bwd else "fwd")
        traced[(row, p)][0] += e["dur"] / 1e3 / a.iters
        traced[(row, p)][1] += 1 / a.iters
    layer_class = tc.model_classes(a.model)
    charged = collections.defaultdict(lambda: [0.0, 0.0])
    for r4, overheads in tc.schedule_overheads(a.s0, a.s4, a.overhead_us, "cnn_classes"):
        row = schedule_row(r4["name"], layer_class)
        p = {"fwd": "fwd", "bwd": "bwd"}.get(r4["kind"], "step")
        if r4["name"] == "loss":
            p = "fwd"
        charged[(row, p)][0] += float(r4["dur_us"]) / 1e3
        charged[(row, p)][1] += overheads
    print("| class | pass | trace ms | trace + gaps ms | ddpsim ms | ddpsim/trace | "
          "ddpsim/(trace + gaps) | trace kernels | ddpsim overheads |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    tot = [0.0, 0.0, 0.0, 0.0]
    for row in ROWS:
        for p in ("fwd", "bwd", "step"):
            if row == "relu bwd + accumulation":
                if p != "bwd":
                    continue
                t = [traced[("relu", "bwd")][i] + traced[("grad accumulation", "bwd")][i]
                     for i in (0, 1)]
                d = charged[("relu", "bwd")]
            else:
                t, d = traced.get((row, p)), charged.get((row, p))
                if t is None and d is None:
                    continue
                t, d = t or [0.0, 0.0], d or [0.0, 0.0]
                for i in (0, 1):
                    tot[i] += t[i]
                    tot[2 + i] += d[i]
            g = t[0] + t[1] * a.gap_us / 1e3
            print("| %s | %s | %.3f | %.3f | %.3f | %s | %s | %.0f | %.1f |" % (
                row, p, t[0], g, d[0], "%.2f" % (d[0] / t[0]) if t[0] else "-",
                "%.2f" % (d[0] / g) if g else "-", t[1], d[1]))
    g = tot[0] + tot[1] * a.gap_us / 1e3
    print("| total | | %.3f | %.3f | %.3f | %.2f | %.2f | %.0f | %.1f |" % (
        tot[0], g, tot[2], tot[2] / tot[0], tot[2] / g, tot[1], tot[3]))


if __name__ == "__main__":
    main()
