#!/usr/bin/env python3
"""Is a convolution pass's time t0 + FLOPs / rate?  Fit on ResNet-50's convolutions timed
queued at two batches (gpu_kernels.py --only rn50conv CSVs), then check the fit, without
refitting, on whole training traces and on other layer widths.

    python3 bench/conv_call_fit.py --rn50 D/rn50conv-*.csv --mode fp32-tf32-nhwc \
        [--table FWD BWD] [--trace T.json.gz ...] [--wide D/conv-b32.csv ...] \
        [--wide-mode fp16-nhwc] [--width convwidth-*.csv]
    python3 bench/conv_call_fit.py --selftest   (synthetic shapes of known constants)

Fit (per pass: fwd, and bwd = dgrad + wgrad, the one backward ddpsim charges a layer):
each shape's queued time less its NCHW transposes (conv_pass_fit.read) less ddpsim's one
4 us kernel_overhead per charge, weighted by the shape's count in ResNet-50, both batches
together, by least squares: t = t0 + F / rate (F: ddpsim's FLOPs, tools/export_model.py).
Four models, each printed against the measured totals per batch:
  table   ddpsim today: t0 0, the rate --table FWD BWD x the math's peak (gpus.yaml);
  eff     t0 0, one efficiency per pass refitted: sum F / sum (t - 4 us), both batches;
  call    t = t0 + F / rate (notes-rn50conv.md section 4's proposal);
  narrow  t = t0 + F / (R min(1, narrow / W)), narrow = min(Cin k^2, Cout), the forward
          GEMM's smaller side (K or N; M = batch x output positions is always large):
          a GEMM side under a tile's width leaves part of the tensor cores idle. W from
          a grid (WIDTHS), t0 and R by least squares at each W. Exploratory, not in ddpsim.

Checks (nothing refitted):
- --trace: a torch.profiler trace of a training run (two iterations, halved): every
  dense (groups 1) convolution op's compute kernels and cuDNN helpers (memsets, split-K
  reductions; NCHW<->NHWC transposes left out: ddpsim charges them apart), against the
  model's 4 us + t0 + F / rate per op; grouped convolutions are reported apart (ddpsim
  times them from grouped_conv.h, not this rate).
- --width: gpu_kernels.py --only convwidth CSVs (queued, like the fit's rows): dense
  1x1s over (Cin, Cout) 64-2048 and 3x3s at one GEMM M, each shape against each model.
- --wide: gpu_kernels.py --only conv CSVs, the groups-1 rows (ResNeXt's 3x3 layers at
  their widths, plain timing: each call's time per call of calls run back to back, long
  kernels), in --wide-mode, each pass against 4 us + t0 + F / rate (bwd: dgrad + wgrad).
  TF32 NCHW rows there include cuDNN's transposes; the fit's TF32 is channels-last.
Standard library only.
"""
import argparse
import collections
import csv
import os
import sys

BENCH = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, BENCH)
sys.path.insert(0, os.path.join(BENCH, "..", "tools"))
import conv_pass_fit as cpf  # noqa: E402
import gemm_rates  # noqa: E402


def fit_points(cells, counts, mode, pss, ovh):
    """(F, t - ovh, count, batch, narrow) per shape of `mode` that ran pass `pss`."""
    pts = []
    for (m, batch), per in cells.items():
        if m != mode:
            continue
        for key, p in per.items():
            if pss in p:
                cin, cout, k = key[0], key[1], key[2]
                pts.append((p[pss][0], p[pss][1] - ovh, counts[key], batch,
                            min(cin * k * k, cout)))
    return pts


def fit(pts):
    ab = cpf.wls([(f, t, w) for f, t, w, _, _ in pts])
    return ab[0], 1 / ab[1]


def pooled(pts):
    return sum(w * f for f, _, w, _, _ in pts) / sum(w * t for _, t, w, _, _ in pts)


WIDTHS = (32, 64, 96, 128, 192, 256, 384, 512, 768, 1024)


def narrow_share(narrow, width):
    """The share of the tensor cores a GEMM whose narrower side (the forward's
    K = Cin k^2 or N = Cout) is `narrow` keeps busy, where a side under `width`
    leaves the rest of a tile idle: min(1, narrow / width)."""
    return min(1.0, narrow / width) if width else 1.0


