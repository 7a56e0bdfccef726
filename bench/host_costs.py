#!/usr/bin/env python3
"""The host's cost per dispatched op (forward) and per autograd node (backward),
from torch.profiler traces of host-bound runs and the same runs' unprofiled time.

For each trace (two profiled iterations; bench/torch_measure.py's `profile`):
  forward window F  main thread, from Optimizer.zero_grad's end to the first
                    autograd node's start: the Python and every op it dispatches;
  ops               top-level cpu_op events in F (an op called from Python; its
                    nested ops, autocast's casts among them, are its own cost);
  casts             outermost aten::to / aten::_to_copy events nested in them
                    (autocast's casts), their count and summed duration X;
  backward window B from the first autograd node's start to the last's end (the
                    engine's thread runs them back to back, its own gaps included);
  nodes             autograd::engine::evaluate_function events in B;
  iteration I       zero_grad's start to Optimizer.step's end: the host's serial
                    work (the main thread waits in backward()).
The profiler inflates host time; the run's own unprofiled iteration U (gpu_ms of
its row, the same process, host-bound) gives s = U / mean(I). Then per trace:
  per op   s * (F - X) / ops,  per cast s * X / casts,  per node s * B / nodes.
Pooled over the traces given: time sums over count sums (each trace weighs by its
work). Prints every term, so the constants in sim/net/topo_compute.c can be re-derived:
  python3 bench/host_costs.py \\
    bench/results/gpu-2026-11-26-h200/prof/resnet50-fp32-b32.json.gz=18.048 \\
    bench/results/gpu-2026-11-26-h200/prof/bert-base-amp-b32-p.json.gz=58.325
Standard library only.
"""

import collections
import gzip
import json
import sys


def outermost(events):
    out, end = [], -1.0
    for e in sorted(events, key=lambda e: (e["ts"], -e["dur"])):
        if e["ts"] >= end:
            out.append(e)
            end = e["ts"] + e["dur"]
    return out


def iterations(path):
    """The trace's events and, per profiled iteration (zero_grad to the next),
    its windows: (events, t0 = end of zero_grad, b0/b1 = first/last backward
    node, its forward cpu ops on the main thread, its nodes, its step)."""
    ev = json.load(gzip.open(path))["traceEvents"]
    cpu = [e for e in ev if e.get("ph") == "X" and e.get("cat") in ("cpu_op", "user_annotation")]
    nodes = sorted((e for e in cpu if e["name"].startswith("autograd::engine::evaluate_function")),
                   key=lambda e: e["ts"])
    bwd_tid = collections.Counter(e["tid"] for e in nodes).most_common(1)[0][0]
    ann = sorted((e for e in cpu if e["cat"] == "user_annotation"), key=lambda e: e["ts"])
    zero = [e for e in ann if "zero_grad" in e["name"]]
    step = [e for e in ann if "Optimizer.step" in e["name"]]
    main_tid = zero[0]["tid"]
    main = sorted((e for e in cpu if e["tid"] == main_tid and e["cat"] == "cpu_op"),
                  key=lambda e: e["ts"])
    out = []
    for i, z in enumerate(zero):
        t0 = z["ts"] + z["dur"]
        nxt = zero[i + 1]["ts"] if i + 1 < len(zero) else float("inf")
        its = [e for e in nodes if t0 < e["ts"] < nxt and e["tid"] == bwd_tid]
        b0, b1 = its[0]["ts"], its[-1]["ts"] + its[-1]["dur"]
        st = [s for s in step if s["ts"] > b0 and s["ts"] < nxt][0]
        out.append(dict(z=z, t0=t0, b0=b0, b1=b1, nodes=its, step=st,
                        fwd=[e for e in main if t0 <= e["ts"] < b0]))
    return ev, main_tid, out


def measure(path):
    rows = []
    for w in iterations(path)[2]:
        fwd = w["fwd"]
        top = outermost(fwd)
        ids = set(id(e) for e in top)
        casts = outermost([e for e in fwd if id(e) not in ids and
                           e["name"] in ("aten::to", "aten::_to_copy")])
        st, z = w["step"], w["z"]
        rows.append(dict(F=w["b0"] - w["t0"], ops=len(top), X=sum(c["dur"] for c in casts),
                         casts=len(casts), B=w["b1"] - w["b0"], nodes=len(w["nodes"]),
                         I=st["ts"] + st["dur"] - z["ts"]))
    return rows


def mean(rows, k):
    return sum(r[k] for r in rows) / len(rows)


def main(argv):
    if len(argv) < 2:
        sys.stderr.write(__doc__)
        return 2
    tot = collections.Counter()
    for arg in argv[1:]:
        path, _, u = arg.rpartition("=")
        rows = measure(path)
        u_us = float(u) * 1e3
        s = u_us / mean(rows, "I")
        F, X, B = mean(rows, "F"), mean(rows, "X"), mean(rows, "B")
        ops, casts, nodes = rows[0]["ops"], rows[0]["casts"], rows[0]["nodes"]
        print("%s: %d iterations; profiled I %.0f us, unprofiled %.0f us, s = %.4f" %
              (path, len(rows), mean(rows, "I"), u_us, s))
        print("  forward  F %.0f us, %d ops, %d casts (X %.0f us): per op %.2f us, per cast %.2f us"
              % (F, ops, casts, X, s * (F - X) / ops, s * X / casts if casts else 0))
        print("  backward B %.0f us, %d nodes: per node %.2f us" % (B, nodes, s * B / nodes))
        tot["op_us"] += s * (F - X)
        tot["ops"] += ops
        tot["cast_us"] += s * X
        tot["casts"] += casts
        tot["node_us"] += s * B
        tot["nodes"] += nodes
    print("pooled: per op %.0f / %d = %.2f us; per cast %.0f / %d = %.2f us; per node %.0f / %d = %.2f us"
          % (tot["op_us"], tot["ops"], tot["op_us"] / tot["ops"], tot["cast_us"], tot["casts"],
             tot["cast_us"] / max(1, tot["casts"]), tot["node_us"], tot["nodes"],
             tot["node_us"] / tot["nodes"]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
