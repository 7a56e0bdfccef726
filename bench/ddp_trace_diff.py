#!/usr/bin/env python3
"""Where DDP's extra time goes: a plain run's torch.profiler trace against DDP runs' of the
same model (bench/torch_measure.py --profile-dir, two iterations each), per iteration.

    python3 bench/ddp_trace_diff.py PLAIN.json.gz DDP.json.gz [DDP2.json.gz ...]
        [--sim DDPSIM_TRACE.csv]

Phases of the host's iteration (host_costs.iterations' windows; the main thread waits in
backward(), so they are serial), each with the GPU's busy and idle time inside it
(kernels, memcpys and memsets, merged):
  zero_grad      Optimizer.zero_grad
  pre-forward    zero_grad's end to the model's first aten::conv2d or aten::linear: under DDP,
                 _pre_forward (Python) and _sync_buffers (flatten, broadcast, unflatten, one
                 copy_ per buffer)
  model forward  that op to the model's last top-level op before the loss
  loss+backward  its end to the first autograd node: DDP's _post_forward
                 (prepare_for_backward), the loss, backward()'s start
  backward       the first node's start to the last's end (the autograd thread)
  finalize       the last node's end to Optimizer.step: the reducer's finalize_backward
                 (copy_bucket_to_grad per gradient), then backward()'s return
  step           Optimizer.step
Then the pieces inside: pre-forward's ops (count, profiled us, the gaps before them);
AccumulateGrad nodes and what runs in them (the reducer's hook: mul_out, the bucket's
c10d::allreduce_); finalize's ops. All times are profiled microseconds, per iteration;
the profiler inflates host time (docs/strategies.md, "The host costs").

--sim: a ddpsim --trace CSV of the DDP run; prints its iteration 1's host and GPU time per
DDP part (buffers, hooks, bucket calls, copies back) to set beside the profile.
Bad input (a file it cannot read, JSON that is not valid or ends early, a trace without
traceEvents or without a profiled iteration, a --sim CSV without its columns) stops it
with a message naming the file (and the line or key) and exit status 2.
Standard library only.
"""
import argparse
import bisect
import collections
import csv
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import host_costs as hc  # noqa: E402
from csv_input import InputError, num  # noqa: E402

SIM_COLUMNS = ("name", "kind", "iter", "stream", "start_us", "end_us")

HOST_CATS = ("cpu_op", "user_annotation", "cuda_runtime", "cuda_driver")
GPU_CATS = ("kernel", "gpu_memcpy", "gpu_memset")
PHASES = ("zero_grad", "pre-forward", "model forward", "loss+backward", "backward",
          "finalize", "step")


def busy_intervals(ev):
    iv = []
    for e in sorted((e for e in ev if e.get("ph") == "X" and e.get("cat") in GPU_CATS),
                    key=lambda e: e["ts"]):
        s, t = e["ts"], e["ts"] + e["dur"]
        if iv and s <= iv[-1][1]:
            iv[-1][1] = max(iv[-1][1], t)
        else:
            iv.append([s, t])
    return iv


def gpu_busy(iv, a, b):
    return sum(max(0.0, min(t, b) - max(s, a)) for s, t in iv)


def nested(outer, events):
    """Events (sorted by ts, with their ts list) inside each of `outer`, by name:
    {name: [count, total dur]}."""
    evs, ts = events
    out = collections.defaultdict(lambda: [0, 0.0])
    for o in outer:
        j = bisect.bisect_left(ts, o["ts"])
        while j < len(evs) and evs[j]["ts"] <= o["ts"] + o["dur"]:
            e = evs[j]
            j += 1
            if e is not o and e["ts"] + e["dur"] <= o["ts"] + o["dur"]:
                out[e["name"]][0] += 1
                out[e["name"]][1] += e["dur"]
    return out


def top_ops(ops, prev_end):
    """{name: [count, dur, gaps before]} of top-level ops in order after prev_end."""
    out = collections.defaultdict(lambda: [0, 0.0, 0.0])
    for e in ops:
        r = out[e["name"]]
        r[0] += 1
        r[1] += e["dur"]
        r[2] += e["ts"] - prev_end
        prev_end = e["ts"] + e["dur"]
    return out, prev_end


def iterations(path):
    """host_costs.iterations(path), its failures on bad input as InputError naming path."""
    try:
        return hc.iterations(path)
    except json.JSONDecodeError as e:
        raise InputError("%s: line %d column %d: not valid JSON (%s)" % (path, e.lineno, e.colno,
                                                                        e.msg))
    except OSError as e:  # a missing file, one that is not gzip
        raise InputError("cannot read %s: %s" % (path, e.strerror or e))
    except (EOFError, UnicodeDecodeError) as e:  # cut short, not text
        raise InputError("cannot read %s: %s" % (path, e))
    except KeyError as e:
        raise InputError("%s: no key %s" % (path, e))
    except (IndexError, TypeError, AttributeError):
        raise InputError("%s: key traceEvents: no profiled iteration (autograd nodes between "
                         "zero_grad and Optimizer.step annotations)" % path)


