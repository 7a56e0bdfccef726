#!/usr/bin/env python3
"""The tile model of bench/conv_tile_fit.py fitted on Baidu DeepBench's V100 FP16 sheet:
every convolution row (what tools/gen_gpus.py CONV_TILES sets V100's half entry from).

    git -C DEEPBENCH show 30c51150869ee217f150ef5f31dc69241ed23b49:results/train/DeepBench_NV_V100.xlsx > v100.xlsx
    python3 bench/deepbench_tile_fit.py v100.xlsx

The sheet (bench/deepbench_conv.py's docstring: DGX-1 V100 SXM2, cuDNN 7.6.2, tensor-op
NHWC fp16) times one shape at one batch per row: forward, input gradient, weight gradient
(ms). A row is a point per pass as conv_tile_fit.py's: forward = its forward; backward =
input + weight gradients, one charge as ddpsim charges it (weight gradient alone where the
sheet has no input gradient, "N/A*": an input layer). F = 2 N P Q K C R S per gradient;
bytes = ddpsim's (compute_layer.c: x and y once forward, twice backward or once without an input
gradient, weights once / twice); M = N P Q, n = min(C R S, K). Every parseable row once;
rows of an identical shape and batch (the sheet repeats a few) once. Same fit as
conv_tile_fit.py (its `fit`: tile from its grid, E and t0 per pass, t0 0-60 us in 2 us).

Per-call floor: DeepBench's times are host wall-clock over back-to-back calls of one
kernel (code/nvidia/conv_bench.cu), so each gradient column holds whatever fixed cost a
call has when queued behind the previous one (no launch latency, the GPU-side gaps and
any setup kernels); the backward sums two calls. They are not taken off: the model's
4 us + t0 per charge stand for them, as on the H200's queued rows, and t0 is fitted.

Standard library only.
"""
import argparse
import math
import os
import sys

BENCH = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, BENCH)
import conv_tile_fit as ctf  # noqa: E402
import deepbench_conv as dbc  # noqa: E402

SHEET, PEAK = dbc.SHEETS["fp16"][:2]


