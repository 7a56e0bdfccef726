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
import statistics
import sys


def load(path):
    """{run name: [row dicts in iteration order]} of one CSV."""
    runs = {}
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            runs.setdefault(r["name"], []).append(r)
    return runs


def main():
    args = [a for a in sys.argv[1:] if a != "--seq"]
    if not args:
        sys.exit(__doc__)
    files = [(path, load(path)) for path in args]
    floor = {}
    for _, runs in files:
        for name, rows in runs.items():
            fastest = min(float(r["gpu_ms"]) for r in rows)
            floor[name] = min(floor.get(name, fastest), fastest)
    print("file,run,n,gpu_median,gpu_q1,gpu_q3,gpu_min,gpu_max,enq_median,cpu_over_enq_median,"
          "cpu_over_enq_min,cpu_over_enq_max,wait_ms_sum,wait_ms_max,steal_ms_sum,cpus,"
          "within_5pct_of_floor,floor")
    for path, runs in files:
        for name, rows in runs.items():
            gpu = [float(r["gpu_ms"]) for r in rows]
            enq = [float(r["enq_ms"]) for r in rows]
            ratio = [float(r["cpu_ms"]) / e for r, e in zip(rows, enq)]
            wait = [float(r["wait_ms"]) for r in rows]
            steal = sum(float(r["steal_ms"]) for r in rows)
            q1, _, q3 = statistics.quantiles(gpu, n=4)
            near = sum(g <= floor[name] * 1.05 for g in gpu)
            print("%s,%s,%d,%.3f,%.1f,%.1f,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f,%.1f,%s,%d,%.3f" % (
                path, name, len(rows), statistics.median(gpu), q1, q3, min(gpu), max(gpu),
                statistics.median(enq), statistics.median(ratio), min(ratio), max(ratio),
                sum(wait), max(wait), steal, "|".join(sorted({r["cpus"] for r in rows})),
                near, floor[name]))
            if "--seq" in sys.argv:
                print("#   " + " ".join("%.0f" % g for g in gpu))


if __name__ == "__main__":
    main()