def analyse(path):
    ev, main_tid, its = iterations(path)
    iv = busy_intervals(ev)
    host = sorted((e for e in ev if e.get("ph") == "X" and e.get("cat") in HOST_CATS
                   and e["name"] != "DistributedDataParallel.forward"),
                  key=lambda e: (e["ts"], -e["dur"]))
    by_tid = collections.defaultdict(list)
    for e in host:
        by_tid[e["tid"]].append(e)
    index = {t: (v, [e["ts"] for e in v]) for t, v in by_tid.items()}
    out = []
    for w in its:
        z, st = w["z"], w["step"]
        main = [e for e in by_tid[main_tid] if e["cat"] == "cpu_op"
                and z["ts"] + z["dur"] <= e["ts"] < w["b0"]]
        top = hc.outermost(main)
        model = [e for e in top if e["name"] in ("aten::conv2d", "aten::linear")]
        loss = [e for e in top if "loss" in e["name"] or e["name"] in
                ("aten::sum", "aten::mean")]
        first = model[0]["ts"]
        last = [e for e in model if not loss or e["ts"] < loss[0]["ts"]][-1]
        bounds = [z["ts"], z["ts"] + z["dur"], first, last["ts"] + last["dur"], w["b0"],
                  w["b1"], st["ts"], st["ts"] + st["dur"]]
        ph = {}
        for k, name in enumerate(PHASES):
            a, b = bounds[k], bounds[k + 1]
            ph[name] = (b - a, gpu_busy(iv, a, b))
        pre = [e for e in top if e["ts"] < first]
        pre_ops, pre_end = top_ops(pre, z["ts"] + z["dur"])
        bt = w["nodes"][0]["tid"]
        acc = [n for n in w["nodes"] if n["name"].endswith("AccumulateGrad")]
        other = [n for n in w["nodes"] if not n["name"].endswith("AccumulateGrad")]
        fin = hc.outermost([e for e in by_tid[bt] if e["cat"] == "cpu_op"
                            and w["b1"] <= e["ts"] < st["ts"]])
        fin_ops, fin_end = top_ops(fin, w["b1"])
        out.append(dict(
            phases=ph, pre_ops=pre_ops, pre_tail=first - pre_end,
            acc=(len(acc), sum(n["dur"] for n in acc)),
            other=(len(other), sum(n["dur"] for n in other)),
            gaps=w["b1"] - w["b0"] - sum(n["dur"] for n in w["nodes"]),
            acc_in=nested(acc, index[bt]), fin_ops=fin_ops,
            fin_tail=st["ts"] - fin_end if fin else st["ts"] - w["b1"],
            post=nested([e for e in ev if e.get("name") == "DistributedDataParallel.forward"
                         and z["ts"] < e["ts"] < w["b0"]], index[main_tid]),
            events=sum(1 for e in host if z["ts"] <= e["ts"] < st["ts"] + st["dur"])))
    return out


def mean(rows, f):
    return sum(f(r) for r in rows) / len(rows)


def print_trace(path, rows):
    print("%s (%d iterations; profiled us per iteration, mean [each])" % (path, len(rows)))
    print("  %-14s %18s %18s %18s" % ("phase", "host", "GPU busy", "GPU idle"))
    for name in PHASES:
        h = [r["phases"][name][0] for r in rows]
        g = [r["phases"][name][1] for r in rows]
        i = [a - b for a, b in zip(h, g)]
        fmt = lambda v: "%7.0f [%s]" % (sum(v) / len(v), " ".join("%.0f" % x for x in v))
        print("  %-14s %18s %18s %18s" % (name, fmt(h), fmt(g), fmt(i)))
    tot = [sum(p[0] for p in r["phases"].values()) for r in rows]
    print("  %-14s %7.0f; host events (cpu ops, runtime calls) %.0f" % (
        "iteration", sum(tot) / len(tot), mean(rows, lambda r: r["events"])))
    n, d = rows[0]["acc"][0], mean(rows, lambda r: r["acc"][1])
    print("  backward: %d AccumulateGrad %.0f us (%.2f each), %d other nodes %.0f us "
          "(%.2f each), gaps %.0f us" % (
              n, d, d / n, rows[0]["other"][0], mean(rows, lambda r: r["other"][1]),
              mean(rows, lambda r: r["other"][1]) / rows[0]["other"][0],
              mean(rows, lambda r: r["gaps"])))
    for title, key in (("pre-forward top-level ops", "pre_ops"),
                       ("inside AccumulateGrad", "acc_in"), ("finalize ops", "fin_ops")):
        names = sorted(rows[0][key], key=lambda k: -rows[0][key][k][1])
        if not names:
            continue
        print("  %s: count, us, us each%s" % (title, ", gaps before" if key != "acc_in" else ""))
        for k in names:
            c = mean(rows, lambda r: r[key].get(k, [0, 0, 0])[0])
            d = mean(rows, lambda r: r[key].get(k, [0, 0, 0])[1])
            gap = (", %.0f" % mean(rows, lambda r: r[key].get(k, [0, 0, 0])[2])
                   if key != "acc_in" else "")
            print("    %-50s %6.1f %8.0f %7.2f%s" % (k[:50], c, d, d / c if c else 0, gap))
    if rows[0]["pre_ops"]:
        print("  pre-forward: last op's end to the model's first op %.0f us" %
              mean(rows, lambda r: r["pre_tail"]))
    if rows[0]["fin_ops"]:
        print("  finalize: last op's end to Optimizer.step %.0f us" %
              mean(rows, lambda r: r["fin_tail"]))
    print()


