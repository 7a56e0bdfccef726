#!/usr/bin/env python3
"""Pool bench/torch_ddp_host.py runs into DDP's host defaults (sim/net/
topo_compute.c: host_grad_hook + host_grad_copy, host_collective,
host_buffer): one value per lend, then the median over lends, as
bench/host_pool.py pools host_dispatch and host_node.

A lend is a CSV's folder, or, under a results directory, the folder's first
component there (bench/results/gpu-2026-11-28c-h200/call2 ->
gpu-2026-11-28c-h200: bench/host_pool.py's lend_name), so several CSVs, and
several calls on one lent machine, are one lend. Each CSV's configurations
ran interleaved, rep by rep (its reps_ms columns), so every rep gives a
paired difference, steadier than a difference of medians on hosts that
swing between reps:
  per gradient  (ddp-one - plain) / layers
  per bucket    (ddp-each - ddp-one) / (ddp-each's buckets - ddp-one's)
  per buffer    ddp-one-bcast - ddp-one (the toy's buffers, all in)
A lend's value is the median over the reps of its run at --layers (161 by
default: ResNet-50's parameter tensors, so DDP's per-iteration cost spreads
over its gradients as over ResNet-50's), or of its largest count where it
ran no such run; where it ran several at that count (several calls on one
machine), the median over all their reps pooled, each rep paired within its
own run. The medians of the configurations' medians (the script's own
summary, unpaired; with several runs, the median of the runs' figures)
print beside them.
Then the defaults: the per-gradient median split into the copy back,
--copy-us (a kernel launch's host cost, which does not grow with a host's
DDP cost: 5.8 us by default), and the hook, the rest; the per-bucket
median; per lend that
measured buffers, its paired ddp-one-bcast - ddp-one less what the new
defaults already charge the buffers' --buffer-buckets dtype buckets (each a
cat launch, host_grad_copy, and a broadcast call, host_collective: sim/
train/ddp_buffers.c), over --buffer-count buffers, and their median.
Per iteration (2026-11-28, host_ddp_iter): per lend that ran two or more
layer counts in one CSV (torch_ddp_host.py --layers 1,81,161), per rep the
least-squares line of the paired ddp-one - plain against the layer count;
its intercept is DDP's cost once an iteration plus ddp-one's one bucket
call. A lend's value is the median of its runs' per-rep intercepts, pooled;
host_ddp_iter is the median over those lends less the new host_collective
(the one call ddpsim already charges), and host_grad_hook net of it the
per-gradient median less that median over --layers (each lend's (ddp-one -
plain) / layers held it spread over the gradients) less the copy.
Standard library only.

    python3 bench/ddp_host_pool.py [--layers 161] [--copy-us 5.8]
        [--buffer-count 159] [--buffer-buckets 2] CSV...
"""

import argparse
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from csv_input import InputError, ddp_host_rows  # noqa: E402
from host_pool import lend_name, line_fit  # noqa: E402


def read_runs(path):
    """{layers: {config: (buckets, [rep ms], median ms)}} of one CSV."""
    runs = {}
    for r in ddp_host_rows(path):
        runs.setdefault(r["layers"], {})[r["config"]] = (r["buckets"], r["reps_ms"],
                                                         r["iter_ms_median"])
    for layers, cfg in runs.items():
        for need in ("plain", "ddp-one", "ddp-each"):
            if need not in cfg:
                raise InputError("%s: no %s row at %d layers" % (path, need, layers))
        if len({len(v[1]) for v in cfg.values()}) != 1:
            raise InputError("%s: the configurations at %d layers ran different rep counts"
                             % (path, layers))
    return runs


def paired(a, b, scale):
    """Per rep (a - b) * scale, and their median."""
    d = [(x - y) * scale for x, y in zip(a, b)]
    return d, statistics.median(d)


def lend_terms(paths, want_layers):
    """One lend's (layers, paths, per-gradient, per-bucket, per-buffer) terms,
    each (per-rep list, paired median, unpaired); per-buffer None unless
    every run at that count has ddp-one-bcast. The runs at --layers (else
    at the lend's largest count) pool their paired reps. us; the buffers'
    term is the toy's total, not per buffer."""
    runs = [(layers, path, cfg) for path in paths for layers, cfg in read_runs(path).items()]
    layers = max((l == want_layers, l) for l, _, _ in runs)[1]
    chosen = [(path, cfg) for l, path, cfg in runs if l == layers]
    grad, bucket, buf = ([], []), ([], []), ([], [])
    for path, cfg in chosen:
        plain, one, each = cfg["plain"], cfg["ddp-one"], cfg["ddp-each"]
        grad[0].extend(paired(one[1], plain[1], 1e3 / layers)[0])
        grad[1].append((one[2] - plain[2]) * 1e3 / layers)
        extra = each[0] - one[0]
        if extra < 1:
            raise InputError("%s: ddp-each has %d buckets at %d layers, ddp-one %d: no bucket "
                             "to time" % (path, each[0], layers, one[0]))
        bucket[0].extend(paired(each[1], one[1], 1e3 / extra)[0])
        bucket[1].append((each[2] - one[2]) * 1e3 / extra)
        if "ddp-one-bcast" in cfg:
            bc = cfg["ddp-one-bcast"]
            buf[0].extend(paired(bc[1], one[1], 1e3)[0])
            buf[1].append((bc[2] - one[2]) * 1e3)

    def term(t):
        return t[0], statistics.median(t[0]), statistics.median(t[1])
    return (layers, [p for p, _ in chosen], term(grad), term(bucket),
            term(buf) if len(buf[1]) == len(chosen) else None)


