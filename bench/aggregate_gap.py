#!/usr/bin/env python3
"""How far the aggregated ring (--coll-model aggregate) lies from the per-flow
ring, the mechanism it stands for, on the shipped multi-node topologies and on
copies of cluster-64x8-h100 with 800 Gb/s NICs (the case where a rail's
NVSwitch port share, not its NIC, paces: docs/collectives.md, "A faster link
never slows the aggregate").

For every case: `ddpsim collective --algo ring -b 1M -e 4G -f 2` for
all-reduce, all-gather and reduce-scatter, once per flow and once aggregated;
the gap is (aggregate - flow) / flow of the printed time.  Prints one line per
case with the worst gap (most negative: the aggregate is below per flow) and
where it lies, then the worst over the shipped topologies and over all cases.
README.md and docs/architecture.md quote these lines.

usage: DDPSIM_BIN=bin/ddpsim python3 bench/aggregate_gap.py   (about 35 s of one core)
4096 ranks are left out: per flow, 1 MiB to 4 GiB there is past ddpsim's work
bound (docs/reliability.md, "Work"), and it refuses the run.
"""
import argparse
import csv
import io
import os
import subprocess
import sys
import tempfile

OPS = ("allreduce", "allgather", "reducescatter")
SIZES = ("-b", "1M", "-e", "4G", "-f", "2")


def run_csv(ddpsim, topo, ranks, op, model):
    out = subprocess.run(
        [ddpsim, "collective", "--topo", topo, "--algo", "ring", "--op", op,
         "-g", str(ranks), *SIZES, "--coll-model", model, "--format", "csv"],
        check=True, capture_output=True, text=True).stdout
    return {int(r["size_bytes"]): float(r["time_us"])
            for r in csv.DictReader(io.StringIO(out))}


def worst_gap(ddpsim, topo, ranks):
    worst = (0.0, "", 0)
    for op in OPS:
        flow = run_csv(ddpsim, topo, ranks, op, "flow")
        agg = run_csv(ddpsim, topo, ranks, op, "aggregate")
        for size, t in flow.items():
            gap = (agg[size] - t) / t
            if abs(gap) > abs(worst[0]):
                worst = (gap, op, size)
    return worst


def size_name(b):
    for unit, scale in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if b >= scale and b % scale == 0:
            return f"{b // scale}{unit}"
    return str(b)


def nic800_copy(folder, gpu_nic_gbps):
    src = open("topologies/cluster-64x8-h100.yaml", encoding="utf-8").read()
    text = src.replace("nic_bw: 400Gbps", "nic_bw: 800Gbps").replace(
        "gpu_nic_bw: 64GBps", f"gpu_nic_bw: {gpu_nic_gbps}GBps")
    if text.count("800Gbps") != 1 or (
            gpu_nic_gbps != 64 and f"{gpu_nic_gbps}GBps" not in text):
        sys.exit("aggregate_gap: cluster-64x8-h100.yaml no longer has the "
                 "nic_bw / gpu_nic_bw lines this script edits")
    path = os.path.join(folder, f"c64-nic800-pcie{gpu_nic_gbps}.yaml")
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    return path


def parse_args(argv):
    """The command line as argparse reads it: --help/-h prints this module's docstring
    (exit 0), a bad argument the usage (exit 2)."""
    p = argparse.ArgumentParser(prog="python3 bench/aggregate_gap.py", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    return p.parse_args(argv)


def main():
    parse_args(sys.argv[1:])  # no arguments: --help prints the docstring, anything else is refused
    ddpsim = os.environ.get("DDPSIM_BIN", "bin/ddpsim")
    shipped = [("2node-ib", "topologies/2node-ib.yaml", 16)]
    shipped += [("cluster-64x8-h100", "topologies/cluster-64x8-h100.yaml", g)
                for g in (64, 128, 512)]
    shipped += [("cluster-512x8-h100", "topologies/cluster-512x8-h100.yaml", g)
                for g in (64, 1024)]
    with tempfile.TemporaryDirectory() as folder:
        copies = [(f"cluster-64x8-h100, 800 Gb/s NICs, PCIe {p} GB/s",
                   nic800_copy(folder, p), g)
                  for p in (64, 96, 128) for g in (128, 512)]
        print(f"{'case':<48} {'ranks':>5}  worst gap  at")
        overall = {}
        for group, cases in (("shipped", shipped), ("800 Gb/s copies", copies)):
            for name, topo, ranks in cases:
                gap, op, size = worst_gap(ddpsim, topo, ranks)
                print(f"{name:<48} {ranks:>5}  {gap * 100:+8.1f} %  "
                      f"{op} {size_name(size)}")
                if abs(gap) > abs(overall.get(group, 0.0)):
                    overall[group] = gap
        for group in ("shipped", "800 Gb/s copies"):
            print(f"worst over the {group}: {overall.get(group, 0.0) * 100:+.1f} %")


if __name__ == "__main__":
    main()
