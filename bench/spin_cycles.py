#!/usr/bin/env python3
"""bench/spin_bias.py's modes compared cycle by cycle.

spin_bias.py alternates blocks of iterations timed three ways (spin, sync,
stream) in one process and prints each mode's median over all its
iterations. The host's speed drifts within a process (x1.2-1.7 over a
minute), so a pooled median can differ between modes by the moments each
mode's blocks happened to run at. Here each cycle's blocks, adjacent in
time, are paired: per cycle and phase the block's median in spin and in
sync over stream's, then per mode and phase (forward, backward, forward +
backward) the median of those ratios, their range, how many cycles were
slower than stream, and the two-sided exact Wilcoxon signed-rank p of the
log ratios (n = cycles: 8 cycles give p >= 0.008; no cycle drops out for a
zero difference unless the medians tie exactly). Also each mode's host µs
per dispatch and per node at its pooled median (--dispatches, --nodes: the
model file's host_dispatches and host_nodes, positive counts). A cycle whose
block median is 0 ms in either mode has no ratio and is left out (and counted).
Where the CSV has the free flags (fwd_free, bwd_free: spin's phase unblocked,
stream's GPU drained, bench/host_calibrate.py), each mode's count of free
rows; --free-only keeps only the free phases (a cycle with none in a mode
then has no ratio, counted as left out). Its *_lag_ms columns (stream's)
are not read here.
Bad input (a file it cannot read, a missing or negative value, a mode with no
rows in a cycle) stops it with a message naming the file, line and key, exit 2.
Standard library only.

    python3 bench/spin_cycles.py bench/results/gpu-2026-11-27g-h200/spin-rn50.csv \\
        --dispatches 282 --nodes 337
"""

import argparse
import csv
import itertools
import math
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from csv_input import InputError, num  # noqa: E402

MODES = ("spin", "sync", "stream")