def fit_narrow(pts):
    """t = t0 + F / (R min(1, narrow / W)): least squares for t0, R at each W of
    WIDTHS, the W of least weighted squared error."""
    best = None
    for width in WIDTHS:
        a, b = cpf.wls([(f / narrow_share(n, width), t, w) for f, t, w, _, n in pts])
        sse = sum(w * (t - a - b * f / narrow_share(n, width)) ** 2 for f, t, w, _, n in pts)
        if best is None or sse < best[0]:
            best = (sse, a, 1 / b, width)
    return best[1:]


def predict(model, f, narrow, ovh):
    t0, rate, width = model
    return ovh + t0 + f / (rate * narrow_share(narrow, width))


def conv_ops(trace):
    """{external id: [pass, flops, groups, compute_us, helper_us, kernels, shape, narrow]} per
    iteration-pair (the caller halves)."""
    import trace_classes as tc
    ops = {}
    for eid, op in tc.conv_ops(tc.load(trace)).items():
        x, w = op["x"], op["w"]
        row = [op["pass"], op["flops"], op["groups"], 0.0, 0.0, 0, "%s %s" % (x, w),
               min(w[1] * w[2] * w[3], w[0])]
        for e in op["kernels"]:
            helper = any(h in e["name"] for h in ("Memset", "init_device_workspace",
                                                  "reduce_wgrad", "reduction::kernel"))
            row[4 if helper else 3] += e["dur"]
            row[5] += 1
        ops[eid] = row
    return ops


MODEL_NAMES = ("table", "eff", "call", "narrow")


def selftest():
    """Synthetic shapes whose times follow each model exactly, fitted back: `call` must
    return its t0 and rate, `narrow` its t0, R and W, `eff` sum F / sum t. 0 when they do."""
    t0, rate, width = 9e-6, 300e12, 128
    pts = []
    for narrow in (64, 96, 128, 256, 1024):
        for f, count in ((2e9, 3), (7e9, 1), (30e9, 2)):
            pts.append((f, t0 + f / (rate * narrow_share(narrow, width)), count, 32, narrow))
    nt0, nrate, nw = fit_narrow(pts)
    ok = abs(nt0 - t0) < 1e-12 and abs(nrate / rate - 1) < 1e-9 and nw == width
    flat = [(f, t0 + f / rate, c, b, n) for f, _, c, b, n in pts]
    ct0, crate = fit(flat)
    ok &= abs(ct0 - t0) < 1e-12 and abs(crate / rate - 1) < 1e-9
    eff = pooled(flat)
    want = sum(c * f for f, _, c, _, _ in flat) / sum(c * t for _, t, c, _, _ in flat)
    ok &= abs(eff / want - 1) < 1e-12
    print("selftest: narrow t0 %.3f us R %.1f TFLOP/s W %d (want %.3f, %.1f, %d); call t0 "
          "%.3f rate %.1f: %s" % (nt0 * 1e6, nrate / 1e12, nw, t0 * 1e6, rate / 1e12, width,
                                  ct0 * 1e6, crate / 1e12, "ok" if ok else "FAILED"))
    return 0 if ok else 1


