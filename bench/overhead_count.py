#!/usr/bin/env python3
"""How many kernel_overheads ddpsim charges per iteration, by kernel group, against the GPU
activities a torch.profiler trace of the same run launched in that group.

    python3 bench/overhead_count.py TRACE.json.gz models/M.yaml S0.csv S4.csv [--overhead-us 4]

S0, S4: `bin/ddpsim --topo T --world-size 1 --strategy single --model M --batch B [...]
--schedule S.csv` of the run on a copy of its topology with `kernel_overhead: 0us` and
with `4us` (the same schedule otherwise: rows pair one to one). An op's overheads are
(dur at 4 us - dur at 0 us) / 4 us: where an op is priced as the larger of two times of
which only one carries the overhead, the difference is less than 4 us a kernel, so the
count is a lower bound by up to that fraction. Groups as bench/trace_groups.py's (its caveats apply:
ddpsim's matmul layers hold their bias-gradient sums and casts, which the trace puts under
copy/cast/reduce). Trace counts: every kernel, memcpy and memset, per iteration (the trace
holds --iters, default 2). Standard library only.
"""

import argparse
import collections
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import trace_groups as tg  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    tg.tc.add_schedule_pair_args(ap)
    ap.add_argument("--iters", type=int, default=2)
    args = ap.parse_args()
    traced = collections.Counter()
    for _, chain in tg.tc.gpu_activities(tg.tc.load(args.trace)):
        traced[tg.trace_group(tg.tc.classify(chain), chain)] += 1 / args.iters
    layer_class = tg.tc.model_classes(args.model)
    charged = collections.Counter()
    for r4, overheads in tg.tc.schedule_overheads(args.s0, args.s4, args.overhead_us,
                                                  "overhead_count"):
        name = r4["name"].split("/")[0]
        group = tg.SCHEDULE_GROUP.get(tg.tc.schedule_class(name, layer_class.get(name, "")),
                                      "copy/cast/reduce")
        charged[group] += overheads
    print("%-18s %9s %9s %7s" % ("group (per iter)", "traced", "charged", "ratio"))
    for g in tg.GROUPS + ["total"]:
        t = sum(traced.values()) if g == "total" else traced[g]
        c = sum(charged.values()) if g == "total" else charged[g]
        print("%-18s %9.0f %9.1f %7s" % (g, t, c, "%.2f" % (c / t) if t else "-"))


if __name__ == "__main__":
    main()
