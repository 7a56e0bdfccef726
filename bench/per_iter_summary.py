#!/usr/bin/env python3
"""Summarise bench/torch_measure.py --per-iter CSVs: per file and run, the
GPU gap's median, quartiles, minimum and maximum, the host's enqueue, the
process's CPU time over the enqueue (1.0: the host ran the whole time), its
threads' run-queue wait and the machine's steal (bench/host_sched.py), and how
many iterations came within 5 % of the run's floor (the fastest iteration of
that run name over every file given). --seq prints each run's iterations
rounded to the millisecond. Standard library only.

    python3 bench/per_iter_summary.py [--seq] iters-t1.csv iters-t2.csv ...
"""

import csv
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from csv_input import InputError, num  # noqa: E402


COLUMNS = ("name", "gpu_ms", "enq_ms", "cpu_ms", "wait_ms", "steal_ms", "cpus")
NUMBERS = ("gpu_ms", "enq_ms", "cpu_ms", "wait_ms", "steal_ms")


def load(path):
    """{run name: [rows in iteration order]} of one CSV, each row its dict with
    the NUMBERS columns as floats."""
    runs = {}
    try:
        with open(path, newline="") as f:
            reader = csv.DictReader(f)
            for column in COLUMNS:
                if column not in (reader.fieldnames or ()):
                    raise InputError("%s:1: no column %s" % (path, column))
            for r in reader:
                line = reader.line_num
                if not r["name"]:
                    raise InputError("%s:%d: name is empty" % (path, line))
                for key in NUMBERS:
                    r[key] = num(r, key, path, line)
                if r["enq_ms"] <= 0:
                    raise InputError("%s:%d: enq_ms %r is not above 0" % (path, line,
                                                                           r["enq_ms"]))
                r["line"] = line
                runs.setdefault(r["name"], []).append(r)
    except OSError as e:
        raise InputError("cannot read %s: %s" % (path, e.strerror))
    if not runs:
        raise InputError("%s: no rows" % path)
    for name, rows in runs.items():
        if len(rows) < 2:
            raise InputError("%s:%d: run %s has one row; its quartiles need two"
                             % (path, rows[0]["line"], name))
    return runs


def main():
    args = [a for a in sys.argv[1:] if a != "--seq"]
    if not args:
        sys.exit(__doc__)
    try:
        files = [(path, load(path)) for path in args]
    except InputError as e:
        print("per_iter_summary: %s" % e, file=sys.stderr)
        return 2
    floor = {}
    for _, runs in files:
        for name, rows in runs.items():
            fastest = min(r["gpu_ms"] for r in rows)
            floor[name] = min(floor.get(name, fastest), fastest)
    print("file,run,n,gpu_median,gpu_q1,gpu_q3,gpu_min,gpu_max,enq_median,cpu_over_enq_median,"
          "cpu_over_enq_min,cpu_over_enq_max,wait_ms_sum,wait_ms_max,steal_ms_sum,cpus,"
          "within_5pct_of_floor,floor")
    for path, runs in files:
        for name, rows in runs.items():
            gpu = [r["gpu_ms"] for r in rows]
            enq = [r["enq_ms"] for r in rows]
            ratio = [r["cpu_ms"] / e for r, e in zip(rows, enq)]
            wait = [r["wait_ms"] for r in rows]
            steal = sum(r["steal_ms"] for r in rows)
            q1, _, q3 = statistics.quantiles(gpu, n=4)
            near = sum(g <= floor[name] * 1.05 for g in gpu)
            print("%s,%s,%d,%.3f,%.1f,%.1f,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f,%.1f,%s,%d,%.3f" % (
                path, name, len(rows), statistics.median(gpu), q1, q3, min(gpu), max(gpu),
                statistics.median(enq), statistics.median(ratio), min(ratio), max(ratio),
                sum(wait), max(wait), steal, "|".join(sorted({r["cpus"] for r in rows})),
                near, floor[name]))
            if "--seq" in sys.argv:
                print("#   " + " ".join("%.0f" % g for g in gpu))
    return 0


if __name__ == "__main__":
    sys.exit(main())
