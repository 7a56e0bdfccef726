#!/usr/bin/env python3
"""What ddpsim's kernel_overhead (4 us a kernel) stands for, from torch.profiler traces:
the GPU's idle gap between back-to-back kernels and the floor of a kernel that moves few
bytes, measured on the fit traces; then, on every trace, what PyTorch's elementwise and
reduction kernels cost the stream against ddpsim's roofline + kernel_overhead and two
decompositions built from the fit traces' gap and floors.

Per trace (a bench/torch_measure.py --profile-dir trace: two iterations, one GPU):

gap    On each stream, the GPU activities (kernels, memcpys, memsets) in start order. A pair
       (A, B) is "queued" when B's launch call (cudaLaunchKernel, cuLaunchKernelEx,
       cudaMemsetAsync, ..., matched by the `correlation` id) returned at least --ahead-us
       before A ended: the host was ahead, so B waited only for the GPU. gap = B.start -
       A.end over the queued pairs (the other pairs measure the host). Also per iteration:
       the GPU activities, their busy time, and activities x the median gap.
floor  The kernels of four PyTorch families (vectorized_elementwise_kernel,
       unrolled_elementwise_kernel, the legacy elementwise_kernel, reduce_kernel) that are
       the only kernel of their aten op, their bytes from the op's recorded inputs (Input
       Dims x Input type): the inputs plus one output as large as the largest input (copy_'s
       destination is an input already; a reduction's small output is left out). The
       durations of those moving at most --small-kb, per family (queued or not: a kernel's
       duration does not depend on the host), and a line dur = floor + bytes / BW fitted
       by least squares to the medians of power-of-two byte bins up to --fit-max-mb.
cost   Per family and byte range, over every kernel of the roofline families (vectorized,
       unrolled, reduce: ddpsim charges the legacy kernels SM cycles, sim/train/legacy_ew.h):
         traced  dur + the fit traces' median gap (what the kernel costs a stream the host
                 keeps full; the "queued" line sums dur + its own gap over queued kernels)
         ddpsim  bytes / --mem-gbps + --overhead-us           (compute_roofline.c's roofline)
         max     gap + max(floor, bytes / --mem-gbps)
         sum     gap + floor + bytes / --mem-gbps
       gap and floor (per family) pooled over the --fit traces only: the --check traces are
       validation and set nothing.

  python3 bench/kernel_floor.py --fit FIT.json.gz... [--check OTHER.json.gz...]
      [--mem-gbps 4172] [--overhead-us 4] [--iters 2]

Standard library only. --mem-gbps default 4172: H200's measured copy rate, what ddpsim
charges bytes at there (topologies/gpus.yaml, efficiency.memory 0.869 x 4800 GB/s).
"""

import argparse
import collections
import gzip
import json
import math

DTYPE_BYTES = {"float": 4, "c10::Half": 2, "c10::BFloat16": 2, "double": 8, "long int": 8,
               "int": 4, "bool": 1, "unsigned char": 1}
LAUNCH_CATS = ("cuda_runtime", "cuda_driver")
GPU_CATS = ("kernel", "gpu_memcpy", "gpu_memset")
FAMILIES = (("void at::native::vectorized_elementwise_kernel", "vectorized"),
            ("void at::native::unrolled_elementwise_kernel", "unrolled"),
            ("void at::native::elementwise_kernel", "legacy"),
            ("void at::native::reduce_kernel", "reduce"))
ROOFLINE = ("vectorized", "unrolled", "reduce")
BINS = ((0, 64 << 10), (64 << 10, 1 << 20), (1 << 20, 16 << 20), (16 << 20, 1 << 50))


def family(name):
    return next((fam for prefix, fam in FAMILIES if name.startswith(prefix)), None)


def quantiles(xs):
    """p10, median, p90 (nan when empty)."""
    xs = sorted(xs)
    if not xs:
        return (math.nan,) * 3
    return tuple(xs[min(len(xs) - 1, int(p * len(xs)))] for p in (0.1, 0.5, 0.9))