def main():
    if sys.argv[1:] == ["--selftest"]:
        return selftest()
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rn50", nargs="+", required=True)
    ap.add_argument("--mode", required=True, help="the rn50conv mode to fit")
    ap.add_argument("--table", nargs=2, type=float, metavar=("FWD", "BWD"),
                    help="ddpsim's efficiencies today (gpus.yaml conv_MATH_fwd/_bwd or the "
                    "pooled conv_MATH) for the 'table' column")
    ap.add_argument("--trace", nargs="*", default=[])
    ap.add_argument("--iters", type=int, default=2)
    ap.add_argument("--wide", nargs="*", default=[])
    ap.add_argument("--wide-mode")
    ap.add_argument("--width", nargs="*", default=[],
                    help="gpu_kernels.py --only convwidth CSVs (queued): each shape of --mode "
                    "against every model")
    ap.add_argument("--overhead-us", type=float, default=4.0,
                    help="ddpsim's kernel_overhead (sim/net/topo_compute.c: 4000 ns)")
    ap.add_argument("--gpus", default=os.path.join(cpf.REPO, "topologies", "gpus.yaml"),
                    help="the GPU table the peaks come from")
    a = ap.parse_args()
    ovh = a.overhead_us * 1e-6
    if a.mode not in cpf.MODES:
        print("conv_call_fit.py: --mode %s: expected one of %s" % (a.mode, ", ".join(cpf.MODES)),
              file=sys.stderr)
        return 2
    math = cpf.MODES[a.mode][0]
    try:
        cells, meta, gpu, peak = cpf.read_with_peak(a.rn50, a.gpus, math)
    except (cpf.InputError, gemm_rates.InputError) as e:
        print("conv_call_fit.py: %s" % e, file=sys.stderr)
        return 2
    models = {}
    print("fit: %s, %s, both batches, t - %g us per charge (count-weighted)" % (
        a.mode, gpu, a.overhead_us))
    print("  models: table = ddpsim today (t0 0, rate = --table x peak); eff = t0 0, "
          "sum F / sum t; call = t0 + F / rate; narrow = t0 + F / (R min(1, narrow / W))")
    for pss in ("fwd", "bwd", "dgrad", "wgrad"):
        o = ovh if pss in ("fwd", "bwd") else 0.0
        pts = fit_points(cells, meta, a.mode, pss, o)
        t0, rate = fit(pts)
        eff = pooled(pts)
        nt0, nrate, width = fit_narrow(pts)
        m = {"eff": (0.0, eff, 0), "call": (t0, rate, 0), "narrow": (nt0, nrate, width)}
        if a.table and pss in ("fwd", "bwd"):
            m["table"] = (0.0, a.table[pss == "bwd"] * peak, 0)
        if pss in ("fwd", "bwd"):
            models[pss] = m
        resid = max(abs(t - t0 - f / rate) / t for f, t, _, _, _ in pts)
        print("  %-5s call t0 %6.2f us rate %6.1f TFLOP/s (%.3f); worst shape %3.0f %%; "
              "eff %6.1f (%.3f); narrow t0 %5.1f us R %6.1f (%.3f) W %d"
              % (pss, t0 * 1e6, rate / 1e12, rate / peak, 100 * resid, eff / 1e12, eff / peak,
                 nt0 * 1e6, nrate / 1e12, nrate / peak, width))
        if pss not in ("fwd", "bwd"):
            continue
        for batch in sorted({p[3] for p in pts}):
            sub = [p for p in pts if p[3] == batch]
            meas = sum(w * (t + o) for _, t, w, _, _ in sub)
            line = "        b%-3d measured %7.3f ms" % (batch, meas * 1e3)
            for name in MODEL_NAMES:
                if name in m:
                    pr = sum(w * predict(m[name], f, n, o) for f, _, w, _, n in sub)
                    line += "; %s %7.3f (%+5.1f %%)" % (name, pr * 1e3, 100 * (pr / meas - 1))
            print(line)
    for tr in a.trace:
        ops = conv_ops(tr)
        print("\ntrace %s (per iteration; dense = groups 1; compute + helpers, transposes "
              "apart)" % tr)
        for dense in (True, False):
            for pss in ("fwd", "bwd"):
                sel = [o for o in ops.values() if o[0] == pss and (o[2] == 1) == dense]
                if not sel:
                    continue
                n = len(sel) / a.iters
                f = sum(o[1] for o in sel) / a.iters
                tc_ = sum(o[3] for o in sel) / a.iters / 1e3
                th = sum(o[4] for o in sel) / a.iters / 1e3
                kern = sum(o[5] for o in sel) / a.iters
                meas = tc_ + th
                line = "  %-7s %s ops %4.0f kern %4.0f GFLOP %7.1f compute %6.3f ms + helpers " \
                       "%5.3f = %6.3f" % ("dense" if dense else "grouped", pss, n, kern,
                                          f / 1e9, tc_, th, meas)
                if dense:
                    for name in MODEL_NAMES:
                        if name in models[pss]:
                            pr = sum(predict(models[pss][name], o[1], o[7], ovh)
                                     for o in sel) / a.iters * 1e3
                            line += "; %s %6.3f (%+5.1f %%)" % (name, pr, 100 * (pr / meas - 1))
                print(line)
    if a.wide:
        wm = a.wide_mode or a.mode
        rows = collections.defaultdict(dict)
        for path in a.wide:
            for r in csv.DictReader(open(path)):
                if r["kind"] != "conv" or r["groups"] != "1" or r["mode"] != wm:
                    continue
                pss = r["name"].rsplit("/", 1)[1]
                rows[(r["name"].split("/")[0], r["shape"])][pss] = (
                    float(r["flops"]), float(r["ms"]) * 1e-3, int(r["group_width"]))
        print("\nwide dense 3x3 (%s, %s rows, plain timing; narrow = the channels, "
              "Cin = Cout)" % (wm, len(rows)))
        tot = collections.defaultdict(float)
        for (net, shape), p in rows.items():
            b = int(shape.split("x")[0])
            for pss, parts in (("fwd", ("fwd",)), ("bwd", ("dgrad", "wgrad"))):
                f = sum(p[q][0] for q in parts)
                tot[(b, pss, "meas")] += sum(p[q][1] for q in parts)
                for name, mod in models[pss].items():
                    tot[(b, pss, name)] += predict(mod, f, p["fwd"][2], ovh)
        for b in sorted({k[0] for k in tot}):
            for pss in ("fwd", "bwd"):
                m = tot[(b, pss, "meas")]
                line = "  b%-3d %s measured %7.3f ms" % (b, pss, m * 1e3)
                for name in MODEL_NAMES:
                    if (b, pss, name) in tot:
                        v = tot[(b, pss, name)]
                        line += "; %s %7.3f (%+5.1f %%)" % (name, v * 1e3, 100 * (v / m - 1))
                print(line)
        m = sum(v for k, v in tot.items() if k[2] == "meas")
        line = "  all: measured %.3f ms" % (m * 1e3)
        for name in MODEL_NAMES:
            if any(k[2] == name for k in tot):
                v = sum(x for k, x in tot.items() if k[2] == name)
                line += "; %s %.3f (%+.1f %%)" % (name, v * 1e3, 100 * (v / m - 1))
        print(line)
    if a.width:
        width_check(a.width, a.mode, models, ovh)
    return 0


