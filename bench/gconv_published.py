#!/usr/bin/env python3
"""ddpsim's grouped-convolution charge against published per-layer timings.

    python3 bench/gconv_published.py [validation/kernels/grouped_conv_published.csv]

For each row of the CSV (validation data, never fitted to: see
validation/kernels/README.md) it computes what ddpsim charges for that layer
and pass on that GPU, the way sim/train/grouped_conv.c does: the table entry
of the same math mode nearest the shape (|log2| distance in channels per
group and output positions, 8 more for another stride), its SM cycles per
output element at the measured batches (H200: 132 SMs at 1980 MHz),
interpolated in log2(batch) and held at the ends, times the layer's outputs
over the target's SMs x boost clock. It prints that charge ("sm_clock"),
the same H200 time moved by two other hardware ratios for comparison, and
measured / predicted for each:

  fp32_lanes  the H200 time x (H200 vector FP32 peak / target's): a kernel
              bound by its FP32 lanes (V100: 64 per SM, H200: 128)
  hbm         the H200 time x (H200 HBM bandwidth / target's)

Only the standard library; reads sim/train/grouped_conv_table.inc and
topologies/gpus.yaml, so it follows the simulator's inputs. It does not run
bin/ddpsim (bench/README.md says how one row was checked against it).
"""
import argparse
import csv
import math
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TABLE = os.path.join(ROOT, "sim", "train", "grouped_conv_table.inc")
GPUS = os.path.join(ROOT, "topologies", "gpus.yaml")
DEFAULT_CSV = os.path.join(ROOT, "validation", "kernels", "grouped_conv_published.csv")
TABLE_GPU = "H200-SXM-141GB"  # grouped_conv_table.inc's header names the H200
STRIDE_MISMATCH_DISTANCE = 8.0  # grouped_conv.c
PASS_INDEX = {"fwd": 0, "dgrad": 1, "wgrad": 2}


def read_table():
    text = open(TABLE).read()
    sms = int(re.search(r"#define GCONV_MEASURED_SMS (\d+)", text).group(1))
    clock = float(re.search(r"#define GCONV_MEASURED_CLOCK_HZ ([0-9.e]+)", text).group(1))
    rows = []
    pat = re.compile(r"\{DS_GCONV_(\w+), (\d+), (\d+), (\d+), (\d+), (\d+), "
                     r"\{([0-9.]+), ([0-9.]+), ([0-9.]+)\}\}")
    for m in pat.finditer(text):
        rows.append({"mode": m.group(1), "gw": int(m.group(2)), "oc": int(m.group(3)),
                     "pos": int(m.group(4)), "stride": int(m.group(5)),
                     "batch": int(m.group(6)),
                     "us": [float(m.group(7)), float(m.group(8)), float(m.group(9))]})
    return sms, clock, rows


def read_gpus():
    """name -> {sms, boost_mhz, fp32, tf32, fp16 (TFLOPS), mem_bw (GB/s)} from gpus.yaml."""
    gpus, cur = {}, None
    for line in open(GPUS):
        m = re.match(r"\s*- name: (\S+)", line)
        if m:
            cur = gpus.setdefault(m.group(1), {})
            continue
        m = re.match(r"\s+(sms|boost_mhz|fp32|tf32|fp16|mem_bw): ([0-9.]+)", line)
        if m and cur is not None:
            cur[m.group(1)] = float(m.group(2))
    return gpus


def distance(e, gw, pos, stride):
    d = abs(math.log2(e["gw"] / gw)) + abs(math.log2(e["pos"] / pos))
    return d + (STRIDE_MISMATCH_DISTANCE if e["stride"] != stride else 0)


def h200_cycles_per_output(sms, clock, table, mode, gw, pos, stride, batch, p):
    """grouped_conv.c steps 1-2: (cycles per output, the entry's shape)."""
    cands = [e for e in table if e["mode"] == mode]
    first = min(cands, key=lambda e: distance(e, gw, pos, stride))  # first of the nearest
    same = [e for e in cands if (e["gw"], e["oc"], e["pos"], e["stride"]) ==
            (first["gw"], first["oc"], first["pos"], first["stride"])]
    lo = max((e for e in same if e["batch"] <= batch), key=lambda e: e["batch"], default=None)
    hi = min((e for e in same if e["batch"] >= batch), key=lambda e: e["batch"], default=None)
    lo, hi = lo or hi, hi or lo

    def cyc(e):
        return e["us"][p] * 1e-6 * sms * clock / (e["batch"] * e["oc"] * e["pos"])

    c = cyc(lo)
    if hi is not lo:
        f = math.log2(batch / lo["batch"]) / math.log2(hi["batch"] / lo["batch"])
        c = (1 - f) * c + f * cyc(hi)
    return c, first