def sim_parts(path):
    """Iteration 1 of a ddpsim --trace CSV: {(part, host or GPU): [ops, microseconds]};
    InputError for a file it cannot read, a missing column or a time that is no number."""
    try:
        with open(path, newline="") as f:
            # keep each row's line in the file (the header and # comments counted)
            lines = [(n, line) for n, line in enumerate(f, start=1) if not line.startswith("#")]
    except (OSError, UnicodeDecodeError) as e:
        raise InputError("cannot read %s: %s" % (path, getattr(e, "strerror", None) or e))
    reader = csv.DictReader(line for _, line in lines)
    missing = [k for k in SIM_COLUMNS if k not in (reader.fieldnames or [])]
    if missing:
        raise InputError("%s:%d: no column %s" % (path, lines[0][0] if lines else 1, missing[0]))
    rows = [(lines[i + 1][0], r) for i, r in enumerate(reader)]
    parts = collections.defaultdict(lambda: [0, 0.0])

    def part(r):
        n = r["name"]
        if n.startswith("buffers"):
            return "buffers: " + n.split(".")[-1] if "." in n else "buffers: broadcast"
        if n.endswith(".to_grad"):
            return "copies back (finalize)"
        if n.endswith(".call"):
            return "bucket calls"
        if n == "hook" or n.endswith(".to_bucket") or n.endswith(".grad_div"):
            return "hooks (copies into buckets)"
        if r["kind"] == "allreduce":
            return "all-reduce"
        return None
    for line, r in rows:
        short = [k for k in SIM_COLUMNS if r[k] is None]
        if short:
            raise InputError("%s:%d: no value for %s (fewer fields than the header)"
                             % (path, line, short[0]))
        if r["iter"] != "1":
            continue
        p = part(r)
        if p is None:
            continue
        k = (p, "host" if r["stream"] == "host" else "GPU")
        parts[k][0] += 1
        parts[k][1] += num(r, "end_us", path, line) - num(r, "start_us", path, line)
    return parts


def print_sim(path, parts):
    print("%s, iteration 1: ddpsim's DDP parts (ops, us)" % path)
    for k in sorted(parts):
        print("  %-32s %-4s %5d %9.1f" % (k[0], k[1], parts[k][0], parts[k][1]))
    print()


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("traces", nargs="+")
    ap.add_argument("--sim", help="a ddpsim --trace CSV of the DDP run")
    a = ap.parse_args(argv[1:])
    try:
        results = [(p, analyse(p)) for p in a.traces]
        sim = sim_parts(a.sim) if a.sim else None  # read before printing anything
    except InputError as e:
        print("ddp_trace_diff: %s" % e, file=sys.stderr)
        return 2
    for p, rows in results:
        print_trace(p, rows)
    base = results[0][1]
    for p, rows in results[1:]:
        print("%s minus %s, host per phase (profiled us; mean, and iteration 1 alone):" % (
            os.path.basename(p), os.path.basename(a.traces[0])))
        tot_m = tot_1 = 0.0
        for name in PHASES:
            dm = mean(rows, lambda r: r["phases"][name][0]) - mean(
                base, lambda r: r["phases"][name][0])
            d1 = rows[-1]["phases"][name][0] - base[-1]["phases"][name][0]
            im = mean(rows, lambda r: r["phases"][name][0] - r["phases"][name][1]) - mean(
                base, lambda r: r["phases"][name][0] - r["phases"][name][1])
            tot_m += dm
            tot_1 += d1
            print("  %-14s %+8.0f %+8.0f   GPU idle %+8.0f" % (name, dm, d1, im))
        print("  %-14s %+8.0f %+8.0f" % ("iteration", tot_m, tot_1))
        print()
    if a.sim:
        print_sim(a.sim, sim)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
