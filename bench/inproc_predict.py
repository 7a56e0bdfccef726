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
  calibration   the round's dispatch_us / node_us as the CSV has them (runs
                before 2026-11-28d: per every dispatch and node; the
                predictions rescale their files to ddpsim's unit,
                in_current_unit), and its host sum: the
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
                sim/net/topo_compute.c's ds_topo_host_factor_fastest and _slowest).

Then the same at the rounds' median (host_inproc's summary figure), and per
prediction the median |error| over the rounds and how many lie in range.

--calib-mode stream reads the stream calibrations instead (host_inproc.py
--calib-modes spin,stream: the calib rows of calib_mode stream, the files
PREFIX-stream-rN.yaml/.csv and PREFIX-stream-pooled.yaml), and adds a column:
ddpsim at the round's stream iterations all counted (forward and backward
medians over every iteration, drained or not, over the model's dispatches
and nodes, as a calibration file written to a temporary directory), the
bound from the other side of the drained phases' (which keep the iterations
where the host was the slower: host_calibrate.py's "two weak points"). A
round whose drained phases left a key out of its file is predicted with the
topology's default for that key: its cell says which key the file has
("[dispatch only]"); a round with no file, "-". Run it once per mode to
set the two side by side (bench/gpu_next10.sh's parts). --loop free runs
ddpsim as the training ran (consecutive iterations, no synchronize; its
gpu_ms is that loop's); the default, ddpsim's sync loop, prints the
committed inproc_predict.txt tables as they were.
Standard library only; runs DDPSIM_BIN (default bin/ddpsim).

    python3 bench/inproc_predict.py bench/results/gpu-2026-11-27f-h200/inproc-rn50.csv
"""

import argparse
import atexit
import csv
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from csv_input import InputError, num  # noqa: E402
import host_pool  # noqa: E402  (the model files' free dispatches and nodes)
import host_rescale  # noqa: E402  (an old calibration file in ddpsim's unit)
sys.path.insert(0, os.path.join(ROOT, "validation"))
from run import host_factors  # noqa: E402  (one reader of topo_compute.c's host factors)

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
    if args.loop != "sync":  # the committed runs' tables were printed without the flag
        cmd += ["--loop", args.loop]
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
    """'+7.2 % in' / 'below' / 'above': the error and where meas lies in p's range
    ("-" where there is no prediction; p's fourth item, where there is one, a note)."""
    if p is None:
        return "-"
    where = "in" if p[1] <= meas <= p[2] else "below" if meas < p[1] else "above"
    return "%.2f (%+.1f %%, %s)%s" % (p[0], 100.0 * (p[0] - meas) / meas, where,
                                     " [%s]" % p[3] if len(p) > 3 and p[3] else "")


def launching_counts(args, csv_path):
    """(dispatches, nodes) that launch a kernel for a round's per-iteration
    CSV (host_calibrate.py's columns: every dispatch and node), the free ones
    from the model file, whose counts must match the CSV's."""
    rows = read_rows(csv_path)
    if not rows:
        raise InputError("%s: no rows" % csv_path)
    line, first = rows[0]
    dispatches = int(num(first, "dispatches", csv_path, line))
    nodes = int(num(first, "nodes", csv_path, line))
    return (dispatches - host_pool.model_views(args.model, dispatches, csv_path),
            nodes - host_pool.model_view_nodes(args.model, nodes, bool(args.amp), csv_path))


def in_current_unit(path, tmpdir):
    """path itself where its host section has its unit; else (the files
    host_inproc.py wrote before 2026-11-28c: per every dispatch and node) a
    copy in tmpdir in ddpsim's unit, as bench/host_rescale.py rescales one."""
    text = host_rescale.rescale(path)
    if text is None:
        return path
    out = os.path.join(tmpdir, os.path.basename(path))
    with open(out, "w") as f:
        f.write(text)
    return out


def at_file(args, factors, path, tmpdir):
    """at() for a calibration file that may be missing (None) or lack a key:
    the prediction then carries "dispatch only" or "node only" (ddpsim took
    the topology's default for the other). An old file's dispatch and node are
    rescaled to ddpsim's unit first (in_current_unit)."""
    if not os.path.isfile(path):
        return None
    with open(path) as f:
        keys = [k for k in ("dispatch", "node")
                if any(line.startswith("  %s:" % k) for line in f)]
    path = in_current_unit(path, tmpdir)
    return at(args, factors, path) + ("" if len(keys) == 2 else "%s only" % keys[0],)


def all_iterations(args, factors, path, tmpdir):
    """A stream round's prediction at its forward and backward medians over
    every iteration (PREFIX-stream-rN.csv), drained or not."""
    rows = read_rows(path)
    if not rows:
        raise InputError("%s: no rows" % path)
    med = {k: statistics.median(num(r, k, path, n) for n, r in rows) for k in ("fwd_ms", "bwd_ms")}
    launch_d, launch_n = launching_counts(args, path)
    calib = os.path.join(tmpdir, os.path.basename(path)[:-len(".csv")] + "-all.yaml")
    with open(calib, "w") as f:
        f.write("schema_version: 1\nhost:\n  unit: %s\n  dispatch: %.3fus\n"
                "  node: %.3fus\n" % (host_pool.HOST_UNIT, med["fwd_ms"] * 1e3 / launch_d,
                                       med["bwd_ms"] * 1e3 / launch_n))
    return at(args, factors, calib)


def us_cell(r, key, path, line):
    """A calib row's dispatch_us or node_us, "-" where its phase never ran free."""
    return "-" if r.get(key) in ("", None) else "%.1f" % num(r, key, path, line)


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
    ap.add_argument("--loop", choices=("sync", "free"), default="sync",
                    help="ddpsim's --loop: free, as the training (gpu_ms) ran: consecutive "
                    "iterations without a synchronize; sync, ddpsim's default, prints the "
                    "committed tables")
    ap.add_argument("--calib-mode", choices=("spin", "stream"), default="spin",
                    help="which calibrations: the spin's (PREFIX-rN) or the stream's "
                    "(PREFIX-stream-rN), host_inproc.py --calib-modes")
    args = ap.parse_args(argv)
    stream = args.calib_mode == "stream"
    try:
        prefix = args.csv[:-len(".csv")] if args.csv.endswith(".csv") else args.csv
        rows = read_rows(args.csv)
        train = [(line, r) for line, r in rows
                 if r.get("kind") == "train" and r.get("config") == args.config]
        calib = {r.get("round"): (line, r) for line, r in rows if r.get("kind") == "calib"
                 and (r.get("calib_mode") or "spin") == args.calib_mode}
        if stream:
            prefix += "-stream"
        if not calib:
            raise InputError("%s: no calib row of calib_mode %s" % (args.csv, args.calib_mode))
        if not train:
            raise InputError("%s: no train row of config %s" % (args.csv, args.config))
        line, first = train[0]
        args.model, args.amp = first.get("model"), first.get("amp") or None
        args.batch = int(num(first, "batch", args.csv, line))
        factors = host_factors()
        default = at(args, factors, None)
        # rescaled calibration files and the all-iterations ones: removed on the way out
        tmpdir = tempfile.mkdtemp(prefix="inproc_predict-")
        atexit.register(shutil.rmtree, tmpdir, True)
        pooled_path = prefix + "-pooled.yaml"
        pooled = at_file(args, factors, pooled_path, tmpdir)
        print("%s, config %s: %s batch %d; ddpsim --topo %s%s, range x%g to x%g%s"
              % ((args.csv, args.config, args.model, args.batch, args.topo,
                  "" if args.loop == "sync" else " --loop " + args.loop) + factors
                 + (", stream calibrations (drained phases)" if stream else "",)))
        print()
        print("| round | measured (min) | host | calibration dispatch / node µs | "
              "calibration fwd+bwd+step | / host | default | the round's calibration | "
              "pooled in-process |%s" % (" all iterations |" if stream else ""))
        print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |%s"
              % (" --- |" if stream else ""))
        errs = {"default": [], "round": [], "pooled": [], "all": []}
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
            own = at_file(args, factors, "%s-r%s.yaml" % (prefix, rnd), tmpdir)
            every = (all_iterations(args, factors, "%s-r%s.csv" % (prefix, rnd), tmpdir)
                     if stream else None)
            cells = [("default", default), ("round", own), ("pooled", pooled),
                     ("all", every)]
            for key, p in cells:
                if p:
                    errs[key].append((abs(100.0 * (p[0] - meas) / meas),
                                      p[1] <= meas <= p[2]))
            print("| %s | %.3f (%.3f) | %.3f | %s / %s | %.3f | x%.3f | %s | %s | %s |%s"
                  % (rnd, meas, num(r, "gpu_ms_min", args.csv, line), host,
                     us_cell(c, "dispatch_us", args.csv, cl),
                     us_cell(c, "node_us", args.csv, cl),
                     total, total / host, verdict(meas, default), verdict(meas, own),
                     verdict(meas, pooled),
                     " %s |" % verdict(meas, every) if stream else ""))
        med = statistics.median(measured)
        print("| median | %.3f | | | | | %s | | %s |%s"
              % (med, verdict(med, default), verdict(med, pooled), " |" if stream else ""))
        print()
        for key, what in (("default", "the pooled default"), ("round", "each round's own"),
                          ("pooled", "the pooled in-process"),
                          ("all", "each round's stream iterations all counted")):
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
