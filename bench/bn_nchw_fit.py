#!/usr/bin/env python3
"""cuDNN's NCHW batch-norm rates (sim/train/norm.c BN_FWD_ELEMS_PER_CTA_CYCLE,
BN_BWD_ELEMS_PER_CTA_CYCLE, BN_ELEMS_PER_SM_CYCLE) from a torch.profiler trace.

cuDNN runs one 512-thread CTA per channel (bn_fw_tr_1C11_* forward, bn_bw_1C11_* backward);
the single-read kernels (`singleread` in the name) cache the channel and make 2 element passes
forward, 3 backward, the others 3 and 5 (norm.h). For each (kernel, input shape) group, the
median kernel time (the upper of the two middle calls) less the topology's kernel_overhead
(ddpsim charges work / rate + kernel_overhead: norm.c ds_batch_norm_ns), then
  per CTA  (C <= SMs: one CTA per SM, HBM cannot be the limit)
           passes x N x H x W / time                 forward and backward apart
  per SM   (C 256 and 512 at 28x28 and 56x56: several CTAs per SM)
           passes x N x C x H x W / (SMs x time)     both directions together
and each constant is the median of its groups' rates over the clock. --overhead-us 0 gives
the rates fitted before the overhead was taken out (2.4, 1.6, 2.55). Standard library only:

  python3 bench/bn_nchw_fit.py bench/results/gpu-2026-11-26-h200/prof/resnet50-fp32-b32.json.gz \\
    --sms 132 --clock-mhz 1980
"""

import argparse
import collections
import os
import statistics
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
import trace_classes as tc  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("trace")
    ap.add_argument("--sms", type=int, required=True)
    ap.add_argument("--clock-mhz", type=float, required=True)
    ap.add_argument("--overhead-us", type=float, default=4.0,
                    help="kernel_overhead, taken out of each median (default 4, the shipped "
                         "topologies')")
    a = ap.parse_args()
    events = tc.load(a.trace)
    ops = tc.ops_by_external_id(events)
    groups = collections.defaultdict(list)
    for e in events:
        if e.get("cat") != "kernel" or not ("cudnn::bn_fw_tr_1C11" in e["name"] or
                                            "cudnn::bn_bw_1C11" in e["name"]):
            continue
        dims = next((tuple(d) for o in ops.get(e["args"].get("External id"), [])
                     for d in o["args"]["Input Dims"] if d and len(d) == 4), None)
        if dims is None:
            continue
        backward = "bn_bw" in e["name"]
        single = "singleread" in e["name"]
        passes = (3 if single else 5) if backward else (2 if single else 3)
        groups[(backward, dims, passes, e["name"].split("<")[0])].append(e["dur"])
    clock = a.clock_mhz * 1e6
    cta = {0: [], 1: []}
    sm = []
    print("kernel_overhead %.1f us taken out of each median" % a.overhead_us)
    print("%-4s %-18s %6s %9s  %s" % ("pass", "N C H W", "passes", "median us",
                                      "G element passes/s"))
    for (backward, dims, passes, name), durs in sorted(groups.items()):
        n, c, h, w = dims
        mid = sorted(durs)[len(durs) // 2]  # the upper of two middle calls
        t = (mid - a.overhead_us) * 1e-6
        if c <= a.sms:
            rate = passes * n * h * w / t
            cta[backward].append(rate)
            what = "per CTA"
        elif c in (256, 512) and h in (28, 56):
            rate = passes * n * c * h * w / (a.sms * t)
            sm.append(rate)
            what = "per SM"
        else:
            continue
        print("%-4s %-18s %6d %9.2f  %.2f %s" % ("bwd" if backward else "fwd", "x".join(
            map(str, dims)), passes, mid, rate / 1e9, what))
    for label, rates in (("BN_FWD_ELEMS_PER_CTA_CYCLE", cta[0]),
                         ("BN_BWD_ELEMS_PER_CTA_CYCLE", cta[1]), ("BN_ELEMS_PER_SM_CYCLE", sm)):
        print("%s %.3f (median %.3f G/s over %d groups)" % (
            label, statistics.median(rates) / clock, statistics.median(rates) / 1e9, len(rates)))


if __name__ == "__main__":
    main()
