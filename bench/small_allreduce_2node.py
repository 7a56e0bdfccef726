#!/usr/bin/env python3
"""The small all-reduces on two H100 nodes, measured against ddpsim's terms.

    python3 bench/small_allreduce_2node.py

For each size of SIZES, the rows of validation/collectives.csv from
NVIDIA/nccl-tests#309 (2x Dell XE9680, 16 ranks; busbw in GB/s) against
`ddpsim collective --topo 2node-ib --algo auto` at that size: the algorithm
and protocol it picks (NCCL's model's choice), NCCL's predicted time (the
nccl column), the simulated time with NCCL's model alone (--nccl-extra none)
and with the extra mechanisms (the default), and the busbw error of the
default, predicted / measured - 1 (negative: predicted slow). Measured time
= S / algbw, algbw = busbw N / (2 (N - 1)). docs/collectives.md ("Small
all-reduces across nodes") pastes the table under a docs-check marker.
Needs bin/ddpsim (make). Standard library only.
"""
import csv
import io
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.environ.get("DDPSIM_BIN", os.path.join(ROOT, "bin", "ddpsim"))
ROWS = os.path.join(ROOT, "validation", "collectives.csv")
SOURCE = "https://github.com/NVIDIA/nccl-tests/issues/309"
SIZES = [8192, 65536, 262144, 1 << 20, 2 << 20, 4 << 20]
NAMES = {"nvls": "NVLSTree"}  # nvls across nodes is NCCL's NVLSTree


def measured_busbw():
    out = {}
    with open(ROWS, newline="") as f:
        for r in csv.DictReader(f):
            if r["source"].startswith(SOURCE) and r["select"].startswith("size_bytes="):
                out[int(r["select"].split("=")[1])] = float(r["value"])
    return out


def simulate(size, extra):
    cmd = [BIN, "collective", "--topo", "2node-ib", "--algo", "auto", "-b", str(size),
           "-e", str(size), "--format", "csv"] + extra
    p = subprocess.run(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       universal_newlines=True)
    if p.returncode != 0:
        sys.stderr.write("small_allreduce_2node.py: %s: %s" % (" ".join(cmd), p.stderr))
        sys.exit(2)
    return next(csv.DictReader(io.StringIO(p.stdout)))


def size_name(b):
    return "%d MiB" % (b >> 20) if b >= 1 << 20 else "%d KiB" % (b >> 10)


def main():
    busbw = measured_busbw()
    print("| size | ddpsim's choice | measured (µs) | NCCL model (µs) | no extras (µs)"
          " | ddpsim (µs) | busbw error |")
    print("| ---: | :--- | ---: | ---: | ---: | ---: | ---: |")
    for s in SIZES:
        if s not in busbw:
            sys.stderr.write("small_allreduce_2node.py: no %s row at %d B\n" % (SOURCE, s))
            return 2
        full, alone = simulate(s, []), simulate(s, ["--nccl-extra", "none"])
        n = int(full["nranks"])
        measured_us = s / (busbw[s] * n / (2.0 * (n - 1))) / 1e3
        t = float(full["time_us"])
        err = ("%+.1f %%" % (100 * (measured_us / t - 1))).replace("-", "\u2212")
        print("| %s | %s %s | %.1f | %.1f | %.1f | %.1f | %s |" % (
            size_name(s), NAMES.get(full["algo"], full["algo"]), full["proto"], measured_us,
            float(full["nccl_model_us"]), float(alone["time_us"]), t, err))
    return 0


if __name__ == "__main__":
    sys.exit(main())