def parse_args(argv):
    """The command line as argparse reads it: --help/-h prints this module's docstring
    (exit 0), a bad argument the usage (exit 2)."""
    p = argparse.ArgumentParser(prog="python3 bench/gconv_published.py", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("csv", nargs="?", default=DEFAULT_CSV, metavar="CSV",
                   help="published timings (default %s)" % DEFAULT_CSV)
    return p.parse_args(argv)


def main():
    path = parse_args(sys.argv[1:]).csv
    sms, clock, table = read_table()
    gpus = read_gpus()
    ref = gpus[TABLE_GPU]
    print("grouped convolutions: published / ddpsim (H200 table %d SMs at %.0f MHz)" %
          (sms, clock / 1e6))
    print("%-3s %-10s %-9s %-22s %-9s %10s %10s %6s %10s %6s %10s %6s  %s" %
          ("row", "gpu", "mode", "gw/oc/HxW/s/batch", "pass", "measured", "sm_clock",
           "ratio", "fp32_lanes", "ratio", "hbm", "ratio", "use"))
    with open(path, newline="") as f:
        for i, r in enumerate(csv.DictReader(f), 1):
            g = gpus[r["gpu"]]
            gw, oc = int(r["group_width"]), int(r["out_channels"])
            pos = int(r["out_h"]) * int(r["out_w"])
            stride, batch = int(r["stride"]), int(r["batch"])
            outputs = batch * oc * pos
            charge = h200 = 0.0
            entry = None
            for name in r["pass"].split("+"):
                c, entry = h200_cycles_per_output(sms, clock, table, r["mode"], gw, pos,
                                                  stride, batch, PASS_INDEX[name])
                charge += c * outputs / (g["sms"] * g["boost_mhz"] * 1e6) * 1e6
                h200 += c * outputs / (sms * clock) * 1e6
            lanes = h200 * ref["fp32"] / g["fp32"]
            hbm = h200 * ref["mem_bw"] / g["mem_bw"]
            meas = float(r["measured_us"])
            shape = "%d/%d/%sx%s/%d/%d" % (gw, oc, r["out_h"], r["out_w"], stride, batch)
            print("%-3d %-10s %-9s %-22s %-9s %10.0f %10.0f %6.2f %10.0f %6.2f %10.0f %6.2f  %s"
                  % (i, r["gpu"][:10], r["mode"], shape, r["pass"], meas, charge,
                     meas / charge, lanes, meas / lanes, hbm, meas / hbm, r["use"]))
            print("    table entry: %s gw %d, %d ch, %d positions, stride %d; on the H200 %.0f us"
                  % (r["mode"], entry["gw"], entry["oc"], entry["pos"], entry["stride"], h200))
    implied(sms, clock, table, gpus)


# the peak each math mode's kernels could at best run at: vector FP32, or
# the tensor cores' (TF32; fp16 for HALF), key of gpus.yaml
MODE_PEAK = {"FP32": "fp32", "TF32": "tf32", "HALF": "fp16", "HALF_NHWC": "fp16"}
# (GPU, mode) pairs the validation rows run: V100 has no TF32 (FP32 there)
IMPLIED = [("V100-SXM2-16GB", "FP32"), ("V100-SXM2-16GB", "HALF"),
           ("V100-SXM2-16GB", "HALF_NHWC"), ("A100-SXM4-80GB", "TF32"),
           ("A100-SXM4-80GB", "HALF_NHWC")]


def implied(sms, clock, table, gpus):
    """What the SMs x clock transfer makes every table entry (all passes and
    batches) run at on the target: FLOP/s over the mode's peak there, and the
    input + output bytes (the least a pass moves) over its HBM bandwidth. A
    fraction near or over 1 is a time the hardware cannot reach."""
    print("\nSMs x clock transfer, implied use of the target (table entries, 3 passes x 3 batches):")
    print("%-15s %-9s %8s %-25s %s" % ("gpu", "mode", "time x", "peak FLOP/s: median max",
                                       "HBM (in+out bytes): median max >0.8"))
    for name, mode in IMPLIED:
        g = gpus[name]
        scale = sms * clock / (g["sms"] * g["boost_mhz"] * 1e6)
        flops, hbm = [], []
        for e in table:
            if e["mode"] != mode:
                continue
            out = e["batch"] * e["oc"] * e["pos"]
            size = 2 if mode.startswith("HALF") else 4
            moved = (out * e["stride"] ** 2 + out) * size
            for us in e["us"]:
                t = us * 1e-6 * scale
                flops.append(2.0 * out * e["gw"] * 9 / t / (g[MODE_PEAK[mode]] * 1e12))
                hbm.append(moved / t / (g["mem_bw"] * 1e9))
        flops.sort()
        hbm.sort()
        print("%-15s %-9s %8.3f %6.2f %6.2f %12s %6.2f %6.2f %4d/%d" %
              (name, mode, scale, flops[len(flops) // 2], flops[-1], "", hbm[len(hbm) // 2],
               hbm[-1], sum(x > 0.8 for x in hbm), len(hbm)))


if __name__ == "__main__":
    main()
