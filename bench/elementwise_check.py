#!/usr/bin/env python3
"""bench/gpu_kernels.py's elementwise rows (`--only elementwise`) beside what ddpsim charges
for the same op, shape, dtype and layout, and the SM cycles per operand-element they give.

For every row this writes a model file of one memory layer whose forward is that op (its
bytes as fp32 sizes, as tools/export_model.py writes them; for an op off PyTorch's
vectorised path its legacy_ew counts: the bytes and the operand-elements, strided or
transposed as tools/model_export/legacy_ew.py's legacy_kind classifies it) and runs bin/ddpsim on it
(`--strategy single --batch 1`, `--dtype` the row's, `--channels-last` for NHWC rows):
the layer's forward op in the --schedule is the charge, one kernel_overhead included.

Kinds (operands: TensorIterator's, the output included; an (N, C, 1, 1) gate or an
expand counts as a full operand, as export_model.py counts it):
  add, mul, add_          3  vectorised (same layout, dense): bytes at the memory roofline
  mul_bcast               3  strided (an operand broadcast)
  addcmul_bcast           4  strided
  gap_bwd                 2  strided (an expanded (N, C, 1, 1) gradient / (H*W))
  add_mixed               3  transposed (NCHW into NHWC or back)
  copy_perm               2  strided (permute(0, 2, 1, 3): the last dimension stays innermost)
  copy_transpose          2  transposed (permute(0, 1, 3, 2))

Prints per (op, element size, layout) the summed time per call measured (`ms`: CUDA
events over calls queued back to back, so launch gaps included) and charged, and their
ratio; then per (kind, element size) the SM cycles per operand-element that fit the rows
(least squares through the origin of the time per call less --overhead-us, the
topology's kernel_overhead, against operand-elements / (SMs x clock)), beside the
rate ddpsim uses (sim/train/legacy_ew.h). Standard library only:

  python3 bench/elementwise_check.py bench/results/gpu-2026-11-26d-h200/elementwise.csv \\
    --topo validation/topologies/nd-h200-v5.yaml
"""

import argparse
import collections
import csv
import os
import re
import subprocess
import sys
import tempfile

OPS = {  # op: (operands, kind); kind None: the vectorised kernel
    "add": (3, None), "mul": (3, None), "add_": (3, None),
    "mul_bcast": (3, "strided"), "addcmul_bcast": (4, "strided"), "gap_bwd": (2, "strided"),
    "add_mixed": (3, "transposed"),
    "copy_perm": (2, "strided"), "copy_transpose": (2, "transposed"),
}
DTYPES = {"fp32": ("fp32", 4), "fp16": ("fp16", 2), "bf16": ("bf16", 2)}

MODEL = """schema_version: 1
name: one_op
sample: s
default_batch: 1
optimizer: sgd
layers:
  - {{name: op, class: memory, fwd_flops: 0, bwd_flops: 0, fwd_bytes: {b}, act_bytes: 0,
     op_fwd_bytes: {b}, bwd_bytes: 0, amp_bwd_bytes: 0,{legacy} params: []}}
  - {{name: w, class: memory, fwd_flops: 0, bwd_flops: 0, fwd_bytes: 0, act_bytes: 0,
     params: [{{name: w, numel: 1}}]}}
"""


def charge_us(ddpsim, topo, row, tmp):
    """ddpsim's forward time of the row's op, microseconds."""
    operands, kind = OPS[row["name"]]
    dtype, size = DTYPES[row["mode"]]
    fp32_bytes = int(row["bytes"]) * 4 // size
    legacy = ""
    if kind:
        opel = int(row["elements"]) * operands
        triple = [fp32_bytes, opel, 0] if kind == "strided" else [fp32_bytes, 0, opel]
        legacy = " legacy_ew: {fwd: %s}, nhwc_legacy_ew: {fwd: %s}," % (triple, triple)
    model = os.path.join(tmp, "m.yaml")
    sched = os.path.join(tmp, "s.csv")
    with open(model, "w") as f:
        f.write(MODEL.format(b=fp32_bytes, legacy=legacy))
    cmd = [ddpsim, "--topo", topo, "--world-size", "1", "--model", model, "--strategy",
           "single", "--batch", "1", "--dtype", dtype, "--schedule", sched]
    if row["layout"].startswith("nhwc"):
        cmd.append("--channels-last")
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    with open(sched) as f:
        for r in csv.DictReader(line for line in f if not line.startswith("#")):
            if r["kind"] == "fwd" and r["stream"] == "compute" and r["name"] == "op":
                return float(r["dur_us"])
    sys.exit("no forward op in the schedule of %s" % row)


