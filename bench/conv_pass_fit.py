#!/usr/bin/env python3
"""Convolution rates per pass, and a fixed cost per convolution call, from
`gpu_kernels.py --only rn50conv` CSVs timed queued (the default since 2026-11-27:
each call's GPU time, however short, with its launches and transposes).

    python3 bench/conv_pass_fit.py rn50conv-tf32-b32.csv rn50conv-half-b32.csv ...
    python3 bench/conv_pass_fit.py --selftest   (a synthetic CSV of known t0 and rate)

Per mode and batch, ResNet-50's shapes each weighted by how often the model runs them
(`elements`), the stem's input gradient left out (training computes none for the model's
input), a row per pass: fwd, dgrad, wgrad, and `bwd`, a layer's input and weight
gradients together, the one backward kernel ddpsim charges per convolution layer
(sim/train/compute_layer.c bwd_time: max(bwd_flops / rate, bytes / bandwidth) +
kernel_overhead). FLOPs are tools/export_model.py's (model_export/flops.py
conv_pass_flops: 2 x output elements x input channels x kernel area per pass, the CSV's
`flops`), so the rates below are in the
FLOPs ddpsim charges. Each row's time is the queued interval less its NCHW<->NHWC
transposes (`xpose_us`, profiled: ddpsim charges those apart, compute.h); channels-last
rows have none.

Columns: GFLOP and ms per iteration; `kern`, the launches per iteration (transposes apart:
cuDNN's compute kernels, split-K reductions, memsets); `raw`, FLOPs / time; `per-kernel`,
FLOPs / (time - launches x overhead); `ddpsim`, FLOPs / (time - charges x overhead), a
charge being what ddpsim charges one overhead for (a layer's forward; its backward, both
gradients together); each in TFLOP/s with its fraction of the math's peak.
--overhead-us is sim/net/topo_compute.c's default kernel_overhead (4 us).

Then the fit kernel time = t0 + FLOPs / rate per pass (least squares over the shapes,
each weighted by its count; the time as above, no overhead taken off: t0 is the fixed
cost of one call in place of kernel_overhead), and how many of the shapes ddpsim would
charge by their bytes at the fitted rate (its bytes: input and output activations read or
written once forward, twice backward, weights once forward and twice backward, in the
mode's element size: the convolution's part of compute_layer.c fwd_time / bwd_time) at
--mem-gbps: where the bytes bind, ddpsim's charge and the fit disagree
(notes-rn50conv.md section 4).

Last, lines in the form of topologies/gpus.yaml's `efficiency` entries (pooled ddpsim
rates; per-pass keys ddpsim does not read yet) and the fit's t0 and rates, with what each
came from. Standard library only.
"""

import argparse
import collections
import csv
import os
import sys

BENCH = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(BENCH)
sys.path.insert(0, BENCH)
import gemm_rates  # noqa: E402
from csv_input import InputError, kind_rows, num, one_gpu  # noqa: E402

PASSES = ("fwd", "dgrad", "wgrad", "bwd")
# gpu_kernels.py's modes: (the peak's math, element size in bytes)
MODES = {"fp32": ("fp32", 4), "fp32-tf32": ("tf32", 4), "fp32-tf32-nhwc": ("tf32", 4),
         "fp16": ("fp16", 2), "fp16-nhwc": ("fp16", 2)}
YAML_KEY = {"tf32": "conv_tf32", "fp16": "conv_half", "fp32": "conv_fp32"}


def shape_of(name, shape, path, line):
    """(cin, cout, k, stride, batch, side) of name CINxCOUTkKsS/PASS, shape BxCINxSxS."""
    try:
        conv = name.rsplit("/", 1)[0]
        cin, rest = conv.split("x", 1)
        cout, rest = rest.split("k", 1)
        k, stride = rest.split("s")
        b, _, side, _ = shape.split("x")
        return int(cin), int(cout), int(k), int(stride), int(b), int(side)
    except ValueError:
        raise InputError("%s:%d: expected name CINxCOUTkKsS/PASS and shape BxCxSxS, got %r, %r"
                         % (path, line, name, shape))


