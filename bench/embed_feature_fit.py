#!/usr/bin/env python3
"""embedding_backward_feature_kernel in torch.profiler traces: each call's ids, grid,
block and time, the chunk cost the fit traces imply, and what that cost predicts for
the others (sim/train/compute_layer.c DS_EMBED_FEATURE_CHUNK_CYCLES).

    python3 bench/embed_feature_fit.py [--fit TRACE ...] TRACE.json.gz ...

The kernel (PyTorch's embedding_dense_backward_cuda, at most 3072 ids a step) runs
ceil(D / 32) CTAs of 32 x 32 threads, every CTA walking every id 32 at a time: ddpsim
charges ceil(ids / 32) chunks of DS_EMBED_FEATURE_CHUNK_CYCLES at the SM clock, plus its
kernel_overhead (4 us). The constant is (the mean time of the --fit traces' calls less the
overhead) / their chunks x the clock, as compute_layer.c says; every other call is then
predicted and its error printed, with a least-squares line over all calls (time = a + b x
ids) for comparison. --fit defaults to the H200 GPT-2 bf16 trace. Standard library only.
"""
import argparse
import math
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
import trace_classes as tc  # noqa: E402

OVERHEAD_US = 4.0
CLOCK_HZ = 1980e6  # the H200's boost clock (kernel_models.h DS_KM_MEASURED_CLOCK_MHZ)
DEFAULT_FIT = "bench/results/gpu-2026-11-26-h200/prof/gpt2-bf16-b8-p.json.gz"


def calls(path):
    """(ids, D, grid, block, us) of each feature kernel in the trace."""
    out = []
    for e, chain in tc.gpu_activities(tc.load(path)):
        if "embedding_backward_feature_kernel" not in e["name"]:
            continue
        aten = [c for c in chain if c["name"] == "aten::embedding_dense_backward"]
        grad = tc.dims(aten[-1])[0] if aten else []
        ids = math.prod(grad[:-1]) if grad else 0
        args = e.get("args", {})
        out.append((ids, grad[-1] if grad else 0, args.get("grid"), args.get("block"),
                    e["dur"]))
    return out


def parse_args(argv):
    """The command line as argparse reads it: --help/-h prints this module's docstring
    (exit 0), a bad argument the usage (exit 2)."""
    p = argparse.ArgumentParser(prog="python3 bench/embed_feature_fit.py", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--fit", action="append", default=[], metavar="TRACE",
                   help="a trace the chunk cost is fitted on (repeatable; default %s)" % DEFAULT_FIT)
    p.add_argument("traces", nargs="+", metavar="TRACE.json.gz", help="traces to predict")
    return p.parse_args(argv)


def main():
    args = parse_args(sys.argv[1:])
    argv = args.traces
    fit = args.fit or [DEFAULT_FIT]
    fitted = [c for p in fit for c in calls(p)]
    if not fitted:
        sys.exit("no embedding_backward_feature_kernel in %s" % ", ".join(fit))
    per_chunk_us = sum((c[4] - OVERHEAD_US) / math.ceil(c[0] / 32) for c in fitted) / len(fitted)
    print("fit on %d calls (%s): %.4f us a chunk = %.0f cycles at %.0f MHz" % (
        len(fitted), ", ".join(os.path.basename(p) for p in fit), per_chunk_us,
        per_chunk_us * 1e-6 * CLOCK_HZ, CLOCK_HZ / 1e6))
    print("%-36s %6s %5s %-12s %-12s %9s %9s %7s" % (
        "trace", "ids", "D", "grid", "block", "us", "pred us", "err %"))
    pts = []
    for p in argv:
        for ids, d, grid, block, us in calls(p):
            pred = OVERHEAD_US + math.ceil(ids / 32) * per_chunk_us
            pts.append((ids, us))
            print("%-36s %6d %5d %-12s %-12s %9.3f %9.3f %+7.1f%s" % (
                os.path.basename(p)[:36], ids, d, grid, block, us, pred,
                100 * (pred - us) / us, "  (fit)" if p in fit else ""))
    if len(set(i for i, _ in pts)) > 1:
        n = len(pts)
        mx = sum(i for i, _ in pts) / n
        my = sum(u for _, u in pts) / n
        b = sum((i - mx) * (u - my) for i, u in pts) / sum((i - mx) ** 2 for i, _ in pts)
        print("line over all calls: %.2f us + %.1f ns an id (%.0f ns a chunk of 32)" % (
            my - b * mx, b * 1e3, 32 * b * 1e3))


if __name__ == "__main__":
    main()