def rates_in_use(header):
    with open(header) as f:
        text = f.read()
    return {m.group(1).lower() + (m.group(2) or "").lower(): float(m.group(3))
            for m in re.finditer(r"#define DS_LEGACY_(\w+?)_CYCLES(_FP32)?\s+([\d.]+)", text)}


def bad_input(path, line, key, what):
    print("%s:%d: key '%s': %s" % (path, line, key, what), file=sys.stderr)
    sys.exit(2)


def read_rows(path):
    """The CSV's rows of the ops above, each field this script reads checked:
    a bad one exits 2 naming the file, line and key."""
    need = {"name": str, "mode": str, "layout": str, "bytes": int, "elements": int, "ms": float,
            "gpu_sms": int, "sm_clock_max_mhz": float}
    rows = []
    with open(path, newline="") as f:
        reader = csv.DictReader(f)
        missing = [k for k in need if k not in (reader.fieldnames or [])]
        if missing:
            bad_input(path, 1, missing[0], "missing from the header")
        for r in reader:
            if r["name"] not in OPS:
                continue
            if r["mode"] not in DTYPES:
                bad_input(path, reader.line_num, "mode",
                          "expected one of %s, got %r" % (", ".join(DTYPES), r["mode"]))
            for key, kind in need.items():
                if kind is str:
                    continue
                try:
                    v = kind(r[key])
                except (TypeError, ValueError):
                    bad_input(path, reader.line_num, key, "expected %s, got %r" % (
                        "an integer" if kind is int else "a number", r[key]))
                if not v >= 0 or (key in ("ms", "gpu_sms", "sm_clock_max_mhz") and v <= 0):
                    bad_input(path, reader.line_num, key, "expected a positive number, got %r"
                              % r[key])
            rows.append(r)
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("csv", help="gpu_kernels.py --only elementwise output")
    ap.add_argument("--topo", required=True, help="the topology of the row's GPU")
    ap.add_argument("--ddpsim", default=os.environ.get("DDPSIM_BIN", "bin/ddpsim"))
    ap.add_argument("--overhead-us", type=float, default=4.0,
                    help="the topology's kernel_overhead (default 4)")
    ap.add_argument("--header", default="sim/train/legacy_ew.h")
    args = ap.parse_args()
    rows = read_rows(args.csv)
    groups = collections.defaultdict(lambda: [0, 0.0, 0.0])
    fits = collections.defaultdict(lambda: [0.0, 0.0, 0])
    with tempfile.TemporaryDirectory() as tmp:
        for r in rows:
            operands, kind = OPS[r["name"]]
            size = "fp32" if DTYPES[r["mode"]][1] == 4 else "half"
            measured = float(r["ms"]) * 1e3
            charged = charge_us(args.ddpsim, args.topo, r, tmp)
            g = groups[(r["name"], size, r["layout"])]
            g[0] += 1
            g[1] += measured
            g[2] += charged
            if kind:
                # seconds per (cycle per operand-element), in microseconds
                work = int(r["elements"]) * operands / (
                    int(r["gpu_sms"]) * float(r["sm_clock_max_mhz"]) * 1e6) * 1e6
                fit_kind = ("copy " if r["name"].startswith("copy") else "") + kind
                fit = fits[(fit_kind, size)]
                fit[0] += work * (measured - args.overhead_us)
                fit[1] += work * work
                fit[2] += 1
    print("op              elem  layout       rows  measured us  ddpsim us  ddpsim/measured")
    for (name, size, layout), (n, m, c) in sorted(groups.items()):
        print("%-15s %-5s %-11s %5d %12.1f %10.1f %8.2f" % (name, size, layout, n, m, c, c / m))
    rates = rates_in_use(args.header)
    print("\nkind             elem  rows  fitted SM cycles/operand-element  ddpsim's")
    for (kind, size), (tw, ww, n) in sorted(fits.items()):
        base = kind.split()[-1]
        used = rates.get("%s_fp32" % base if size == "fp32" else base, rates.get(base))
        print("%-16s %-5s %4d  %.3f  %s" % (kind, size, n, tw / ww,
                                             "%.3f" % used if used else "-"))


if __name__ == "__main__":
    main()