def op_bytes(op, fam):
    args = op["args"]
    sizes = [math.prod(d) * DTYPE_BYTES[t]
             for d, t in zip(args.get("Input Dims", []), args.get("Input type", []))
             if d and t in DTYPE_BYTES]
    if not sizes:
        return None
    extra = 0 if fam == "reduce" or op["name"] == "aten::copy_" else max(sizes)
    return sum(sizes) + extra


def load(path):
    with gzip.open(path, "rt") if path.endswith(".gz") else open(path) as f:
        return json.load(f)["traceEvents"]


def analyse(path, ahead_us):
    """gaps: [us]; kernels: [(family, bytes, dur, own gap or None)]; (GPU activities,
    their busy us) over the whole trace."""
    events = load(path)
    launch_end = {e["args"]["correlation"]: e["ts"] + e["dur"] for e in events
                  if e.get("cat") in LAUNCH_CATS and "correlation" in e.get("args", {})}
    ops = collections.defaultdict(list)
    for e in events:
        if e.get("cat") == "cpu_op" and "Input Dims" in e.get("args", {}):
            ops[e["args"].get("External id")].append(e)
    kernels_of = collections.Counter(e["args"].get("External id") for e in events
                                     if e.get("cat") == "kernel")
    streams = collections.defaultdict(list)
    for e in events:
        if e.get("cat") in GPU_CATS:
            streams[e["args"].get("stream")].append(e)
    gaps, own_gap = [], {}
    for acts in streams.values():
        acts.sort(key=lambda e: e["ts"])
        for a, b in zip(acts, acts[1:]):
            end = a["ts"] + a["dur"]
            issued = launch_end.get(b["args"].get("correlation"))
            if issued is not None and issued <= end - ahead_us:
                gaps.append(b["ts"] - end)
                own_gap[id(a)] = b["ts"] - end
    kernels = []
    for k in events:
        fam = family(k["name"]) if k.get("cat") == "kernel" else None
        ext = k.get("args", {}).get("External id")
        if fam is None or kernels_of[ext] != 1 or not ops.get(ext):
            continue
        nbytes = op_bytes(min(ops[ext], key=lambda o: o["dur"]), fam)  # the innermost op
        if nbytes is not None:
            kernels.append((fam, nbytes, k["dur"], own_gap.get(id(k))))
    acts = [e for a in streams.values() for e in a]
    return gaps, kernels, (len(acts), sum(e["dur"] for e in acts))


