#!/usr/bin/env python3
"""trace_phases: one rank's iteration of a ddpsim trace, by phase, as a
markdown table (for docs that explain where an iteration goes; docs-check
markers, scripts/docs_check.py).

Usage: scripts/trace_phases.py TRACE.csv [--rank R] [--iter I]

TRACE.csv is `bin/ddpsim ... --trace TRACE.csv` (traces/SCHEMA.md). The
iteration is I (default: the last one in the trace) on rank R (default 0).
Its ops are grouped by stream and kind, and on the host and comm streams
by name too (`replicate` and `launch` are different host work; `input` and
`grads` different transfers); compute ops are named after their layers, so
they group by kind alone (name `(all)`). A row per group, in the order of its first
start: the ops, the first start, the last end and the ops' durations
summed. Times are ms from the end of the previous iteration's last op on
any rank, where `iter_ms` (the steady-state period, analysis/metrics.c)
starts; without a previous iteration, from 0. Standard library only."""

import csv
import sys


def load(path):
    with open(path, newline="") as fp:
        return list(csv.DictReader(line for line in fp if not line.startswith("#")))


def main(argv):
    path, rank, it = None, "0", None
    i = 0
    while i < len(argv):
        if argv[i] in ("--rank", "--iter") and i + 1 < len(argv):
            if argv[i] == "--rank":
                rank = argv[i + 1]
            else:
                it = argv[i + 1]
            i += 2
        elif path is None and not argv[i].startswith("--"):
            path = argv[i]
            i += 1
        else:
            sys.exit("trace_phases.py: unexpected argument %r (see the file's usage)" % argv[i])
    if path is None:
        sys.exit("trace_phases.py: needs a trace file")
    rows = load(path)
    if not rows:
        sys.exit("trace_phases.py: %s has no ops" % path)
    if it is None:
        it = str(max(int(r["iter"]) for r in rows))
    prev = [float(r["end_us"]) for r in rows if int(r["iter"]) == int(it) - 1]
    t0 = max(prev) if prev else 0.0
    ops = [r for r in rows if r["iter"] == it and r["rank"] == rank]
    if not ops:
        sys.exit("trace_phases.py: %s has no op of rank %s in iteration %s" % (path, rank, it))
    groups = {}
    for r in sorted(ops, key=lambda r: (float(r["start_us"]), int(r["id"]))):
        name = r["name"] if r["stream"] in ("host", "comm") else ""
        g = groups.setdefault((r["stream"], r["kind"], name), [])
        g.append(r)
    print("| stream | kind | name | ops | starts (ms) | ends (ms) | summed (ms) |")
    print("| --- | --- | --- | ---: | ---: | ---: | ---: |")
    for (stream, kind, name), g in groups.items():
        start = min(float(r["start_us"]) for r in g) - t0
        end = max(float(r["end_us"]) for r in g) - t0
        busy = sum(float(r["end_us"]) - float(r["start_us"]) for r in g)
        print("| %s | %s | %s | %d | %.3f | %.3f | %.3f |"
              % (stream, kind, name or "(all)", len(g), start / 1e3, end / 1e3, busy / 1e3))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
