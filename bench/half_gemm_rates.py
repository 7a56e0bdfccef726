#!/usr/bin/env python3
"""Half-precision GEMM rate of the transformers' aligned linears, as training traces ran
them (what topologies/gpus.yaml's matmul_half for the H200 is set from: tools/gen_gpus.py).

    python3 bench/half_gemm_rates.py                 # the two H200 fit traces (below)
    python3 bench/half_gemm_rates.py TRACE.json.gz [TRACE ...] [--shapes]

Default traces: bench/results/gpu-2026-11-26-h200/prof/bert-base-amp-b32-p.json.gz (BERT-base,
autocast fp16, batch 32) and gpt2-bf16-b8-p.json.gz (GPT-2, autocast bf16, batch 8), the
fit rows' own traces (validation/training.csv marks both runs `fit`). Each holds --iters
iterations (default 2: bench/torch_measure.py's profile runs); every number is per
iteration.

Which kernels: every GPU activity tools/trace_classes.py puts in class `matmul` (so not
the attention's batched products, class `attention`, which attention_half prices, and not
the LM head, class `lmhead`) whose innermost aten op is a GEMM (aten::mm or aten::addmm;
autocast's weight casts under aten::addmm, aten::copy_, are left out: ddpsim charges them
as casts) with half inputs (c10::Half or c10::BFloat16), and whose M, K and N are all
multiples of 8 (a dimension that is not runs cuBLAS's narrow-load kernels, which
matmul_unaligned_half prices: BERT's 3-way classifier; listed apart). The GEMM kernels
and the memsets the same op launches (cuBLASLt's workspace) are its time.

FLOPs: 2 M K N of each GEMM op, from its own input shapes in the trace (record_shapes):
aten::mm [[M, K], [K, N]], aten::addmm [[bias], [M, K], [K, N]]. Pass: a GEMM with no
autograd node above it is the forward; under AddmmBackward0 or MmBackward0, of the node's
two GEMMs the first is the input gradient (dgrad) and the second the weight gradient
(wgrad), the order PyTorch computes them in; a node's one GEMM is told by what it
contracts over (the output features: dgrad; the tokens: wgrad), and the shapes, where
they can tell, must agree with the order (split_passes). Not by operand shapes alone:
nn.Linear's weight gradient runs grad.t().mm(mat1).t() (first operand [N, M]), equal to
the incoming gradient's [M, N] when M == N, and a column-major input's gradient runs
mat2.mm(grad.t()).t(). For a trace named
MODEL-MATH-bBATCH[-...].json.gz whose models/MODEL.yaml exists (unless --no-model-check)
the sum is checked against the model file's fwd_flops + bwd_flops of its matmul layers with
gemm_align 8, times the batch.

Rate: total FLOPs / total time, never a mean of rates (bench/gemm_rates.py says why).
By the rule tools/gen_gpus.py states for every efficiency fitted from measured kernel
times, the time is less kernel_overhead (--kernel-overhead-us, default 4: the H200
topologies') for each kernel ddpsim charges for these GEMMs: a matmul layer's forward is
one kernel and its backward one more (dgrad and wgrad in one roofline with one overhead:
sim/train/compute_layer.c bwd_time), so one overhead per forward GEMM op and one per backward
autograd node. The per-pass lines show dgrad and wgrad as timed and the backward pooled by
that rule; a line also gives the pooled value with one overhead per GEMM kernel instead
(dgrad and wgrad each), the sensitivity to how the overhead is counted.

Peaks: the GPU table's fp16 and bf16 for the trace's GPU (deviceProperties' name,
matched against smi_names in topologies/gpus.yaml).

Standard library only.
"""

import argparse
import collections
import gzip
import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(REPO, "tools"))
import trace_classes as tc  # noqa: E402
from gemm_rates import InputError, gpu_peaks  # noqa: E402

