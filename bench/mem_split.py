#!/usr/bin/env python3
"""The memory rows' peak split by phase: bench/mem_phases.py's measurement beside
ddpsim's `peak memory` terms.

    python3 bench/mem_split.py [MEM_PHASES.csv]

MEM_PHASES.csv: bench/mem_phases.py's output (default: the lent H200's,
bench/results/gpu-2026-11-26d-h200/call2/mem.csv). For each of its runs it
finds the validation/memory.csv row of the same model, batch and math, runs
that row's command without `--format csv` and reads ddpsim's `peak memory`
line. Per run, in GiB:

  fwd meas    fwd_end - base: what the forward and loss leave live (saved
              activations plus the output the loop holds)
  fwd ddpsim  ddpsim's activations + output
  bwd meas    bwd_peak - fwd_end: what backward's peak adds (the loss's
              gradients and whatever else backward allocates first)
  bwd ddpsim  ddpsim's loss gradients (+ grads, where its peak is inside
              backward)
  peak meas   the row's measured value (torch_measure.py's peak_alloc_gib)
  peak ddpsim peak_mem_gib, and the error in % of the measured value
  rest        peak meas - peak ddpsim: what the allocator holds that ddpsim
              does not count

Needs bin/ddpsim (make). Standard library only.
"""
import argparse
import csv
import os
import re
import shlex
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.environ.get("DDPSIM_BIN", os.path.join(ROOT, "bin", "ddpsim"))
DEFAULT_CSV = os.path.join(ROOT, "bench", "results", "gpu-2026-11-26d-h200", "call2", "mem.csv")
ROWS = os.path.join(ROOT, "validation", "memory.csv")
PEAK_RE = re.compile(r"^\s*peak memory\s+([0-9.]+) GiB per GPU \((.*)\)\s*$")
TERM_RE = re.compile(r"([a-z][a-z ]*?) ([0-9.]+)$")


def option(cmd, name, default=""):
    return cmd[cmd.index(name) + 1] if name in cmd else default


def row_for(rows, run):
    for row in rows:
        cmd = shlex.split(row["command"])
        if (option(cmd, "--model") == run["model"] and option(cmd, "--batch") == run["batch"]
                and option(cmd, "--amp") == run["amp"]):
            return row
    sys.exit("bench/mem_split.py: no row of %s for %s" % (ROWS, run["name"]))


def ddpsim_terms(command):
    """(peak GiB, {term: GiB}) from the `peak memory` line of the text output."""
    args = [a for a in shlex.split(command)]
    if "--format" in args:
        i = args.index("--format")
        del args[i:i + 2]
    proc = subprocess.run([BIN] + args, cwd=ROOT, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit("bench/mem_split.py: %s %s: exit %d" % (BIN, command, proc.returncode))
    for line in proc.stdout.splitlines():
        m = PEAK_RE.match(line)
        if m:
            terms = {}
            for part in m.group(2).split(" + "):
                t = TERM_RE.match(part.strip())
                if t:
                    terms[t.group(1)] = float(t.group(2))
            return float(m.group(1)), terms
    sys.exit("bench/mem_split.py: no 'peak memory' line from %s" % command)


def parse_args(argv):
    """The command line as argparse reads it: --help/-h prints this module's docstring
    (exit 0), a bad argument the usage (exit 2)."""
    p = argparse.ArgumentParser(prog="python3 bench/mem_split.py", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("csv", nargs="?", default=DEFAULT_CSV, metavar="MEM_PHASES.csv",
                   help="bench/mem_phases.py's output (default %s)" % DEFAULT_CSV)
    return p.parse_args(argv)


def main(argv):
    path = parse_args(argv).csv
    with open(path) as f:
        runs = list(csv.DictReader(f))
    with open(ROWS) as f:
        rows = list(csv.DictReader(f))
    print("run                  fwd meas  fwd ddpsim  bwd meas  bwd ddpsim  peak meas  peak ddpsim    err   rest")
    for run in runs:
        row = row_for(rows, run)
        peak, terms = ddpsim_terms(row["command"])
        fwd_meas = float(run["fwd_end"]) - float(run["base"])
        fwd_sim = terms.get("activations", 0.0) + terms.get("output", 0.0)
        bwd_meas = float(run["bwd_peak"]) - float(run["fwd_end"])
        bwd_sim = terms.get("loss gradients", 0.0) + terms.get("grads", 0.0)
        meas = float(row["value"])
        print("%-20s %9.3f %11.3f %9.3f %11.3f %10.3f %12.3f %+5.1f%% %6.3f"
              % (run["name"], fwd_meas, fwd_sim, bwd_meas, bwd_sim, meas, peak,
                 100.0 * (peak - meas) / meas, meas - peak))


if __name__ == "__main__":
    main(sys.argv[1:])