def sheet_points(path, esz=2, min_c=0):
    """conv_tile_fit points (pass, F, bytes, s, weight, M, n, label) of every conv row."""
    rows = dbc.read_sheet(path, SHEET)
    pts, seen, inside = [], set(), False
    for r in rows:
        if r and r[0] == "Convolution":
            inside = True
            continue
        if r and r[0].startswith("Recurrent"):
            break
        if not inside or len(r) < 17 or not r[0]:
            continue
        try:
            w, h, c, n, k, s, rr, _, _, sw, sh = (int(float(x)) for x in r[1:12])
            p, q = int(float(r[15])), int(float(r[16]))
        except ValueError:
            continue  # the column heads
        key = (w, h, c, n, k, s, rr, sw, sh, p, q)
        if key in seen or c < min_c:
            continue
        seen.add(key)
        try:
            fwd = float(r[12]) * 1e-3
            grads = [float(x) * 1e-3 for x in r[13:15] if x != "N/A*"]
        except ValueError:
            dbc.fail("%s: sheet %r, row %s: a time that is not a number: %r"
                     % (path, SHEET, r[:12], r[12:15]))
        flops = 2.0 * n * p * q * k * c * s * rr
        act = n * (c * w * h + k * p * q) * esz
        wb = k * c * s * rr * esz
        m, narrow = n * p * q, min(c * s * rr, k)
        lab = "%s b%d %dx%d %d->%d %dx%d/%d" % (r[0].replace(" ", "_"), n, w, h, c, k, s, rr, sw)
        pts.append(("fwd", flops, act + wb, fwd, 1, m, narrow, lab))
        pts.append(("bwd", flops * len(grads), (2 if len(grads) == 2 else 1) * act + 2 * wb,
                    sum(grads), 1, m, narrow, lab))
    if not pts:
        dbc.fail("%s: sheet %r has no convolution rows" % (path, SHEET))
    return pts


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("xlsx", help="DeepBench's results/train/DeepBench_NV_V100.xlsx")
    ap.add_argument("--overhead-us", type=float, default=4.0, help="dgx1-v100.yaml")
    ap.add_argument("--mem-gbps", type=float, default=790.2,
                    help="ddpsim's memory rate (V100 mem_bw 900 x memory 0.878)")
    ap.add_argument("--sms", type=int, default=80)
    ap.add_argument("--table", type=float, default=0.297, help="V100 conv_half today")
    ap.add_argument("--no-t0", action="store_true")
    ap.add_argument("--no-tile", action="store_true")
    ap.add_argument("--min-c", type=int, default=0,
                    help="sensitivity: only rows of at least this many input channels (8: "
                         "those tensor-op NHWC kernels take without padding the channels)")
    ap.add_argument("--all", action="store_true", help="print every point")
    a = ap.parse_args()
    pts = sheet_points(a.xlsx, min_c=a.min_c)
    peak, mem, ovh = PEAK * 1e12, a.mem_gbps * 1e9, a.overhead_us * 1e-6
    tiles = [(0, 0)] if a.no_tile else [(x, y) for x in ctf.TILES_M for y in ctf.TILES_N]
    t0s = [0.0] if a.no_t0 else [i * 2e-6 for i in range(31)]
    es, tile, t0 = ctf.fit(pts, peak, mem, a.sms, ovh, tiles, t0s)
    zero = {"fwd": 0.0, "bwd": 0.0}
    table = ({"fwd": a.table, "bwd": a.table}, (0, 0), zero)
    print("fit: DeepBench V100 fp16 sheet, %d rows (%d points); peak %g TFLOP/s, mem %.1f "
          "GB/s, %d SMs, %g us per charge" % (len(pts) // 2, len(pts), PEAK, mem / 1e9,
                                               a.sms, a.overhead_us))
    print("  tile tm %d tn %d; E fwd %.3f bwd %.3f; t0 fwd %.0f us bwd %.0f us" % (
        tile[0], tile[1], es["fwd"], es["bwd"], t0["fwd"] * 1e6, t0["bwd"] * 1e6))
    for name, (e_, tl, t0_) in (("tile", (es, tile, t0)), ("table", table)):
        print("  %-5s rms log(model / measured): %.3f" % (
            name, ctf.rms_log(pts, e_, tl, t0_, peak, mem, a.sms, ovh)))

    def pred(model, pt):
        e_, tl, t0_ = model
        pss, f, b, _, _, m, n, _ = pt
        return ctf.charge(e_[pss], tl, f, b, m, n, peak, mem, a.sms, ovh, t0_[pss])

    groups = {}
    for pt in pts:
        g = (pt[7].split()[0], pt[7].split()[1], pt[0])
        v = groups.setdefault(g, [0, 0.0, 0.0, 0.0])
        v[0] += 1
        v[1] += pt[3]
        v[2] += pred((es, tile, t0), pt)
        v[3] += pred(table, pt)
    worst = max(pts, key=lambda pt: abs(pred((es, tile, t0), pt) / pt[3] - 1))
    print("  worst point: %+.0f %% (%s %s)" % (100 * (pred((es, tile, t0), worst) / worst[3]
                                                      - 1), worst[7], worst[0]))
    print("  fit set by application, batch and pass (ms, rows once each):")
    for g in sorted(groups):
        n, meas, tl, tb = groups[g]
        print("    %-28s %-4s %-3s rows %2d measured %7.3f; tile %7.3f (%+5.1f %%); table "
              "%7.3f (%+5.1f %%)" % (g + (n, meas * 1e3, tl * 1e3, 100 * (tl / meas - 1),
                                          tb * 1e3, 100 * (tb / meas - 1))))
    print("  tile residual by M = N P Q (rows' log(model / measured)):")
    bands = ((0, 2000), (2000, 10000), (10000, 50000), (50000, float("inf")))
    for lo, hi in bands:
        for pss in ("fwd", "bwd"):
            rs = [math.log(pred((es, tile, t0), pt) / pt[3]) for pt in pts
                  if pt[0] == pss and lo <= pt[5] < hi]
            if rs:
                print("    M %6d-%-6s %s points %2d mean %+.2f rms %.2f" % (
                    lo, "" if hi == float("inf") else "%d" % hi, pss, len(rs),
                    sum(rs) / len(rs), math.sqrt(sum(r * r for r in rs) / len(rs))))
    if a.all:
        for pt in pts:
            print("    %-45s %s measured %7.1f us tile %7.1f us" % (
                pt[7], pt[0], pt[3] * 1e6, pred((es, tile, t0), pt) * 1e6))
    return 0


if __name__ == "__main__":
    sys.exit(main())