PROF = os.path.join("bench", "results", "gpu-2026-11-26-h200", "prof")
DEFAULT_TRACES = (os.path.join(PROF, "bert-base-amp-b32-p.json.gz"),
                  os.path.join(PROF, "gpt2-bf16-b8-p.json.gz"))
HALF = {"c10::Half": "fp16", "c10::BFloat16": "bf16"}
PASSES = ("fwd", "dgrad", "wgrad")
ALIGN = 8  # elements: cuBLAS's 16-byte vector loads of a half operand (compute.h)


def gemm_mkn(op):
    """(M, K, N) of an aten::mm or aten::addmm op from its Input Dims."""
    d = tc.dims(op)
    a, b = (d[1], d[2]) if op["name"] == "aten::addmm" else (d[0], d[1])
    if len(a) != 2 or len(b) != 2 or a[1] != b[0]:
        raise ValueError(op["name"], d)
    return a[0], a[1], b[1]


def grad_out(chain):
    """(tokens, output features) of the autograd node above a backward GEMM: its incoming
    gradient's Input Dims, [..., N] (tokens: the product of the rest); None in the
    forward."""
    node = tc.autograd_node(chain)
    if node is None:
        if any("evaluate_function:" in c["name"] for c in chain):
            raise ValueError("no input dims on autograd node")
        return None
    g = tc.dims(node)[0]
    tokens = 1
    for d in g[:-1]:
        tokens *= d
    return tokens, g[-1]


def contraction_pass(mkn, grad):
    """dgrad or wgrad of one backward GEMM from what it contracts over, None where that
    cannot tell: the input gradient sums over the output features (grad [M, N] x W, in
    either operand order or transposed), the weight gradient over the tokens (grad^T x X,
    or nn.Linear's grad.t().mm(mat1).t() whose first operand is [N, M]). M == N leaves
    it open."""
    tokens, n = grad
    k = mkn[1]
    if k == n and k != tokens:
        return "dgrad"
    if k == tokens and k != n:
        return "wgrad"
    return None


def split_passes(path, node_ops):
    """Sets "pass" on the GEMM ops of one autograd node (in launch order). PyTorch's
    AddmmBackward0 and MmBackward0 compute mat1's gradient (the input's, dgrad) before
    mat2's (the weight's, wgrad): the order of tools/autograd/derivatives.yaml's entries
    for addmm and mm, which the generated Functions.cpp follows. So two GEMMs are dgrad
    then wgrad whatever their shapes; one alone (the other input needs no gradient) is
    told by contraction_pass, and where M == N leaves that open, wgrad (the node of the
    model's first layer, whose input needs no gradient). Where the shapes can tell, they
    must agree with the order, else the trace is not what this assumes (an error)."""
    if len(node_ops) > 2:
        raise InputError("%s: autograd node %s launched %d GEMMs, expected 1 or 2"
                         % (path, node_ops[0]["node"], len(node_ops)))
    order = ["dgrad", "wgrad"] if len(node_ops) == 2 else [None]
    for o, by_order in zip(node_ops, order):
        by_shape = contraction_pass(o["mkn"], o["grad"])
        if by_order and by_shape and by_order != by_shape:
            raise InputError("%s: autograd node %s: GEMM %dx%dx%d is its %s by launch order "
                             "but contracts as a %s" % ((path, o["node"]) + o["mkn"] +
                                                        (by_order, by_shape)))
        o["pass"] = by_order or by_shape or "wgrad"