def width_check(paths, mode, models, ovh):
    """Each convwidth shape of `mode`, its queued time less transposes per pass against
    each model (4 us + the model's time), and the totals per kernel size."""
    try:
        cells = cpf.read(paths, kind="convwidth")[0]
    except cpf.InputError as e:
        print("conv_call_fit.py: %s" % e, file=sys.stderr)
        return
    print("\nwidth sweep (%s, queued; us per call, model / measured)" % mode)
    tot = collections.defaultdict(float)
    for (m, batch), per in sorted(cells.items()):
        if m != mode:
            continue
        for (cin, cout, k, stride, side), p in sorted(per.items(), key=lambda kv: (kv[0][2],
                                                                                   kv[0])):
            narrow = min(cin * k * k, cout)
            for pss in ("fwd", "bwd"):
                if pss not in p:
                    continue
                f, t, _ = p[pss]
                line = "  b%-3d %4d -> %4d k%d %s  %7.1f GFLOP %9.1f us" % (
                    batch, cin, cout, k, pss, f / 1e9, t * 1e6)
                tot[(k, pss, "meas")] += t
                for name in MODEL_NAMES:
                    if name in models[pss]:
                        v = predict(models[pss][name], f, narrow, ovh)
                        tot[(k, pss, name)] += v
                        line += "  %s %5.2f" % (name, v / t)
                print(line)
    for k in sorted({key[0] for key in tot}):
        for pss in ("fwd", "bwd"):
            m = tot.get((k, pss, "meas"))
            if not m:
                continue
            line = "  all k%d %s measured %.3f ms" % (k, pss, m * 1e3)
            for name in MODEL_NAMES:
                if (k, pss, name) in tot:
                    line += "; %s %+.1f %%" % (name, 100 * (tot[(k, pss, name)] / m - 1))
            print(line)


if __name__ == "__main__":
    sys.exit(main())
