#!/usr/bin/env python3
"""The host's cost per kind of op (forward) and per kind of autograd node (backward),
from the torch.profiler traces bench/host_costs.py reads (same windows, same scale s
for the profiler's inflation; see its docstring).

Forward: each top-level cpu_op of the main thread's forward window F is charged its
own duration plus the Python that follows it up to the next top-level op (the last
one up to the first autograd node), less the autocast casts nested in it (their own
kind, per cast). Its kind, by what it runs (the same rule tools/export_model.py
applies to the aten ops a call dispatches, host_kind_of_call):
  gemm   it runs a convolution or a matrix multiply (conv2d, linear, matmul, ...:
         a nested aten::convolution / addmm / mm / bmm / baddbmm);
  view   it launches nothing on the GPU (no cudaLaunchKernel, memset or memcpy
         nested in it: view, reshape of a contiguous tensor, transpose, flatten, ...);
  other  every other op (elementwise, normalisation, pooling, embedding, loss, ...).
Backward: each autograd node of the window B is charged its duration plus the gap
to the next node. Kinds by node name (NODE_GEMM and
NODE_VIEW below): gemm (ConvolutionBackward0, AddmmBackward0, MmBackward0,
BmmBackward0), view (the backward of a view: ViewBackward0, TBackward0, ...; it
reshapes a gradient and launches nothing), accumulate (AccumulateGrad), cast
(ToCopyBackward0, autocast's casts), other (the rest).
Prints per trace and kind: count, profiled time, scaled cost per unit; then pooled.

What the two H200 traces say (ResNet-50 fp32 b32, BERT-base AMP b32, scaled): the
backward's kinds nearly agree (gemm 72 / 78 us, view 10.8 / 10.4, accumulate 6.3 /
8.3, other 25 / 33), but the forward's do not (gemm 71 / 93, view 11 / 16, other 29
/ 67 us): BERT's calls decompose into more aten ops (linear on a 3-d input: t, view,
addmm, _unsafe_view) than ResNet's (conv2d: convolution). Given each trace's model
file (TRACE=MS=MODEL.yaml, tools/export_model.py's host_dispatches), it prints the
forward per aten op dispatched, nested ones included, which agrees within 10 %:
that is the cost ddpsim charges (host_dispatch, sim/net/topo_compute.c). Backward per node
(host_nodes, plus host_amp_nodes where the trace has autocast's casts) likewise.
  python3 bench/host_kinds.py \\
    bench/results/gpu-2026-11-26-h200/prof/resnet50-fp32-b32.json.gz=18.048=models/resnet50.yaml \\
    bench/results/gpu-2026-11-26-h200/prof/bert-base-amp-b32-p.json.gz=58.325=models/bert-base.yaml
Standard library only.
"""

import argparse
import collections
import sys

import host_costs

GEMM_OPS = {"aten::convolution", "aten::_convolution", "aten::cudnn_convolution",
            "aten::addmm", "aten::mm", "aten::bmm", "aten::baddbmm"}
LAUNCHES = ("cudaLaunchKernel", "cudaMemsetAsync", "cudaMemcpyAsync", "cuLaunchKernel")
CASTS = ("aten::to", "aten::_to_copy")
# by name, as a trace names its nodes: the kinds that launch nothing whatever their
# shapes (tools/model_export/host.py decides per node by what it dispatches: an
# AddBackward0 or ExpandBackward0 is free there unless it broadcast)
NODE_GEMM = {"ConvolutionBackward0", "AddmmBackward0", "MmBackward0", "BmmBackward0"}
NODE_VIEW = {"ViewBackward0", "UnsafeViewBackward0", "TBackward0", "TransposeBackward0",
             "PermuteBackward0", "ReshapeAliasBackward0", "CloneBackward0",
             "ExpandBackward0", "SqueezeBackward0", "SqueezeBackward1",
             "UnsqueezeBackward0", "AliasBackward0"}
FWD_KINDS = ("gemm", "view", "other", "cast")
BWD_KINDS = ("gemm", "view", "accumulate", "cast", "other")


def node_kind(name):
    name = name.split(": ")[-1].split("::")[-1]
    if name in NODE_GEMM:
        return "gemm"
    if name in NODE_VIEW:
        return "view"
    if name == "AccumulateGrad":
        return "accumulate"
    if name == "ToCopyBackward0":
        return "cast"
    return "other"


def inside(events, e):
    """events (sorted by ts) that start within e."""
    return [x for x in events if e["ts"] <= x["ts"] < e["ts"] + e["dur"] and x is not e]


