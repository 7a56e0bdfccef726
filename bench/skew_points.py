#!/usr/bin/env python3
"""What rank skew would cost DeepLearningExamples' 8-GPU scaling rows, in points.

    python3 bench/skew_points.py [--topo dgx-a100] [--samples 16]

No source gives the skew between these machines' GPUs (docs/validation.md,
"DeepLearningExamples' 8-GPU scaling"), so no row sets it; this prints what
the two ways ddpsim has of adding skew would move each row. For every
DeepLearningExamples ConvNets row of validation/ddp_scaling.csv whose command
runs on --topo (the BERT-large SQuAD rows, whose residual is another question,
validation/notes-dlebert.md, are left out), it runs the row's command (single and ddp) as it stands and with
each of:

  --jitter 0.05 --samples N     every compute kernel times a lognormal draw
  --jitter 0.1 --samples N      (the single run jitters too)
  --straggler 1:1.02            rank 1's compute ops 2 % / 5 % longer
  --straggler 1:1.05            (the single run has no rank 1)

and prints the row's efficiency (100 x speedup_vs_single / 8, the rows'
metric) and each variant's cost in points (the row's value less the
variant's). With --jitter the efficiency is taken from the p50 columns over
the N seeds (per-batch time = iter_p50_ms x per_batch_ms / iter_ms, for the
single run's gradient accumulation), without it from speedup_vs_single.
Needs bin/ddpsim (make). Standard library only.
"""
import argparse
import csv
import io
import os
import shlex
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.environ.get("DDPSIM_BIN", os.path.join(ROOT, "bin", "ddpsim"))
ROWS = os.path.join(ROOT, "validation", "ddp_scaling.csv")
SOURCE = "NVIDIA/DeepLearningExamples PyTorch/Classification/ConvNets/"


def variants(samples):
    return [("jitter 0.05", "--jitter 0.05 --samples %d" % samples),
            ("jitter 0.1", "--jitter 0.1 --samples %d" % samples),
            ("straggler 1:1.02", "--straggler 1:1.02"),
            ("straggler 1:1.05", "--straggler 1:1.05")]


def run(cmd):
    proc = subprocess.run([BIN] + shlex.split(cmd), cwd=ROOT, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit("bench/skew_points.py: %s %s: exit %d: %s"
                 % (BIN, cmd, proc.returncode, proc.stderr.strip()))
    text = "\n".join(l for l in proc.stdout.splitlines() if l and not l.startswith("#"))
    return {r["strategy"]: r for r in csv.DictReader(io.StringIO(text))}


def per_batch_p50(row):
    return float(row["iter_p50_ms"]) * float(row["per_batch_ms"]) / float(row["iter_ms"])


def efficiency(out):
    """100 x the per-batch time of single over ddp's: the rows' metric."""
    single, ddp = out["single"], out["ddp"]
    if "iter_p50_ms" in ddp:
        return 100.0 * per_batch_p50(single) / per_batch_p50(ddp)
    return 100.0 * float(ddp["speedup_vs_single"]) / float(ddp["world_size"])


def label(row):
    cmd = shlex.split(row["command"])
    model = cmd[cmd.index("--model") + 1]
    math = "AMP" if "--amp" in cmd else "FP32/TF32"
    return "%s %s b%s" % (model, math, cmd[cmd.index("--batch") + 1])


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--topo", default="dgx-a100")
    ap.add_argument("--samples", type=int, default=16)
    args = ap.parse_args(argv)
    with open(ROWS) as f:
        rows = [r for r in csv.DictReader(f) if r["source"].startswith(SOURCE)
                and "--topo %s " % args.topo in r["command"]]
    if not rows:
        sys.exit("bench/skew_points.py: no %s rows on --topo %s in %s" % (SOURCE, args.topo, ROWS))
    kinds = variants(args.samples)
    print("row (--topo %s)" % args.topo + " " * 14 + "published  ddpsim"
          + "".join("  %16s" % k for k, _ in kinds))
    for row in rows:
        base = efficiency(run(row["command"]))
        costs = [base - efficiency(run(row["command"] + " " + extra)) for _, extra in kinds]
        print("%-36s %9.1f %7.2f" % (label(row), float(row["value"]), base)
              + "".join("  %16.2f" % c for c in costs))
    print("(cost in points: the row's efficiency less the variant's; jitter over %d seeds, p50)"
          % args.samples)


if __name__ == "__main__":
    main(sys.argv[1:])
