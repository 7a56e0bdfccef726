#!/usr/bin/env python3
"""Per round of a bench/host_inproc.py run: its calibration against its own
training run, directly and through ddpsim.

host_inproc.py times, in ONE process, `--rounds` times, host_calibrate's
phases behind a spin (the round's calibration) and then the training
configs. For each round of config `--config` (default plain) this prints a
markdown table row:

  measured      gpu_ms (the round's median gap between CUDA events of
                consecutive iterations) and gpu_ms_min;
  host          host_ms, the training run's host enqueue time per iteration;
  calibration   the round's dispatch_us / node_us, and its host sum: the
                medians of forward, backward and step over the round's
                iterations (PREFIX-rN.csv); sum / host says, without ddpsim,
                whether the calibration's phases took the training
                iteration's host time (the training iteration also zeroes
                the gradients, which the sum leaves out);
  ddpsim        the iteration predicted at the pooled default host costs,
                at the round's calibration (--calib PREFIX-rN.yaml) and at
                the pooled in-process one (--calib PREFIX-pooled.yaml), each
                with its error and whether the measurement lies inside the
                range ddpsim's summary prints for it (--host-scale at
                sim/net/topo.c's ds_topo_host_factor_fastest and _slowest).

Then the same at the rounds' median (host_inproc's summary figure), and per
prediction the median |error| over the rounds and how many lie in range.
Standard library only; runs DDPSIM_BIN (default bin/ddpsim).

    python3 bench/inproc_predict.py bench/results/gpu-2026-11-27f-h200/inproc-rn50.csv
"""

import argparse
import csv
import os
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from csv_input import InputError, num  # noqa: E402
sys.path.insert(0, os.path.join(ROOT, "validation"))
from run import host_factors  # noqa: E402  (one reader of topo.c's host factors)

BIN = os.environ.get("DDPSIM_BIN", "bin/ddpsim")


def read_rows(path):
    try:
        with open(path, newline="") as f:
            return [(line, r) for line, r in enumerate(csv.DictReader(f), start=2)]
    except OSError as e:
        raise InputError("cannot read %s: %s" % (path, e.strerror))


def predict(args, extra):
    """ddpsim's iter_ms for the run's model, batch and amp, with `extra` arguments."""
    cmd = [BIN, "--topo", args.topo, "--world-size", "1", "--model", args.model,
           "--strategy", "single", "--batch", str(args.batch), "--format", "csv"] + extra
    if args.amp:
        cmd += ["--amp", args.amp]
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    if proc.returncode != 0:
        raise InputError("%s failed: %s" % (" ".join(cmd), proc.stderr.strip()))
    return float(list(csv.DictReader(proc.stdout.splitlines()))[0]["iter_ms"])


def at(args, factors, calib):
    """(prediction, low, high) at a calibration file (None: the pooled default)."""
    extra = ["--calib", calib] if calib else []
    return tuple(predict(args, extra + s) for s in
                 ([], ["--host-scale", "%g" % factors[0]], ["--host-scale", "%g" % factors[1]]))


def verdict(meas, p):
    """'+7.2 % in' / 'below' / 'above': the error and where meas lies in p's range."""
    where = "in" if p[1] <= meas <= p[2] else "below" if meas < p[1] else "above"
    return "%.2f (%+.1f %%, %s)" % (p[0], 100.0 * (p[0] - meas) / meas, where)


def phase_sum(path):
    """The medians of fwd_ms, bwd_ms and step_ms over a round's iterations."""
    rows = read_rows(path)
    if not rows:
        raise InputError("%s: no rows" % path)
    return sum(statistics.median(num(r, k, path, line) for line, r in rows)
               for k in ("fwd_ms", "bwd_ms", "step_ms"))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("csv", help="host_inproc.py's --out CSV; its --calib-out PREFIX is the "
                    "CSV's path less .csv (PREFIX-rN.csv/.yaml, PREFIX-pooled.yaml)")
    ap.add_argument("--config", default="plain")
    ap.add_argument("--topo", default="validation/topologies/nd-h200-v5.yaml")
    args = ap.parse_args(argv)
    try:
        prefix = args.csv[:-len(".csv")] if args.csv.endswith(".csv") else args.csv
        rows = read_rows(args.csv)
        train = [(line, r) for line, r in rows
                 if r.get("kind") == "train" and r.get("config") == args.config]
        calib = {r.get("round"): (line, r) for line, r in rows if r.get("kind") == "calib"}
        if not train:
            raise InputError("%s: no train row of config %s" % (args.csv, args.config))
        line, first = train[0]
        args.model, args.amp = first.get("model"), first.get("amp") or None
        args.batch = int(num(first, "batch", args.csv, line))
        factors = host_factors()
        default = at(args, factors, None)
        pooled_path = prefix + "-pooled.yaml"
        pooled = at(args, factors, pooled_path) if os.path.isfile(pooled_path) else None
        print("%s, config %s: %s batch %d; ddpsim --topo %s, range x%g to x%g"
              % ((args.csv, args.config, args.model, args.batch, args.topo) + factors))
        print()
        print("| round | measured (min) | host | calibration dispatch / node µs | "
              "calibration fwd+bwd+step | / host | default | the round's calibration | "
              "pooled in-process |")
        print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
        errs = {"default": [], "round": [], "pooled": []}
        measured = []
        for line, r in train:
            rnd = r.get("round")
            meas = num(r, "gpu_ms", args.csv, line)
            host = num(r, "host_ms", args.csv, line)
            measured.append(meas)
            if rnd not in calib:
                raise InputError("%s:%d: round %s has no calib row" % (args.csv, line, rnd))
            cl, c = calib[rnd]
            total = phase_sum("%s-r%s.csv" % (prefix, rnd))
            own = at(args, factors, "%s-r%s.yaml" % (prefix, rnd))
            cells = [("default", default), ("round", own), ("pooled", pooled)]
            for key, p in cells:
                if p:
                    errs[key].append((abs(100.0 * (p[0] - meas) / meas), p[1] <= meas <= p[2]))
            print("| %s | %.3f (%.3f) | %.3f | %.1f / %.1f | %.3f | x%.3f | %s | %s | %s |"
                  % (rnd, meas, num(r, "gpu_ms_min", args.csv, line), host,
                     num(c, "dispatch_us", args.csv, cl), num(c, "node_us", args.csv, cl),
                     total, total / host, verdict(meas, default), verdict(meas, own),
                     verdict(meas, pooled) if pooled else "-"))
        med = statistics.median(measured)
        print("| median | %.3f | | | | | %s | | %s |"
              % (med, verdict(med, default), verdict(med, pooled) if pooled else "-"))
        print()
        for key, what in (("default", "the pooled default"), ("round", "each round's own"),
                          ("pooled", "the pooled in-process")):
            e = errs[key]
            if e:
                print("rounds at %s: median |error| %.1f %%, %d of %d in range"
                      % (what, statistics.median(x[0] for x in e), sum(x[1] for x in e), len(e)))
    except InputError as e:
        print("inproc_predict: %s" % e, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