def read_trace(path, iters):
    """The half GEMM ops of class matmul: {External id: op dict}, the unaligned ones apart,
    the peaks' GPU name and the ms per iteration of the other kernels under those linears
    (casts) left out."""
    try:
        with (gzip.open(path, "rt") if path.endswith(".gz") else open(path)) as f:
            doc = json.load(f)
    except (OSError, ValueError) as e:
        raise InputError("cannot read %s as a torch.profiler trace: %s" % (path, e))
    props = doc.get("deviceProperties") or [{}]
    gpu = props[0].get("name", "")
    ops, unaligned, other_ms = {}, {}, 0.0
    for e, chain in tc.gpu_activities(doc.get("traceEvents", [])):
        if tc.classify(chain) != "matmul":
            continue
        aten = [c for c in chain if c["name"].startswith("aten::")]
        op = aten[-1] if aten else None
        if op is None or op["name"] not in ("aten::mm", "aten::addmm"):
            other_ms += e["dur"] / 1e3 / iters
            continue
        types = [t for t in tc.types(op) if t in tc.DTYPES]
        if not types or any(t not in HALF for t in types):
            continue  # an fp32 linear: not this script's
        try:
            m, k, n = gemm_mkn(op)
            grad = grad_out(chain)
        except (ValueError, IndexError, TypeError) as err:
            raise InputError("%s: GEMM op %s (External id %s): cannot read its shapes: %s"
                             % (path, op["name"], op["args"].get("External id"), err))
        eid = op["args"].get("External id")
        node = next((c for c in chain if "evaluate_function:" in c["name"]), None)
        into = ops if m % ALIGN == 0 and k % ALIGN == 0 and n % ALIGN == 0 else unaligned
        o = into.setdefault(eid, {"pass": "fwd" if grad is None else None, "mkn": (m, k, n),
                                  "grad": grad, "ts": op["ts"], "math": HALF[types[0]],
                                  "flops": 2.0 * m * k * n, "us": 0.0, "kernels": 0,
                                  "names": set(), "node": node["args"].get("External id")
                                  if node else None})
        o["us"] += e["dur"]
        if e.get("cat") == "kernel":
            o["kernels"] += 1
            o["names"].add(e["name"].split("(")[0][:60])
    if not ops:
        raise InputError("%s: no half-precision GEMMs of class matmul" % path)
    by_node = collections.defaultdict(list)
    for o in list(ops.values()) + list(unaligned.values()):
        if o["pass"] is None:
            by_node[o["node"]].append(o)
    for node_ops in by_node.values():
        split_passes(path, sorted(node_ops, key=lambda o: o["ts"]))
    return ops, unaligned, gpu, other_ms


def model_matmul_flops(path):
    """Sum of fwd_flops + bwd_flops per sample of the model file's matmul layers with
    gemm_align 8 (the aligned linears), and the count of such layers."""
    total, count, layer = 0.0, 0, None

    def close(ly):
        nonlocal total, count
        if ly and ly.get("class") == "matmul" and ly.get("gemm_align") == ALIGN:
            total += ly.get("fwd_flops", 0) + ly.get("bwd_flops", 0)
            count += 1
    try:
        with open(path, encoding="utf-8") as f:
            for line in f:
                m = re.match(r"  - name: (\S+)", line)
                if m:
                    close(layer)
                    layer = {}
                    continue
                m = re.match(r"    (class|fwd_flops|bwd_flops|gemm_align): (\S+)", line)
                if m and layer is not None:
                    layer[m.group(1)] = m.group(2) if m.group(1) == "class" else \
                        float(m.group(2))
    except OSError as e:
        raise InputError("cannot read %s: %s" % (path, e.strerror))
    except ValueError:
        raise InputError("%s: a non-numeric fwd_flops, bwd_flops or gemm_align" % path)
    close(layer)
    return total, count


def trace_model(path):
    """(models/MODEL.yaml, batch) from a trace named MODEL-MATH-bBATCH[...], or None."""
    m = re.match(r"(.+?)-(amp|bf16|fp16)-b(\d+)", os.path.basename(path))
    if not m:
        return None
    model = os.path.join(REPO, "models", m.group(1) + ".yaml")
    return (model, int(m.group(3))) if os.path.exists(model) else None


def charged(ops):
    """The kernels ddpsim charges for these GEMMs: one per forward op, one per backward
    autograd node (dgrad and wgrad of a layer share it)."""
    fwd = sum(1 for o in ops if o["pass"] == "fwd")
    bwd = len(set(o["node"] for o in ops if o["pass"] != "fwd"))
    return fwd, bwd