def measure(path):
    ev, main_tid, windows = host_costs.iterations(path)
    main_rt = sorted((e for e in ev if e.get("ph") == "X" and e.get("cat") == "cuda_runtime"
                      and e["name"] in LAUNCHES and e["tid"] == main_tid),
                     key=lambda e: e["ts"])
    rows = []
    for w in windows:
        t0, b0, b1, its, fwd = w["t0"], w["b0"], w["b1"], w["nodes"], w["fwd"]
        top = host_costs.outermost(fwd)
        t_us, n = collections.Counter(), collections.Counter()
        # Python before the first op (the model's call) goes with it
        for j, e in enumerate(top):
            start = t0 if j == 0 else e["ts"]
            end = top[j + 1]["ts"] if j + 1 < len(top) else b0
            sub = inside(fwd, e)
            names = {e["name"]} | {x["name"] for x in sub}
            casts = host_costs.outermost([x for x in sub if x["name"] in CASTS])
            cast_us = sum(c["dur"] for c in casts)
            if names & GEMM_OPS:
                kind = "gemm"
            elif not inside(main_rt, e):
                kind = "view"
            else:
                kind = "other"
            t_us[kind] += end - start - cast_us
            n[kind] += 1
            t_us["cast"] += cast_us
            n["cast"] += len(casts)
        bt, bn = collections.Counter(), collections.Counter()
        for j, e in enumerate(its):
            end = its[j + 1]["ts"] if j + 1 < len(its) else b1
            k = node_kind(e["name"])
            bt[k] += end - e["ts"]
            bn[k] += 1
        st, z = w["step"], w["z"]
        rows.append(dict(I=st["ts"] + st["dur"] - z["ts"], ft=t_us, fn=n, bt=bt, bn=bn,
                         F=b0 - t0, B=b1 - b0))
    return rows


def model_counts(path):
    """Per-iteration sums of the host counts in a model file (tools/export_model.py)."""
    tot = collections.Counter()
    for line in open(path):
        key, _, val = line.strip().partition(":")
        if key in ("host_ops", "host_dispatches", "host_nodes", "host_amp_nodes"):
            tot[key] += int(val)
    return tot


def parse_args(argv):
    """The command line as argparse reads it: --help/-h prints this module's docstring
    (exit 0), a bad argument the usage (exit 2)."""
    p = argparse.ArgumentParser(prog="python3 bench/host_kinds.py", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("traces", nargs="+", metavar="TRACE=MS[=MODEL.yaml]",
                   help="a trace, its measured ms per iteration, optionally its model file")
    return p.parse_args(argv)


def main(argv):
    pool = collections.Counter()
    for arg in parse_args(argv[1:]).traces:
        path, u, model = (arg.split("=") + [None])[:3]
        rows = measure(path)
        s = float(u) * 1e3 / (sum(r["I"] for r in rows) / len(rows))
        print("%s: %d iterations, s = %.4f; F %.0f us, B %.0f us (profiled, mean)" %
              (path, len(rows), s, sum(r["F"] for r in rows) / len(rows),
               sum(r["B"] for r in rows) / len(rows)))
        for side, kinds, tk, nk in (("forward", FWD_KINDS, "ft", "fn"),
                                    ("backward", BWD_KINDS, "bt", "bn")):
            for k in kinds:
                t = sum(r[tk][k] for r in rows) / len(rows)
                c = rows[0][nk][k]
                if not c:
                    continue
                print("  %-8s %-10s %4d x, %8.0f us profiled: %.2f us each" %
                      (side, k, c, t, s * t / c))
                pool[(side, k, "us")] += s * t
                pool[(side, k, "n")] += c
        if model:
            m = model_counts(model)
            fwd = s * sum(sum(r["ft"][k] for k in FWD_KINDS if k != "cast") for r in rows) / len(rows)
            bwd = s * sum(sum(r["bt"].values()) for r in rows) / len(rows)
            nodes = m["host_nodes"] + (m["host_amp_nodes"] if rows[0]["bn"]["cast"] else 0)
            print("  %s: forward %.0f us (casts excluded) / %d top-level ops = %.2f us; "
                  "/ %d dispatches = %.2f us; backward %.0f us / %d nodes = %.2f us" %
                  (model, fwd, m["host_ops"], fwd / m["host_ops"], m["host_dispatches"],
                   fwd / m["host_dispatches"], bwd, nodes, bwd / nodes))
            pool["fwd_us"] += fwd
            pool["dispatches"] += m["host_dispatches"]
    print("pooled (scaled time sums over count sums):")
    for side, kinds in (("forward", FWD_KINDS), ("backward", BWD_KINDS)):
        for k in kinds:
            c = pool[(side, k, "n")]
            if c:
                print("  %-8s %-10s %8.0f us / %4d = %.2f us" %
                      (side, k, pool[(side, k, "us")], c, pool[(side, k, "us")] / c))
    if pool["dispatches"]:
        print("  forward per dispatch: %.0f us / %d = %.2f us" %
              (pool["fwd_us"], pool["dispatches"], pool["fwd_us"] / pool["dispatches"]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
