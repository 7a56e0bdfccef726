#!/usr/bin/env python3
"""Where SE-ResNeXt's host time goes: the squeeze-and-excitation gates' share of
the host's forward and backward in a torch.profiler trace, against their share
of the model file's counts (host_dispatches, host_nodes), and what the gates
cost per counted unit if the trace's other ops cost what bench/host_calibrate.py
measured for the plain model on the same machine.

Windows and charging as bench/host_kinds.py (bench/host_costs.py's iterations):
forward = the main thread's top-level cpu ops from zero_grad's end to the first
autograd node, each charged its duration plus the gap to the next; backward =
the autograd nodes, each charged its duration plus the gap to the next. A unit
belongs to the gate when it is one of the gate's own ops (tools/torch_models.py,
SqueezeExcitation): the 1x1 convolutions and the ReLU on a [N, C, 1, 1] input,
the sigmoid, the adaptive pool that feeds a convolution (not the head's); in
backward the nodes on [N, C, 1, 1] gradients (ConvolutionBackward0,
ReluBackward0, SigmoidBackward0, MeanBackward1 but the head's, the first one)
and the AccumulateGrad nodes that follow a gate's ConvolutionBackward0. The
join (addcmul forward, AddcmulBackward0) replaces the plain block's residual
add and is reported on its own line. Counts are per iteration; times are the
mean of the trace's two iterations, profiled (the profiler inflates them).

Per-unit costs, unprofiled: the trace's plain part (every unit not the gate's or
the join's) is scaled to the plain model's calibrated phase (forward ms,
backward ms of host_calibrate.py on the same machine), and the gate's and
join's profiled time are scaled by the same factor. That assumes the profiler
inflates the gate's ops as much as the others; it is an estimate, not a fit.

    python3 bench/host_se.py \\
      bench/results/gpu-2026-11-26d-h200/prof/se_resnext101_32x4d-fp32-b32.json.gz \\
      --plain-fwd-ms 12.445 --plain-bwd-ms 15.200

(12.445 and 15.200: call2/host-resnext101_32x4d.csv's medians, the lent H200 of
2026-11-26 call d, the same session as the trace.) `--probe TRACE...` prints, per
trace and iteration, the median profiled duration of the same plain ops (forward
relu_, batch_norm, conv2d; backward ReluBackward0, CudnnBatchNormBackward0,
ConvolutionBackward0, AccumulateGrad): how fast each thread ran in that trace.

What it found (2026-11-26, the SE-ResNeXt-101 32x4d fp32 b32 row of call d: host
enqueue 54.421 ms, GPU kernels 40.13 ms, ddpsim 45.38 ms):
- The counts are right. The trace has 620 top-level forward ops and 960 nodes per
  iteration: the model file's 614 host_ops and 957 host_nodes plus the loss's 6
  and 3 (plain ResNeXt-101's trace: 455 = 449 + 6, 663 = 660 + 3). Each gate is
  5 forward calls (pool, conv, relu, conv, sigmoid; the join addcmul replaces the
  residual add) and 9 nodes (MeanBackward1, 2 x ConvolutionBackward0 + 2
  AccumulateGrad, ReluBackward0, SigmoidBackward0), as the file counts them.
  No op in the window syncs (cudaDeviceSynchronize only at the end, no
  cudaStreamSynchronize or memcpy), and no launch blocks (longest
  cudaLaunchKernel 54 us: the launch queue never filled).
- The gate's units cost less than the plain ones, per unit, in the same trace:
  forward 68.0 us profiled each (its 1x1 convs with bias 105.6, though CUDA's
  cudnn path adds the bias as a second launch) against 82.2 for the plain ops
  (their convs 142.7); backward 79.6 against 85.7 per node (gate convs 215.9
  against 266.2). cuDNN's per-shape lookup does not make the tiny convs dearer.
  The one dearer unit is the join's AddcmulBackward0, 183.8 us profiled (six
  aten::mul, one aten::sum for the gate's gradient: 5 launches) where the plain AddBackward0 launches
  nothing (5.5-6.8 us in plain ResNeXt-101's trace): about 1.7 ms an iteration.
- Scaled to the calibration of the plain model on the same machine: forward
  16.905 ms (23.5 us / dispatch over 719), backward 23.564 ms (24.6 us / node over
  957), with the step (1.8 ms) 42.3 ms of host, not 54.4. ddpsim charges 16.57 +
  20.96 ms: its pooled host_node 21.9 us (BERT's 15.6 in the pool) is 2.6 ms
  under this model's node mix; the rest of the row's gap is not the gates.
- The trace's backward ran in a slow mode: its plain nodes took 1.3-2.7x what
  the same nodes took in the six other H200 fp32 traces, other lent machines
  (ReluBackward0 47-49 us against 18-34, CudnnBatchNormBackward0 113 against
  43-83, AccumulateGrad 12 against 5-9.5), while its second iteration's forward was in their range
  (relu_ 16.1 against 13.7-28.9). The same machine's calibration shows the
  modes unprofiled: ResNeXt-101's backward 14.2-17.8 ms in 8 of 10 iterations
  and 23.9-24.2 in 2, ResNet-50's 7.9-8.8 in 4 and 12.3-13.8 in 6 (1.6x).
  Backward at 1.6x: 16.9 + 1.6 x 23.6 + 1.8 = 56.5 ms, the run's 54.4; the
  run's fastest iteration (gpu_ms_min 45.314) is ddpsim's 45.38. Plain
  ResNeXt-101 fp32 b32 itself took 36.44 ms (26b host_phases.csv) and 53.29 ms
  (26b torch.csv, min 43.41) on two lent H200s: the host's speed, not the
  gates, moves this row.
- ddpsim with the topology's compute keys set (a copy of
  validation/topologies/nd-h200-v5.yaml beside it, so its gpus.yaml is the same):
  host_dispatch 23.05us, host_node 21.9us (the defaults) 45.382 ms; 23.5us and
  24.6us (this trace's per-unit costs in the calibration's mode) 47.473 ms;
  23.5us and 39.4us (backward in the 1.6x mode) 58.679 ms; measured 54.916
  (min 45.314). What the model would need is the host's mode, which no input
  carries, not a dearer gate; a per-node-kind cost (ConvolutionBackward0 ~75 us,
  plain other ~27, AccumulateGrad ~5.4, the join ~52, unprofiled by the scaling
  above; forward conv ~51 against other ~22 us a call) would move this model by
  the 2.6 ms its node mix differs from the pool, and stays a one-trace estimate.
Standard library only.
"""