def rate_line(label, flops, us, overhead_us, n, peak):
    if flops == 0 and us == 0:  # no GEMM of that pass
        print("  %-34s none" % label)
        return 0.0
    busy = us - n * overhead_us
    if busy <= 0:
        raise InputError("%s: %d kernels x %g us exceed the GEMMs' %.1f us"
                         % (label, n, overhead_us, us))
    r = flops / busy / 1e6
    print("  %-34s %9.1f GFLOP in %8.3f ms less %4d x %g us = %8.3f ms: %6.1f TFLOP/s = %.3f"
          % (label, flops / 1e9, us / 1e3, n, overhead_us, busy / 1e3, r, r / peak))
    return r


def trace_report(path, iters, overhead_us, table, shapes, check):
    ops, unaligned, gpu, other_ms = read_trace(path, iters)
    name, peaks = gpu_peaks(gpu, table, ("fp16", "bf16"))
    maths = set(o["math"] for o in ops.values())
    if len(maths) != 1:
        raise InputError("%s: GEMMs in %s: expected one half type" % (path, ", ".join(maths)))
    math = maths.pop()
    peak = peaks[math]
    sel = list(ops.values())
    print("%s: %s (%s), %s, peak %g TFLOP/s; per iteration of %d"
          % (path, gpu, name, math, peak, iters))
    if shapes:
        per = collections.defaultdict(lambda: [0, 0.0, 0.0, 0])
        for o in sel:
            key = (o["pass"], "%dx%dx%d" % o["mkn"], ",".join(sorted(o["names"])))
            per[key][0] += 1
            per[key][1] += o["us"]
            per[key][2] += o["flops"]
            per[key][3] += o["kernels"]
        print("  %-5s %-16s %6s %8s %8s  %s" % ("pass", "MxKxN", "calls", "mean us",
                                               "TFLOP/s", "kernel"))
        for (pss, mkn, kern), (n, us, fl, _) in sorted(per.items(), key=lambda kv: (
                PASSES.index(kv[0][0]), -kv[1][1])):
            print("  %-5s %-16s %6.0f %8.1f %8.1f  %s" % (pss, mkn, n / iters, us / n,
                                                         fl / us / 1e6, kern))
    print("  %-6s %10s %8s %9s %9s %6s" % ("pass", "GFLOP", "kernels", "ms", "TFLOP/s",
                                          "eff"))
    tot = {}
    for pss in PASSES:
        s = [o for o in sel if o["pass"] == pss]
        fl = sum(o["flops"] for o in s) / iters
        us = sum(o["us"] for o in s) / iters
        k = sum(o["kernels"] for o in s) / iters
        tot[pss] = (fl, us, k)
        if not s:  # a forward-only trace, or a node whose input needs no gradient
            print("  %-6s %10.1f %8.0f %9.3f %9s %6s" % (pss, 0, 0, 0, "-", "-"))
            continue
        print("  %-6s %10.1f %8.0f %9.3f %9.1f %6.3f  (as timed)"
              % (pss, fl / 1e9, k, us / 1e3, fl / us / 1e6, fl / us / 1e6 / peak))
    fl = sum(v[0] for v in tot.values())
    us = sum(v[1] for v in tot.values())
    k = sum(v[2] for v in tot.values())
    print("  %-6s %10.1f %8.0f %9.3f %9.1f %6.3f  (as timed)"
          % ("all", fl / 1e9, k, us / 1e3, fl / us / 1e6, fl / us / 1e6 / peak))
    nf, nb = charged(sel)
    nf, nb = nf / iters, nb / iters
    print("  ddpsim's kernels for them: %.0f forward, %.0f backward (dgrad + wgrad one "
          "kernel per layer); by the rule:" % (nf, nb))
    rate_line("forward", tot["fwd"][0], tot["fwd"][1], overhead_us, nf, peak)
    rate_line("backward (dgrad + wgrad)", tot["dgrad"][0] + tot["wgrad"][0],
              tot["dgrad"][1] + tot["wgrad"][1], overhead_us, nb, peak)
    rate_line("all", fl, us, overhead_us, nf + nb, peak)
    rate_line("all, an overhead per GEMM kernel", fl, us, overhead_us, k, peak)
    if other_ms:
        print("  left out: %.3f ms of other kernels under these linears (autocast's casts)"
              % other_ms)
    left = collections.defaultdict(float)
    for o in unaligned.values():
        left[(o["pass"], "%dx%dx%d" % o["mkn"])] += o["us"] / iters
    for (pss, mkn), left_us in sorted(left.items()):
        print("  left out (unaligned: matmul_unaligned_half's): %s %s, %.1f us"
              % (pss, mkn, left_us))
    if check:
        model, batch = check
        mf, layers = model_matmul_flops(model)
        print("  model check: %s, %d matmul layers with gemm_align %d: (fwd + bwd FLOPs) x "
              "batch %d = %.1f GFLOP; trace %.1f GFLOP (%+.2f %%)"
              % (os.path.relpath(model, REPO), layers, ALIGN, batch, mf * batch / 1e9,
                 fl / 1e9, 100 * (fl / (mf * batch) - 1) if mf else 0))
    return {"flops": fl, "us": us, "charged": nf + nb, "kernels": k, "peak": peak,
            "passes": tot, "nf": nf, "nb": nb}


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("traces", nargs="*", help="torch.profiler traces (.json.gz); default: "
                    "the two H200 fit traces")
    ap.add_argument("--iters", type=int, default=2, help="iterations in each trace")
    ap.add_argument("--kernel-overhead-us", type=float, default=4.0,
                    help="ddpsim's kernel_overhead, taken off per kernel it charges (default 4)")
    ap.add_argument("--gpus", default=os.path.join(REPO, "topologies", "gpus.yaml"),
                    help="the GPU table the peaks come from (default: %(default)s)")
    ap.add_argument("--shapes", action="store_true", help="list each shape and kernel")
    ap.add_argument("--no-model-check", action="store_true",
                    help="skip the check against models/MODEL.yaml")
    a = ap.parse_args(argv)
    traces = a.traces or [os.path.join(REPO, p) for p in DEFAULT_TRACES]
    try:
        res = []
        for t in traces:
            check = None if a.no_model_check else trace_model(t)
            res.append(trace_report(t, a.iters, a.kernel_overhead_us, a.gpus, a.shapes, check))
        peaks = set(r["peak"] for r in res)
        if len(peaks) != 1:
            raise InputError("the traces' peaks differ (%s): pool them by hand"
                             % ", ".join("%g" % p for p in sorted(peaks)))
        peak = peaks.pop()
        print("pooled, every trace's iteration once:")
        rate_line("forward", sum(r["passes"]["fwd"][0] for r in res),
                  sum(r["passes"]["fwd"][1] for r in res), a.kernel_overhead_us,
                  sum(r["nf"] for r in res), peak)
        rate_line("backward (dgrad + wgrad)",
                  sum(r["passes"]["dgrad"][0] + r["passes"]["wgrad"][0] for r in res),
                  sum(r["passes"]["dgrad"][1] + r["passes"]["wgrad"][1] for r in res),
                  a.kernel_overhead_us, sum(r["nb"] for r in res), peak)
        rate_line("all, an overhead per GEMM kernel", sum(r["flops"] for r in res),
                  sum(r["us"] for r in res), a.kernel_overhead_us,
                  sum(r["kernels"] for r in res), peak)
        rate = rate_line("all (ddpsim's kernels)", sum(r["flops"] for r in res),
                         sum(r["us"] for r in res), a.kernel_overhead_us,
                         sum(r["charged"] for r in res), peak)
        print("gpus.yaml matmul_half: %.1f / %g TFLOPS = %.3f" % (rate, peak,
                                                                  round(rate / peak, 3)))
    except InputError as e:
        print("half_gemm_rates: %s" % e, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