def ddpsim_bytes(cin, cout, k, stride, batch, side, esz, backward, input_grad):
    """The bytes ddpsim charges the convolution's own kernel (compute_layer.c fwd_time /
    bwd_time; ResNet-50's paddings are k // 2): activations x and y once forward, twice
    backward (once where no input gradient is computed), weights once / twice."""
    out = (side + 2 * (k // 2) - k) // stride + 1
    act = batch * (cin * side * side + cout * out * out) * esz
    w = cout * cin * k * k * esz
    if not backward:
        return act + w
    return (2 if input_grad else 1) * act + 2 * w


def read(paths, kind="rn50conv"):
    """{(mode, batch): {shape: {pass: [flops, seconds, launches]}}}, {shape: count,
    bytes...}, the GPU, and whether any row was timed plain: the rows of `kind`
    (gpu_kernels.py's rn50conv, or convwidth: the same columns)."""
    cells = collections.defaultdict(dict)
    meta, gpus, plain = {}, set(), False
    for path, line, r in kind_rows(paths, kind):
        pss = r.get("name", "").rsplit("/", 1)[-1]
        mode = r.get("mode", "")
        if pss not in PASSES[:3] or mode not in MODES:
            raise InputError("%s:%d: pass %r, mode %r: expected one of %s and of %s"
                             % (path, line, pss, mode, PASSES[:3], ", ".join(MODES)))
        cin, cout, k, stride, batch, side = shape_of(r["name"], r.get("shape", ""),
                                                     path, line)
        if cin == 3 and pss == "dgrad":
            continue  # the stem: training computes no gradient for the model's input
        ms, flops = num(r, "ms", path, line), num(r, "flops", path, line)
        count = int(num(r, "elements", path, line))
        queued = r.get("timing", "") == "queued"
        plain = plain or not queued
        xus = num(r, "xpose_us", path, line, 0.0) if queued else 0.0
        launches = num(r, "n_kernels", path, line, 1.0) if queued else 1.0
        launches -= num(r, "n_xpose", path, line, 0.0) if queued else 0.0
        t = ms / 1e3 - xus / 1e6
        if t <= 0 or flops <= 0 or count <= 0 or launches < 1:
            raise InputError("%s:%d: time less transposes %g s, flops %g, elements %d, "
                             "launches %g: expected positive, and one launch at least"
                             % (path, line, t, flops, count, launches))
        key = (cin, cout, k, stride, side)
        per = cells[(mode, batch)].setdefault(key, {})
        if pss in per:
            raise InputError("%s:%d: %s %s batch %d given twice" % (path, line, r["name"],
                                                                   mode, batch))
        per[pss] = [flops, t, launches]
        meta[key] = count
        gpus.add(r.get("gpu", ""))
    if not cells:
        raise InputError("%s: no %s rows" % (", ".join(paths), kind))
    for (mode, batch), per in cells.items():  # ddpsim's backward: both gradients, one kernel
        for key, p in per.items():
            if "wgrad" in p:
                parts = [p[q] for q in ("dgrad", "wgrad") if q in p]
                p["bwd"] = [sum(x[0] for x in parts), sum(x[1] for x in parts),
                            sum(x[2] for x in parts)]
    return cells, meta, one_gpu(gpus), plain


def read_with_peak(paths, table, math):
    """read(paths)'s cells, shape counts and GPU, and that GPU's peak for `math` in FLOP/s
    from the GPU table (gpus.yaml): the fit set of bench/conv_call_fit.py and
    bench/conv_tile_fit.py. InputError or gemm_rates.InputError on bad input."""
    cells, meta, gpu, _ = read(paths)
    return cells, meta, gpu, gemm_rates.gpu_peaks(gpu, table, (math,))[1][math] * 1e12


def wls(points):
    """Weighted least squares t = a + b F over (F, t, w): (a, b), or None."""
    sw = sum(w for _, _, w in points)
    mf = sum(w * f for f, _, w in points) / sw
    mt = sum(w * t for _, t, w in points) / sw
    sff = sum(w * (f - mf) ** 2 for f, _, w in points)
    if len(points) < 2 or sff <= 0:
        return None
    b = sum(w * (f - mf) * (t - mt) for f, t, w in points) / sff
    return mt - b * mf, b


def report(cells, meta, gpu, peaks, overhead_s, mem_bps, out=sys.stdout):
    yaml = []
    for (mode, batch) in sorted(cells):
        math, esz = MODES[mode]
        peak = peaks[math]
        per = cells[(mode, batch)]
        print("%s batch %d on %s (peak %g TFLOP/s %s); per iteration, each shape x its count"
              % (mode, batch, gpu, peak, math), file=out)
        print("  %-5s %9s %8s %6s %6s %13s %13s %13s" % (
            "pass", "GFLOP", "ms", "kern", "calls", "raw", "per-kernel", "ddpsim"), file=out)
        rates = {}
        for pss in PASSES:
            rows = [(meta[k], p[pss]) for k, p in per.items() if pss in p]
            if not rows:
                continue
            f = sum(c * x[0] for c, x in rows)
            t = sum(c * x[1] for c, x in rows)
            kern = sum(c * x[2] for c, x in rows)
            calls = sum(c for c, _ in rows)
            # ddpsim charges one overhead per forward and one per backward (both
            # gradients); a dgrad or wgrad row alone is not a charge of its own
            charges = calls if pss in ("fwd", "bwd") else None

            def cell(ts):
                if ts is None:
                    return "%13s" % "-"
                if ts <= 0:
                    return "%13s" % "<= 0 s"
                r = f / ts / 1e12
                return "%7.1f %5.3f" % (r, r / peak)
            rates[pss] = (f, t, kern, charges)
            print("  %-5s %9.1f %8.3f %6.0f %6.0f %s %s %s" % (
                pss, f / 1e9, t * 1e3, kern, calls, cell(t), cell(t - kern * overhead_s),
                cell(t - charges * overhead_s if charges is not None else None)), file=out)
        print("  fit: kernel time = t0 + FLOPs / rate (shapes weighted by count)", file=out)
        fits = {}
        for pss in PASSES:
            pts = [(p[pss][0], p[pss][1], meta[k]) for k, p in per.items() if pss in p]
            if not pts:
                continue
            ab = wls(pts)
            if ab is None or ab[1] <= 0:
                print("  %-5s no fit (%d shapes; a slope <= 0)" % (pss, len(pts)), file=out)
                continue
            t0, rate = ab[0], 1 / ab[1]
            resid = [t - (t0 + f / rate) for f, t, _ in pts]
            worst = max(abs(r) / t for r, (_, t, _) in zip(resid, pts))
            bound = 0
            for key, p in per.items():
                if pss not in p or pss in ("dgrad", "wgrad"):
                    continue
                by = ddpsim_bytes(*key[:4], batch, key[4], esz, pss == "bwd", key[0] != 3)
                bound += by / mem_bps > p[pss][0] / rate
            fits[pss] = (t0, rate)
            print("  %-5s t0 %6.1f us  rate %7.1f TFLOP/s %5.3f  (%d shapes, worst residual "
                  "%.0f %%%s)" % (pss, t0 * 1e6, rate / 1e12, rate / 1e12 / peak, len(pts),
                                  100 * worst,
                                  ", %d bound by ddpsim's bytes at this rate" % bound
                                  if pss in ("fwd", "bwd") else ""), file=out)
        key = YAML_KEY[math]
        src = "%s batch %d, %s, ResNet-50's convolutions timed queued" % (mode, batch, gpu)
        for pss in ("fwd", "bwd"):
            if pss in rates:
                f, t, _, charges = rates[pss]
                ts = t - charges * overhead_s
                if ts > 0:
                    e = f / ts / 1e12 / peak
                    yaml.append("    #   %s_%s %.3f = %.1f / %g TFLOPS: %s, %s: %.1f GFLOP in "
                                "%.3f ms less %d x %g us kernel_overhead"
                                % (key, pss, e, e * peak, peak, src, pss, f / 1e9, t * 1e3,
                                   charges, overhead_s * 1e6))
        if "fwd" in rates and "bwd" in rates:
            f = rates["fwd"][0] + rates["bwd"][0]
            t = rates["fwd"][1] + rates["bwd"][1]
            ch = rates["fwd"][3] + rates["bwd"][3]
            e = f / (t - ch * overhead_s) / 1e12 / peak
            yaml.append("    #   %s %.3f = %.1f / %g TFLOPS: %s, every pass: %.1f GFLOP in "
                        "%.3f ms less %d x %g us kernel_overhead"
                        % (key, e, e * peak, peak, src, f / 1e9, t * 1e3, ch,
                           overhead_s * 1e6))
        for pss in ("fwd", "bwd"):
            if pss in fits:
                t0, rate = fits[pss]
                yaml.append("    #   %s_%s call: t0 %.1f us + FLOPs / %.1f TFLOP/s (%.3f): %s"
                            % (key, pss, t0 * 1e6, rate / 1e12, rate / 1e12 / peak, src))
        print(file=out)
    print("gpus.yaml-ready (efficiency = pooled ddpsim rate / peak; the per-pass keys and "
          "the call cost are not read by ddpsim yet):", file=out)
    for line in yaml:
        print(line, file=out)


def selftest():
    """A synthetic CSV whose rows follow t = T0 + F / RATE exactly (fwd one launch, each
    gradient two, NCHW transposes on top that must come off), read and fitted back: the
    fit must return T0 and RATE, the per-kernel pooled rate RATE where T0 = launches x
    overhead. Returns 0 when it does."""
    import tempfile
    t0, rate, ovh = 8e-6, 200e12, 4e-6
    shapes = [((64, 64, 1, 1, 56), 3), ((64, 64, 3, 1, 56), 3), ((256, 512, 1, 2, 56), 1),
              ((512, 128, 1, 1, 28), 4), ((3, 64, 7, 2, 224), 1)]
    cols = ["kind", "name", "mode", "shape", "elements", "ms", "flops", "timing", "n_kernels",
            "xpose_us", "n_xpose", "gpu"]
    path = os.path.join(tempfile.mkdtemp(), "synthetic.csv")
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=cols)
        w.writeheader()
        for (cin, cout, k, s, side), count in shapes:
            out = (side + 2 * (k // 2) - k) // s + 1
            flops = 2 * 32 * cout * out * out * cin * k * k
            for pss, n in (("fwd", 1), ("dgrad", 2), ("wgrad", 2)):
                t = n * t0 + flops / rate + 5e-6  # and 5 us of transposes, taken off
                w.writerow(dict(kind="rn50conv", name="%dx%dk%ds%d/%s" % (cin, cout, k, s, pss),
                                mode="fp32-tf32", shape="32x%dx%dx%d" % (cin, side, side),
                                elements=count, ms="%.9f" % (t * 1e3), flops=flops,
                                timing="queued", n_kernels=n + 1, xpose_us="5", n_xpose=1,
                                gpu="synthetic"))
    cells, meta, _, _ = read([path])
    per = cells[("fp32-tf32", 32)]
    ok = True
    for pss, n in (("fwd", 1), ("dgrad", 2), ("wgrad", 2)):
        pts = [(p[pss][0], p[pss][1], meta[k]) for k, p in per.items() if pss in p]
        a, b = wls(pts)
        ok &= abs(a - n * t0) < 1e-9 and abs(1 / b / rate - 1) < 1e-6
        rows = [(meta[k], p[pss]) for k, p in per.items() if pss in p]
        f = sum(c * x[0] for c, x in rows)
        t = sum(c * x[1] for c, x in rows)
        kern = sum(c * x[2] for c, x in rows)
        pooled = f / (t - kern * t0)
        ok &= kern == n * sum(c for c, _ in rows) and abs(pooled / rate - 1) < 1e-6
        print("selftest %s: t0 %.3f us (want %.3f), rate %.3f TFLOP/s (want %.3f), launches "
              "%g, pooled less launches x t0 %.3f" % (pss, a * 1e6, n * t0 * 1e6, 1 / b / 1e12,
                                                      rate / 1e12, kern, pooled / 1e12))
    report(cells, meta, "synthetic", {"fp32": 66.9, "tf32": 494.7, "fp16": 989.4}, ovh, 4172e9)
    print("selftest: %s (%s)" % ("ok" if ok else "FAILED", path))
    return 0 if ok else 1


def main(argv):
    if argv == ["--selftest"]:
        return selftest()
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                 epilog="--selftest alone: fit a synthetic CSV of known t0 "
                                 "and rate back")
    ap.add_argument("csv", nargs="+", help="gpu_kernels.py --only rn50conv CSVs")
    ap.add_argument("--overhead-us", type=float, default=4.0,
                    help="ddpsim's kernel_overhead (sim/net/topo_compute.c: 4000 ns)")
    ap.add_argument("--mem-gbps", type=float, default=4172.0,
                    help="ddpsim's memory bandwidth for the byte check (H200: 4172, "
                    "notes-rn50conv.md section 4)")
    ap.add_argument("--gpus", default=os.path.join(REPO, "topologies", "gpus.yaml"))
    ap.add_argument("--peak-tf32", type=float)
    ap.add_argument("--peak-fp16", type=float)
    ap.add_argument("--peak-fp32", type=float)
    a = ap.parse_args(argv)
    try:
        cells, meta, gpu, plain = read(a.csv)
        given = (a.peak_fp32, a.peak_tf32, a.peak_fp16)
        if all(p is not None for p in given):
            peaks = dict(zip(("fp32", "tf32", "fp16"), given))
        else:
            peaks = gemm_rates.gpu_peaks(gpu, a.gpus, ("fp32", "tf32", "fp16"))[1]
    except (InputError, gemm_rates.InputError) as e:
        print("conv_pass_fit.py: %s" % e, file=sys.stderr)
        return 2
    if plain:
        print("warning: rows timed plain (back to back): calls under ~30 us time the host, "
              "and there are no launch counts (1 per row assumed)\n")
    report(cells, meta, gpu, peaks, a.overhead_us * 1e-6, a.mem_gbps * 1e9)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