def lend_intercepts(paths):
    """Per rep of every run in paths with two or more layer counts, the
    intercept (us) of the line of paired ddp-one - plain over the counts;
    [] where no run has two counts."""
    out = []
    for path in paths:
        runs = read_runs(path)
        counts = sorted(runs)
        if len(counts) < 2:
            continue
        reps = len(runs[counts[0]]["plain"][1])
        if any(len(runs[n]["plain"][1]) != reps for n in counts):
            raise InputError("%s: the layer counts ran different rep counts" % path)
        for r in range(reps):
            pts = [(n, (runs[n]["ddp-one"][1][r] - runs[n]["plain"][1][r]) * 1e3)
                   for n in counts]
            out.append(line_fit(pts)[0])
    return out


def in_lend(path):
    """A CSV's path under its lend's folder (call2/ddp_host_layers.csv), else its name."""
    parts = os.path.normpath(os.path.abspath(path)).split(os.sep)
    if "results" in parts[:-2]:
        return os.path.join(*parts[parts.index("results") + 2:])
    return os.path.basename(path)


def reps(v):
    return " ".join("%.1f" % x for x in v)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("csvs", nargs="+", metavar="CSV")
    ap.add_argument("--layers", type=int, default=161,
                    help="the layer count whose run a lend's value comes from, where it ran one")
    ap.add_argument("--copy-us", type=float, default=5.8,
                    help="host_grad_copy, us: the copy back's launch (sim/net/topo_compute.c "
                    "says why it is not a share of the median); the hook gets the rest")
    ap.add_argument("--buffer-count", type=int, default=159,
                    help="the toy's buffers (torch_ddp_host.py --buffers N: 3 N)")
    ap.add_argument("--buffer-buckets", type=int, default=2,
                    help="the buffers' dtype buckets (each a cat launch and a broadcast call)")
    a = ap.parse_args()
    if not 0 <= a.copy_us < float("inf"):
        ap.error("--copy-us: %s: expected a non-negative number of microseconds" % a.copy_us)
    if a.buffer_count < 1 or a.buffer_buckets < 0:
        ap.error("--buffer-count must be 1 or more, --buffer-buckets 0 or more")
    lends = {}
    for p in a.csvs:
        lends.setdefault(lend_name(os.path.dirname(os.path.abspath(p))), []).append(p)
    try:
        terms = {lend: lend_terms(paths, a.layers) for lend, paths in lends.items()}
        icepts = {lend: lend_intercepts(paths) for lend, paths in lends.items()}
    except InputError as e:
        print("ddp_host_pool.py: %s" % e, file=sys.stderr)
        sys.exit(2)

    print("per lend (us; paired per rep, their median; unpaired: the configurations' medians)")
    for lend, (layers, paths, grad, bucket, buf) in terms.items():
        print("%s (%s, %d layers%s)" % (lend, ", ".join(in_lend(p) for p in paths), layers,
                                         ", %d runs' reps pooled" % len(paths)
                                         if len(paths) > 1 else ""))
        print("  per gradient: %s, median %.2f (unpaired %.2f)" % (reps(grad[0]), grad[1], grad[2]))
        print("  per bucket:   %s, median %.2f (unpaired %.2f)"
              % (reps(bucket[0]), bucket[1], bucket[2]))
        if buf:
            print("  buffers, all: %s, median %.1f (unpaired %.1f): %.2f a buffer raw"
                  % (reps(buf[0]), buf[1], buf[2], buf[1] / a.buffer_count))
    grad_med = statistics.median(t[2][1] for t in terms.values())
    bucket_med = statistics.median(t[3][1] for t in terms.values())
    print("median over %d lends: %.2f us a gradient (%s), %.2f us a bucket (%s)"
          % (len(terms), grad_med, " ".join("%.2f" % t[2][1] for t in terms.values()),
             bucket_med, " ".join("%.2f" % t[3][1] for t in terms.values())))
    copy = round(min(a.copy_us, grad_med), 1)
    hook = round(grad_med - copy, 1)
    coll = round(bucket_med, 1)
    print("host_grad_hook %.1f us (%.2f less the copy's launch), host_grad_copy %.1f us, "
          "host_collective %.1f us" % (hook, grad_med, copy, coll))
    charged = a.buffer_buckets * (copy + coll)
    per_buf = {}
    for lend, t in terms.items():
        if t[4]:
            per_buf[lend] = (t[4][1] - charged) / a.buffer_count
            print("%s: (%.1f - %d x (%.1f + %.1f)) / %d = %.2f us a buffer"
                  % (lend, t[4][1], a.buffer_buckets, copy, coll, a.buffer_count, per_buf[lend]))
    if per_buf:
        print("host_buffer: median over %d lends %.2f us"
              % (len(per_buf), statistics.median(per_buf.values())))
    per_iter = {lend: v for lend, v in icepts.items() if v}
    for lend, v in per_iter.items():
        print("%s: per-rep intercepts of ddp-one - plain over the layer counts: %s, median %.1f "
              "(%d of %d above 0)" % (lend, reps(v), statistics.median(v),
                                      sum(x > 0 for x in v), len(v)))
    if per_iter:
        med = statistics.median(statistics.median(v) for v in per_iter.values())
        print("host_ddp_iter: median over %d lends %.1f us less host_collective %.1f = %.1f us"
              % (len(per_iter), med, coll, med - coll))
        spread = med / a.layers
        print("host_grad_hook net of it: %.2f - %.1f / %d layers (%.2f) - %.1f = %.1f us"
              % (grad_med, med, a.layers, spread, copy, round(grad_med - spread - copy, 1)))


if __name__ == "__main__":
    main()