import argparse
import collections
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import host_costs  # noqa: E402

GEMM = "aten::conv2d"
GATE_NODE_NAMES = ("ConvolutionBackward0", "ReluBackward0", "SigmoidBackward0", "MeanBackward1")


def dims(e):
    d = e.get("args", {}).get("Input Dims") or [[]]
    return d[0] if d else []


def one_by_one(d):
    return len(d) == 4 and d[2] == 1 and d[3] == 1


def forward_units(w):
    """(class, kind, charged us) per top-level forward op; class gate/join/plain,
    kind gemm/other."""
    top = host_costs.outermost(w["fwd"])
    out = []
    for i, e in enumerate(top):
        end = top[i + 1]["ts"] if i + 1 < len(top) else w["b0"]
        us = end - e["ts"]
        name, d = e["name"], dims(e)
        nxt = top[i + 1]["name"] if i + 1 < len(top) else ""
        gate = (name in ("aten::conv2d", "aten::relu_") and one_by_one(d)) or \
            name == "aten::sigmoid" or (name == "aten::adaptive_avg_pool2d" and nxt == GEMM)
        cls = "gate" if gate else "join" if name == "aten::addcmul" else "plain"
        out.append((cls, "gemm" if name == GEMM else "other", us))
    return out


def backward_units(w, inner):
    """(class, kind, charged us) per autograd node: kind gemm (convolution),
    accumulate, other."""
    ns = w["nodes"]
    out, head_mean, in_gate_conv = [], True, False
    for i, n in enumerate(ns):
        end = ns[i + 1]["ts"] if i + 1 < len(ns) else w["b1"]
        name = n["name"].split(": ")[-1]
        d = dims(inner.get(id(n), n))
        if name == "torch::autograd::AccumulateGrad":
            cls = "gate" if in_gate_conv else "plain"
            kind = "accumulate"
        else:
            gate = name in GATE_NODE_NAMES and one_by_one(d)
            if name == "MeanBackward1" and head_mean:
                head_mean, gate = False, False
            in_gate_conv = gate and name == "ConvolutionBackward0"
            cls = "gate" if gate else "join" if name == "AddcmulBackward0" else "plain"
            kind = "gemm" if name == "ConvolutionBackward0" else "other"
        out.append((cls, kind, end - n["ts"]))
    return out