def wilcoxon_p(d):
    """Two-sided exact signed-rank p of the nonzero values of d (ties in |d| ranked by order)."""
    d = [x for x in d if x != 0]
    n = len(d)
    if n == 0:
        return 1.0
    order = sorted(range(n), key=lambda i: abs(d[i]))
    rank = {i: k + 1 for k, i in enumerate(order)}
    total = n * (n + 1) // 2
    w = sum(rank[i] for i in range(n) if d[i] > 0)
    w = min(w, total - w)
    hits = 0
    for signs in itertools.product((False, True), repeat=n):
        s = sum(rank[i] for i in range(n) if signs[i])
        hits += min(s, total - s) <= w
    return hits / 2 ** n


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("csv", help="spin_bias.py's --out CSV")
    ap.add_argument("--dispatches", type=int, required=True)
    ap.add_argument("--nodes", type=int, required=True)
    ap.add_argument("--free-only", action="store_true",
                    help="keep only the phases flagged free (fwd_free, bwd_free 1)")
    a = ap.parse_args(argv)
    for flag in ("dispatches", "nodes"):
        if getattr(a, flag) <= 0:
            ap.error("--%s must be a positive count, not %d" % (flag, getattr(a, flag)))
    try:
        try:
            with open(a.csv, newline="") as f:
                rows = list(enumerate(csv.DictReader(f), start=2))
        except OSError as e:
            raise InputError("cannot read %s: %s" % (a.csv, e.strerror))
        blocks = {}  # (mode, cycle) -> {"fwd": [(ms, free)...], "bwd": [...]}
        for line, r in rows:
            if r.get("mode") not in MODES:
                raise InputError("%s:%d: mode %r is not one of %s"
                                 % (a.csv, line, r.get("mode"), ", ".join(MODES)))
            b = blocks.setdefault((r["mode"], int(num(r, "cycle", a.csv, line))),
                                  {"fwd": [], "bwd": []})
            for p in b:
                v = num(r, p + "_ms", a.csv, line)
                if v < 0:
                    raise InputError("%s:%d: %s_ms %r is negative" % (a.csv, line, p, r[p + "_ms"]))
                # free: 1 or 0, None without the column (an older CSV)
                free = num(r, p + "_free", a.csv, line, default=-1.0)
                if free == -1.0:
                    if a.free_only:
                        raise InputError("%s:%d: no column %s_free (--free-only)"
                                         % (a.csv, line, p))
                    free = None
                b[p].append((v, free))
        cycles = sorted({c for _, c in blocks})
        for mode in MODES:
            missing = [c for c in cycles if (mode, c) not in blocks]
            if missing:
                raise InputError("%s: mode %s has no rows in cycle %s" % (a.csv, mode, missing[0]))
        if not cycles:
            raise InputError("%s: no rows" % a.csv)
    except InputError as e:
        print("spin_cycles: %s" % e, file=sys.stderr)
        return 2

    def kept(mode, c, phase):
        """The block's times of `phase`, only the free ones under --free-only."""
        return [v for v, free in blocks[(mode, c)][phase] if not a.free_only or free == 1]

    def median(v):
        return statistics.median(v) if v else None

    def med(mode, c, phase):
        """The block's median (fwd+bwd: the two medians' sum); None with no row kept."""
        if phase == "fwd+bwd":
            f, b = median(kept(mode, c, "fwd")), median(kept(mode, c, "bwd"))
            return None if f is None or b is None else f + b
        return median(kept(mode, c, phase))

    has_free = all(free is not None for b in blocks.values() for p in b for _, free in b[p])
    print("%s: %d cycles%s" % (a.csv, len(cycles), ", free phases only" if a.free_only else ""))
    for mode in MODES:
        if has_free:  # how many phases were free: unblocked (spin), drained (stream)
            n = {p: [free for c in cycles for _, free in blocks[(mode, c)][p]]
                 for p in ("fwd", "bwd")}
            print("  %-6s free rows: forward %d of %d, backward %d of %d"
                  % (mode, sum(n["fwd"]), len(n["fwd"]), sum(n["bwd"]), len(n["bwd"])))
        f = median([x for c in cycles for x in kept(mode, c, "fwd")])
        b = median([x for c in cycles for x in kept(mode, c, "bwd")])
        if f is None or b is None:
            print("  %-6s pooled median: no free %s rows" % (mode, "forward" if f is None
                                                              else "backward"))
            continue
        print("  %-6s pooled median forward %.3f ms = %.1f us a dispatch, backward %.3f ms = "
              "%.1f us a node" % (mode, f, f * 1e3 / a.dispatches, b, b * 1e3 / a.nodes))
    for mode in ("spin", "sync"):
        for phase in ("fwd", "bwd", "fwd+bwd"):
            # a cycle whose median is 0 ms (or, under --free-only, has no free
            # row) in either mode has no ratio: left out
            pairs = [(med(mode, c, phase), med("stream", c, phase)) for c in cycles]
            d = [math.log(x / y) for x, y in pairs if x and y and x > 0 and y > 0]
            zero = sum(1 for x, y in pairs if x == 0 or y == 0)
            none = sum(1 for x, y in pairs if x is None or y is None)
            note = "".join(("; left out: %d cycle(s) with a 0 ms median" % zero if zero else "",
                            "; left out: %d cycle(s) with no free row" % none if none else ""))
            if not d:
                print("  %-4s / stream %-7s no cycle to compare%s"
                      % (mode, phase, note))
                continue
            print("  %-4s / stream %-7s per cycle x%s; median x%.3f, %d of %d cycles slower, "
                  "Wilcoxon p %.3f%s" % (mode, phase, " ".join("%.2f" % math.exp(x) for x in d),
                                        math.exp(statistics.median(d)), sum(x > 0 for x in d),
                                        len(d), wilcoxon_p(d), note))
    return 0


if __name__ == "__main__":
    sys.exit(main())