def line_fit(rows, max_bytes):
    """(floor us, GB/s, points) of dur = floor + bytes / BW over power-of-two bin medians."""
    bins = collections.defaultdict(list)
    for nbytes, dur in rows:
        if nbytes <= max_bytes:
            bins[int(math.log2(max(nbytes, 1)))].append((dur, nbytes))
    pts = [sorted(b)[len(b) // 2] for b in bins.values()]
    if len(pts) < 2:
        return math.nan, math.nan, len(pts)
    mx = sum(p[1] for p in pts) / len(pts)
    my = sum(p[0] for p in pts) / len(pts)
    sxx = sum((p[1] - mx) ** 2 for p in pts)
    slope = sum((p[1] - mx) * (p[0] - my) for p in pts) / sxx
    return my - slope * mx, (1e-3 / slope if slope > 0 else math.inf), len(pts)


def human(b):
    for unit, size in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if b >= size:
            return "inf" if b >= 1 << 50 else "%d%s" % (b // size, unit)
    return str(b)


def describe(name, gaps, kernels, activity, args):
    print("== %s" % name)
    g50 = quantiles(gaps)[1]
    print("per iteration: %d GPU activities, busy %.2f ms; activities x median gap %.2f ms" %
          (activity[0] / args.iters, activity[1] / args.iters / 1e3,
           activity[0] / args.iters * g50 / 1e3))
    print("gap us (queued pairs)       n %5d  p10 %5.2f  median %5.2f  p90 %5.2f  mean %5.2f" %
          (len(gaps), *quantiles(gaps), sum(gaps) / max(len(gaps), 1)))
    for fam in ("vectorized", "unrolled", "legacy", "reduce"):
        durs = [d for f, b, d, _ in kernels if f == fam and b <= args.small_kb * 1024]
        if durs:
            print("floor us %-10s <=%gK  n %5d  p10 %5.2f  median %5.2f  p90 %5.2f" %
                  (fam, args.small_kb, len(durs), *quantiles(durs)))
    for fam in ("vectorized", "unrolled", "reduce"):
        floor, gbps, n = line_fit([(b, d) for f, b, d, _ in kernels if f == fam],
                                  args.fit_max_mb * (1 << 20))
        if n >= 2:
            print("line %-10s dur = %.2f us + bytes / %.0f GB/s  (%d bin medians <= %g MiB)" %
                  (fam, floor, gbps, n, args.fit_max_mb))


def costs(kernels, gap, floors, args):
    bw = args.mem_gbps * 1e3  # bytes per us
    print("cost us summed (gap %.2f; floors %s; %g GB/s)   ratios to traced: ddpsim max sum" %
          (gap, " ".join("%s %.2f" % kv for kv in floors.items()), args.mem_gbps))
    print("  %-10s %-9s %5s %9s %9s %9s %9s" % ("family", "bytes", "n", "traced", "ddpsim",
                                                "max", "sum"))

    def row(fam, label, rows, traced):
        d = sum(b / bw + args.overhead_us for _, b, _, _ in rows)
        m = sum(gap + max(floors[f], b / bw) for f, b, _, _ in rows)
        s = sum(gap + floors[f] + b / bw for f, b, _, _ in rows)
        print("  %-10s %-9s %5d %9.1f %9.1f %9.1f %9.1f   %.2f %.2f %.2f" %
              (fam, label, len(rows), traced, d, m, s, d / traced, m / traced, s / traced))
    for fam in ROOFLINE + ("all",):
        for lo, hi in BINS + ((0, 1 << 50),):
            rows = [k for k in kernels if (fam == "all" or k[0] == fam) and lo <= k[1] < hi
                    and k[0] in ROOFLINE]
            if rows:
                label = "all" if hi - lo == 1 << 50 else "%s-%s" % (human(lo), human(hi))
                row(fam, label, rows, sum(dur + gap for _, _, dur, _ in rows))
    queued = [k for k in kernels if k[0] in ROOFLINE and k[3] is not None]
    if queued:
        row("queued", "all", queued, sum(dur + own for _, _, dur, own in queued))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--fit", nargs="+", required=True, help="fit traces: gap and floors")
    ap.add_argument("--check", nargs="*", default=[], help="validation traces: checked only")
    ap.add_argument("--iters", type=int, default=2, help="iterations in a trace")
    ap.add_argument("--ahead-us", type=float, default=5.0)
    ap.add_argument("--small-kb", type=float, default=64)
    ap.add_argument("--fit-max-mb", type=float, default=4)
    ap.add_argument("--mem-gbps", type=float, default=4172)
    ap.add_argument("--overhead-us", type=float, default=4.0)
    args = ap.parse_args()
    data = {p: analyse(p, args.ahead_us) for p in args.fit + args.check}
    pooled_gaps = [g for p in args.fit for g in data[p][0]]
    pooled = [k for p in args.fit for k in data[p][1]]
    gap = quantiles(pooled_gaps)[1]
    floors = {f: quantiles([d for ff, b, d, _ in pooled
                            if ff == f and b <= args.small_kb * 1024])[1] for f in ROOFLINE}
    print("### measured (every trace) ###")
    for p in args.fit + args.check:
        describe(p.split("/")[-1] + (" [fit]" if p in args.fit else " [check]"), *data[p], args)
    print("\n### pooled over the fit traces: gap median %.2f us; floors (median <= %gK) %s" %
          (gap, args.small_kb, ", ".join("%s %.2f us" % kv for kv in floors.items())))
    for p in args.fit + args.check:
        print("== %s%s" % (p.split("/")[-1], " [fit]" if p in args.fit else " [check]"))
        costs(data[p][1], gap, floors, args)


if __name__ == "__main__":
    main()