def node_first_inner(ev, w):
    """Each node's first nested cpu op (the one that carries the gradient's dims)."""
    tid = w["nodes"][0]["tid"]
    ops = sorted((e for e in ev if e.get("ph") == "X" and e.get("cat") == "cpu_op" and
                  e["tid"] == tid and w["b0"] <= e["ts"] <= w["b1"] and
                  not e["name"].startswith("autograd::")), key=lambda e: e["ts"])
    out, j = {}, 0
    for n in w["nodes"]:
        while j < len(ops) and ops[j]["ts"] < n["ts"]:
            j += 1
        if j < len(ops) and ops[j]["ts"] < n["ts"] + n["dur"]:
            out[id(n)] = ops[j]
    return out


def tally(rows_per_iter):
    """{(class, kind): [count per iteration, mean profiled us]}"""
    t = collections.defaultdict(lambda: [0, 0.0])
    n = len(rows_per_iter)
    for rows in rows_per_iter:
        for cls, kind, us in rows:
            t[(cls, kind)][0] += 1
            t[(cls, kind)][1] += us
    return {k: [v[0] // n, v[1] / n] for k, v in t.items()}


def report(phase, t, plain_ms):
    total = sum(v[1] for v in t.values())
    plain = sum(v[1] for k, v in t.items() if k[0] == "plain")
    s = plain_ms * 1e3 / plain if plain_ms else None
    print("%s: profiled %.0f us, %d units%s" % (
        phase, total, sum(v[0] for v in t.values()),
        "; scale %.4f (plain part %.0f us profiled = %.3f ms calibrated)" % (s, plain, plain_ms)
        if s else ""))
    for cls in ("plain", "gate", "join"):
        for k in sorted(k for k in t if k[0] == cls):
            c, us = t[k]
            print("  %-5s %-10s %4d x  %8.0f us profiled  %7.2f us each%s" % (
                cls, k[1], c, us, us / c, "  -> %6.2f us unprofiled" % (s * us / c) if s else ""))
        c = sum(v[0] for k, v in t.items() if k[0] == cls)
        us = sum(v[1] for k, v in t.items() if k[0] == cls)
        if c:
            print("  %-5s %-10s %4d x  %8.0f us profiled  %7.2f us each%s  (%.1f %% of units, %.1f %% of time)"
                  % (cls, "all", c, us, us / c, "  -> %6.2f us unprofiled, %.3f ms" % (s * us / c, s * us / 1e3)
                     if s else "", 100.0 * c / sum(v[0] for v in t.values()), 100.0 * us / total))
    return s * total / 1e3 if s else None


PROBE_FWD = ("aten::relu_", "aten::batch_norm", "aten::conv2d")
PROBE_BWD = ("ReluBackward0", "CudnnBatchNormBackward0", "ConvolutionBackward0", "AccumulateGrad")


def probe(path):
    """Median profiled duration of the same plain ops per iteration: how fast
    the main thread (forward) and the backward thread ran in this trace."""
    _, _, ws = host_costs.iterations(path)
    for i, w in enumerate(ws):
        top = host_costs.outermost(w["fwd"])
        f = [statistics.median([e["dur"] for e in top if e["name"] == n]) for n in PROBE_FWD]
        b = [statistics.median([n["dur"] for n in w["nodes"] if n["name"].endswith(k)])
             for k in PROBE_BWD]
        print("%s it %d: fwd relu_ %5.1f batch_norm %6.1f conv2d %6.1f | bwd ReluBackward0 %5.1f "
              "CudnnBatchNormBackward0 %6.1f ConvolutionBackward0 %6.1f AccumulateGrad %5.1f us"
              % ((path, i) + tuple(f) + tuple(b)))


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("trace", nargs="+")
    ap.add_argument("--plain-fwd-ms", type=float, default=None)
    ap.add_argument("--plain-bwd-ms", type=float, default=None)
    ap.add_argument("--probe", action="store_true",
                    help="only print each trace's per-iteration medians of plain ops")
    a = ap.parse_args(argv[1:])
    if a.probe:
        for t in a.trace:
            probe(t)
        return 0
    a.trace = a.trace[0]
    ev, _, ws = host_costs.iterations(a.trace)
    fwd = tally([forward_units(w) for w in ws])
    bwd = tally([backward_units(w, node_first_inner(ev, w)) for w in ws])
    print("%s: %d iterations" % (a.trace, len(ws)))
    f = report("forward (top-level ops)", fwd, a.plain_fwd_ms)
    b = report("backward (autograd nodes)", bwd, a.plain_bwd_ms)
    if f and b:
        print("host forward + backward, scaled: %.3f + %.3f = %.3f ms" % (f, b, f + b))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
