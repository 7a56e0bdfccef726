#!/usr/bin/env python3
"""Does a convolution pass's rate follow its implicit GEMM's tiles?  Fit, per pass and
math, one efficiency E and a tile (tm x tn) on the queued microbenchmarks together
(gpu_kernels.py --only rn50conv: ResNet-50's shapes; conv_wide_queued.py: ResNeXt's dense
3x3 layers at full width), then check it, nothing refitted, on training traces.

    python3 bench/conv_tile_fit.py --rn50 D/rn50conv-*.csv --wide E/wide-b*.csv \
        --mode fp16-nhwc [--wide-mode fp32-tf32] [--table FWD BWD] [--trace T.json.gz ...]
    python3 bench/conv_tile_fit.py --selftest

Model (notes-conv-call.md section 7), per charge (a layer's forward; its backward, both
gradients, one charge):
    t = 4 us + t0 + max(F / (E peak u), B / mem)
    u = M n / (ceil(T / S) S tm tn),  T = ceil(M / tm) ceil(n / tn)
F: ddpsim's FLOPs; B: ddpsim's bytes (conv_pass_fit.ddpsim_bytes); mem: ddpsim's
memory rate (H200 4172 GB/s); M = batch x output positions (the forward GEMM's long side),
n = min(Cin k^2, Cout) (its narrow side), S the GPU's SMs. u is the share of the tiles'
multiply-adds that are useful: a side under the tile pads the tile (n < tn), and the last
wave of tiles leaves SMs idle (T not a multiple of S). E: one per pass and math; tm, tn:
one pair per math, from a grid; t0: a fixed time per charge and pass, 0 unless --t0
fits it from a grid (0-60 us in 2 us steps). Fitted by least squares of log(model / measured),
ResNet-50's shapes weighted by their count in ResNet-50, the wide (--wide) and width (--width,
gpu_kernels.py --only convwidth) shapes once each.
Standard library only.
"""
import argparse
import collections
import math
import os
import sys

BENCH = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, BENCH)
sys.path.insert(0, os.path.join(BENCH, "..", "tools"))
import conv_pass_fit as cpf  # noqa: E402
import conv_call_fit as ccf  # noqa: E402
import gemm_rates  # noqa: E402

TILES_M = (64, 128, 256)
TILES_N = (32, 64, 128, 256)


def useful_share(m, n, tm, tn, sms):
    """The share of the tiles' work that is useful: M x n over the waves' tile area."""
    if not tm:
        return 1.0
    tiles = math.ceil(m / tm) * math.ceil(n / tn)
    return m * n / (math.ceil(tiles / sms) * sms * tm * tn)


# ddpsim's GEMM on NCHW (compute_conv.c CONV_NCHW_GEMM_MIN_POSITIONS): a 1x1 stride-1
# convolution of at least this many output positions an image runs without transposes
NCHW_GEMM_MIN_POSITIONS = 196


def nchw_gemm(k, stride, out_side):
    """Whether ddpsim charges the shape as cuDNN's GEMM on NCHW (no transposes)."""
    return k == 1 and stride == 1 and out_side * out_side >= NCHW_GEMM_MIN_POSITIONS


def label_gemm(label):
    """nchw_gemm of a point's label ("SET bB CIN->COUT kK sS SIDE")."""
    f = label.split()
    k, stride, side = int(f[3][1:]), int(f[4][1:]), int(f[5])
    return nchw_gemm(k, stride, (side + 2 * (k // 2) - k) // stride + 1)


def charge(e, tile, f, b, m, n, peak, mem, sms, ovh, t0=0.0):
    return ovh + t0 + max(f / (e * peak * useful_share(m, n, tile[0], tile[1], sms)), b / mem)


def points(cells, meta, mode, esz, setname, passes=("fwd", "bwd")):
    """(pass, F, bytes, t, weight, M, n, label) per shape and batch of `mode`: the rn50
    set's shapes weighted by their count in ResNet-50, any other set's once each; passes
    fwd and bwd (both gradients, ddpsim's one charge), or fwd, dgrad and wgrad (each
    gradient its x or dx, dy and weights: the forward's bytes)."""
    pts = []
    for (m, batch), per in cells.items():
        if m != mode:
            continue
        for key, p in per.items():
            cin, cout, k, stride, side = key
            out = (side + 2 * (k // 2) - k) // stride + 1
            n = min(cin * k * k, cout)
            for pss in passes:
                if pss not in p:
                    continue
                by = cpf.ddpsim_bytes(cin, cout, k, stride, batch, side, esz, pss == "bwd",
                                      cin != 3)
                pts.append((pss, p[pss][0], by, p[pss][1],
                            meta[key] if setname == "rn50" else 1,
                            batch * out * out, n, "%s b%d %d->%d k%d s%d %d" % (
                                setname, batch, cin, cout, k, stride, side)))
    return pts


def best_e(pts, tile, peak, mem, sms, ovh, t0=0.0):
    """E minimising the weighted sum of log(model / measured)^2 (golden section)."""
    def err(e):
        return sum(w * math.log(charge(e, tile, f, b, m, n, peak, mem, sms, ovh, t0) / t) ** 2
                   for _, f, b, t, w, m, n, _ in pts)
    lo, hi = 0.05, 1.5
    g = (math.sqrt(5) - 1) / 2
    for _ in range(80):
        a, c = hi - g * (hi - lo), lo + g * (hi - lo)
        if err(a) < err(c):
            hi = c
        else:
            lo = a
    e = (lo + hi) / 2
    return e, err(e)


def fit(pts, peak, mem, sms, ovh, tiles, t0s=(0.0,), passes=("fwd", "bwd")):
    """{pass: E}, {pass: t0} and the tile of least total error over `tiles` (t0 per pass
    from the grid t0s)."""
    best = None
    for tile in tiles:
        es, ts, tot = {}, {}, 0.0
        for pss in passes:
            sub = [p for p in pts if p[0] == pss]
            err, e, t0 = min(best_e(sub, tile, peak, mem, sms, ovh, t0)[::-1] + (t0,)
                             for t0 in t0s)
            es[pss], ts[pss] = e, t0
            tot += err
        if best is None or tot < best[0]:
            best = (tot, es, tile, ts)
    return best[1], best[2], best[3]


def rms_log(pts, es, tile, t0, peak, mem, sms, ovh):
    """The weighted root mean square of log(model / measured) over the points: the fit's
    residual as one number, comparable across data sets."""
    num = sum(w * math.log(charge(es[pss], tile, f, b, m, n, peak, mem, sms, ovh, t0[pss]) / t)
              ** 2 for pss, f, b, t, w, m, n, _ in pts)
    return math.sqrt(num / sum(p[4] for p in pts))


def op_bytes(op, esz):
    """ddpsim's bytes of a trace's convolution op (conv_pass_fit.ddpsim_bytes)."""
    x, w, (ho, wo), mask = op["x"], op["w"], op["out"], op["mask"]
    act = x[0] * (x[1] * x[2] * x[3] + w[0] * ho * wo) * esz
    wb = w[0] * w[1] * w[2] * w[3] * esz
    return act + wb if mask is None else (2 if mask[0] else 1) * act + 2 * wb


def trace_ops(trace, esz):
    """Per dense convolution op of the trace: [pass, F, bytes, measured s, M, n, groups,
    whether ddpsim charges it as a GEMM on NCHW] (two iterations: the caller halves)."""
    import trace_classes as tc
    rows = []
    for op in tc.conv_ops(tc.load(trace)).values():
        if op["groups"] != 1:
            continue
        x, w, (ho, wo) = op["x"], op["w"], op["out"]
        by = op_bytes(op, esz)
        t = sum(e["dur"] * 1e-6 for e in op["kernels"])
        rows.append([op["pass"], op["flops"], by, t, x[0] * ho * wo,
                     min(w[1] * w[2] * w[3], w[0]), op["groups"],
                     # a 1x1 keeps its input's side at stride 1 (no padding)
                     nchw_gemm(w[2] * w[3], 1 if x[2] == ho else 2, ho)])
    return rows


def transposed_passes(paths, kind):
    """{(mode, batch, (cin, cout, k, stride, side)): {pass}}: the passes whose queued call
    ran cuDNN's NCHW<->NHWC transposes (xpose_us > 0); bwd where either gradient did."""
    out = collections.defaultdict(set)
    for path, line, r in cpf.kind_rows(paths, kind):
        if float(r.get("xpose_us") or 0) <= 0:
            continue
        cin, cout, k, stride, batch, side = cpf.shape_of(r["name"], r.get("shape", ""), path,
                                                         line)
        pss = r["name"].rsplit("/", 1)[-1]
        out[(r["mode"], batch, (cin, cout, k, stride, side))].update(
            {pss, "bwd"} if pss in ("dgrad", "wgrad") else {pss})
    return out


GRADS = ("fwd", "dgrad", "wgrad")


def argmin_check(a, peak, mem, ovh, tiles, t0s, esz):
    """Two families, cuDNN's benchmark choice between them, per call (forward, input
    gradient, weight gradient: cudnn.benchmark times each apart): the GEMM on NCHW
    (fitted on the NCHW rows of ddpsim's GEMM-on-NCHW shapes whose call ran no transposes)
    and the implicit GEMM on NHWC (fitted on every channels-last row). A call of a shape
    ddpsim would run as a GEMM on NCHW is charged the family whose time, the implicit
    family's transposes added (xpose_charge), is the shorter; every other call the
    implicit family. Compared with the trace's compute and helper kernels (transposes
    apart); a backward op is its two gradients' charges."""
    sets = [("rn50", a.rn50, "rn50conv")] + ([("width", a.width, "convwidth")] if a.width
                                             else [])
    gemm_pts, impl_pts, rule_calls = [], [], []
    for name, paths, kind in sets:
        cells, meta, _, _ = cpf.read(paths, kind=kind)
        xp = transposed_passes(paths, kind)
        for p in points(cells, meta, "fp32-tf32", esz, name, GRADS):
            f = p[7].split()
            key = tuple(int(x) for x in f[2].split("->")) + (int(f[3][1:]), int(f[4][1:]),
                                                                int(f[5]))
            if not label_gemm(p[7]):
                continue
            ran_gemm = p[0] not in xp.get(("fp32-tf32", int(f[1][1:]), key), ())
            rule_calls.append((p, key[0], key[1], ran_gemm))
            if ran_gemm:
                gemm_pts.append(p)
        impl_pts += points(cells, meta, "fp32-tf32-nhwc", esz, name, GRADS)
    fam = {}
    for nm, pts in (("gemm", gemm_pts), ("implicit", impl_pts)):
        fam[nm] = fit(pts, peak, mem, a.sms, ovh, tiles, t0s, GRADS)
        es, tile, t0 = fam[nm]
        print("  %s family (%d points): tile tm %d tn %d; E %s; t0 %s; rms log(model / "
              "measured), weighted: %.3f" % (
                  nm, len(pts), tile[0], tile[1],
                  " ".join("%s %.3f" % (g, es[g]) for g in GRADS),
                  " ".join("%s %.0f us" % (g, t0[g] * 1e6) for g in GRADS),
                  rms_log(pts, es, tile, t0, peak, mem, a.sms, ovh)))

    def one(nm, pss, f, b, m, n):
        es, tile, t0 = fam[nm]
        return charge(es[pss], tile, f, b, m, n, peak, mem, a.sms, ovh, t0[pss])

    def pick(c, f, b, m, n, cin, cout):
        """(family, its compute time) cudnn.benchmark would pick for a GEMM-rule call."""
        impl, gemm = one("implicit", c, f, b, m, n), one("gemm", c, f, b, m, n)
        xp = 2 * ovh + 2 * m * (cin + cout) * esz / mem
        return ("gemm", gemm) if gemm < impl + xp else ("implicit", impl)

    agree = collections.Counter()
    for (c, f, b, t, w, m, n, lab), cin, cout, ran_gemm in rule_calls:
        agree[(pick(c, f, b, m, n, cin, cout)[0] == "gemm") == ran_gemm] += 1
    print("  the queued NCHW rows of GEMM-on-NCHW-rule shapes: the family picked as cuDNN ran "
          "it (transposes or none) in %d of %d calls" % (agree[True], sum(agree.values())))

    import trace_classes as tc
    for tr in a.trace:
        print("trace %s (argmin per call of the two families; compute + helpers, transposes "
              "apart)" % os.path.basename(tr))
        ops = [op for op in tc.conv_ops(tc.load(tr)).values() if op["groups"] == 1]
        for pss in ("fwd", "bwd"):
            meas = model = 0.0
            picks = collections.Counter()
            for op in ops:
                if op["pass"] != pss:
                    continue
                x, w, (ho, wo), mask = op["x"], op["w"], op["out"], op["mask"]
                m, n = x[0] * ho * wo, min(w[1] * w[2] * w[3], w[0])
                calls = ["fwd"] if pss == "fwd" else (
                    ["dgrad", "wgrad"] if mask is None or mask[0] else ["wgrad"])
                f = op["flops"] / len(calls)  # each gradient the forward's FLOPs
                b = op_bytes(dict(op, mask=None), esz)
                rule = nchw_gemm(w[2] * w[3], 1 if x[2] == ho else 2, ho)
                for c in calls:
                    fam_t = pick(c, f, b, m, n, w[1], w[0]) if rule else (
                        "implicit", one("implicit", c, f, b, m, n))
                    picks[fam_t[0]] += 1
                    model += fam_t[1]
                    if rule and c == "fwd":  # the forward's one kernel names its family
                        ran = any("implicit" in e["name"] for e in op["kernels"])
                        picks["fwd as run"] += ran == (fam_t[0] == "implicit")
                        picks["fwd rule"] += 1
                meas += sum(e["dur"] * 1e-6 for e in op["kernels"])
            print("  %s measured %7.3f ms; argmin %7.3f (%+5.1f %%); calls charged as GEMM on "
                  "NCHW %d, implicit %d%s" % (
                      pss, meas / a.iters * 1e3, model / a.iters * 1e3, 100 * (model / meas - 1),
                      picks["gemm"] / a.iters, picks["implicit"] / a.iters,
                      "; GEMM-rule forwards whose family is the one the trace ran: %d of %d" % (
                          picks["fwd as run"] / a.iters, picks["fwd rule"] / a.iters)
                      if pss == "fwd" else ""))
    return 0


def selftest():
    sms, peak, mem, ovh = 132, 500e12, 4e12, 4e-6
    tile, es = (128, 64), {"fwd": 0.8, "bwd": 0.6}
    t0s = [i * 2e-6 for i in range(31)]  # main()'s --t0 grid
    t0 = {"fwd": t0s[1], "bwd": t0s[7]}  # 2 and 14 us
    pts = []
    for m in (1568, 6272, 25088, 100352):
        for n in (32, 64, 128, 512, 2048):
            for pss in ("fwd", "bwd"):
                f = 2.0 * m * n * 576
                pts.append((pss, f, 1e6, charge(es[pss], tile, f, 1e6, m, n, peak, mem, sms,
                                                 ovh, t0[pss]), 1, m, n, ""))
    got, gtile, gt0 = fit(pts, peak, mem, sms, ovh, [(a, b) for a in TILES_M for b in TILES_N],
                          t0s)
    ok = gtile == tile and all(abs(got[p] / es[p] - 1) < 1e-6 for p in es)
    ok &= gt0 == t0
    ok &= abs(useful_share(128, 64, 128, 64, 132) - 1 / 132) < 1e-12
    print("selftest: tile %s E %s t0 %s (want %s %s %s): %s" % (
        gtile, got, gt0, tile, es, t0, "ok" if ok else "FAILED"))
    return 0 if ok else 1


def main():
    if sys.argv[1:] == ["--selftest"]:
        return selftest()
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rn50", nargs="+", required=True)
    ap.add_argument("--wide", nargs="*", default=[])
    ap.add_argument("--mode", required=True, choices=sorted(cpf.MODES))
    ap.add_argument("--wide-mode", choices=sorted(cpf.MODES))
    ap.add_argument("--width", nargs="*", default=[],
                    help="gpu_kernels.py --only convwidth CSVs (queued): a third fit set, "
                    "each shape once")
    ap.add_argument("--width-mode", choices=sorted(cpf.MODES))
    ap.add_argument("--table", nargs=2, type=float, metavar=("FWD", "BWD"))
    ap.add_argument("--trace", nargs="*", default=[])
    ap.add_argument("--iters", type=int, default=2)
    ap.add_argument("--no-tile", action="store_true", help="u = 1: one efficiency per pass")
    ap.add_argument("--t0", action="store_true",
                    help="also a fixed time per charge and pass, t0, from 0-60 us in 2 us steps")
    ap.add_argument("--nchw-gemm-mode", choices=sorted(cpf.MODES),
                    help="take the shapes ddpsim runs as a GEMM on NCHW (1x1, stride 1, >= 196 "
                    "output positions) from this mode's rows, the others from --mode's "
                    "(--mode fp32-tf32-nhwc --nchw-gemm-mode fp32-tf32: each shape as NCHW "
                    "training runs it)")
    ap.add_argument("--split-gemm", action="store_true",
                    help="fit those GEMM-on-NCHW shapes as a family of their own (own tile, "
                    "E, t0), the traces' ops charged by the same rule")
    ap.add_argument("--argmin", action="store_true",
                    help="TF32: the GEMM on NCHW and the implicit GEMM on NHWC as two families, "
                    "each shape charged the one cuDNN's benchmark would pick (argmin_check)")
    ap.add_argument("--given", nargs=6, type=float,
                    metavar=("TM", "TN", "E_FWD", "E_BWD", "T0_FWD_US", "T0_BWD_US"),
                    help="no fit: check these constants (e.g. gpus.yaml's conv_tiles half: "
                    "64 128 0.686 0.701 2 14) against the rows")
    ap.add_argument("--shapes", action="store_true",
                    help="print each fit point's measured and modelled time")
    ap.add_argument("--overhead-us", type=float, default=4.0)
    ap.add_argument("--mem-gbps", type=float, default=4172.0,
                    help="ddpsim's memory rate (H200 mem_bw 4800 x memory 0.869)")
    ap.add_argument("--sms", type=int, default=132)
    ap.add_argument("--gpus", default=os.path.join(cpf.REPO, "topologies", "gpus.yaml"))
    a = ap.parse_args()
    mth, esz = cpf.MODES[a.mode]
    wmode = a.wide_mode or a.mode
    ovh, mem = a.overhead_us * 1e-6, a.mem_gbps * 1e9
    try:
        cells, meta, gpu, peak = cpf.read_with_peak(a.rn50, a.gpus, mth)

        def take(c, m, mode, name):
            pts = points(c, m, mode, esz, name)
            if not a.nchw_gemm_mode:
                return pts
            return [p for p in pts if not label_gemm(p[7])] + [
                p for p in points(c, m, a.nchw_gemm_mode, esz, name) if label_gemm(p[7])]
        pts = take(cells, meta, a.mode, "rn50")
        if a.wide:
            wc, wm, _, _ = cpf.read(a.wide, kind="wideconv")
            pts += take(wc, wm, wmode, "wide")
        if a.width:
            wc, wm, _, _ = cpf.read(a.width, kind="convwidth")
            pts += take(wc, wm, a.width_mode or a.mode, "width")
    except (cpf.InputError, gemm_rates.InputError) as e:
        print("conv_tile_fit.py: %s" % e, file=sys.stderr)
        return 2
    tiles = [(0, 0)] if a.no_tile else [(x, y) for x in TILES_M for y in TILES_N]
    t0s = [i * 2e-6 for i in range(31)] if a.t0 else [0.0]
    if a.argmin:
        print("argmin: rn50%s, TF32 on %s; peak %.1f TFLOP/s, mem %.0f GB/s, %d SMs, %g us "
              "per charge" % (" + width" if a.width else "", gpu, peak / 1e12, mem / 1e9,
                              a.sms, a.overhead_us))
        return argmin_check(a, peak, mem, ovh, tiles, t0s, esz)
    print("fit: rn50 %s + wide %s + width %s%s on %s (%d points); peak %.1f TFLOP/s, "
          "mem %.0f GB/s, %d SMs, %g us per charge" % (
              a.mode, wmode if a.wide else "-", (a.width_mode or a.mode) if a.width else "-",
              "; GEMM-on-NCHW shapes from %s" % a.nchw_gemm_mode if a.nchw_gemm_mode else "",
              gpu, len(pts), peak / 1e12, mem / 1e9, a.sms, a.overhead_us))
    families = {"all": pts}
    if a.split_gemm:
        families = {"gemm": [p for p in pts if label_gemm(p[7])],
                    "other": [p for p in pts if not label_gemm(p[7])]}
    fitted = {}
    for fam, fpts in families.items():
        if a.given:
            g = a.given
            es, tile, t0 = ({"fwd": g[2], "bwd": g[3]}, (int(g[0]), int(g[1])),
                            {"fwd": g[4] * 1e-6, "bwd": g[5] * 1e-6})
        else:
            es, tile, t0 = fit(fpts, peak, mem, a.sms, ovh, tiles, t0s)
        fitted[fam] = (es, tile, t0)
        print("  %s (%d points): tile tm %d tn %d; E fwd %.3f bwd %.3f; t0 fwd %.0f us bwd "
              "%.0f us; rms log(model / measured), weighted: %.3f" % (
                  fam, len(fpts), tile[0], tile[1], es["fwd"], es["bwd"], t0["fwd"] * 1e6,
                  t0["bwd"] * 1e6, rms_log(fpts, es, tile, t0, peak, mem, a.sms, ovh)))
    models = {"tile": None}
    if a.table:
        models["table"] = ({"fwd": a.table[0], "bwd": a.table[1]}, (0, 0), {"fwd": 0, "bwd": 0})

    def params(name, gemm):
        if name != "tile":
            return models[name]
        return fitted["all"] if "all" in fitted else fitted["gemm" if gemm else "other"]

    def pred(name, pss, f, b, m, n, gemm):
        e, tl, t0_ = params(name, gemm)
        return charge(e[pss], tl, f, b, m, n, peak, mem, a.sms, ovh, t0_[pss])

    groups = collections.defaultdict(lambda: collections.defaultdict(float))
    worst = (0, "")
    for p in pts:
        pss, f, b, t, w, m, n, lab = p
        gm = label_gemm(lab)
        g = (lab.split()[0], lab.split()[1], pss)
        groups[g]["meas"] += w * t
        for name in models:
            groups[g][name] += w * pred(name, pss, f, b, m, n, gm)
        r = pred("tile", pss, f, b, m, n, gm) / t - 1
        if a.shapes:
            tl = params("tile", gm)[1]
            print("    shape %-32s %s n %4d measured %8.1f us tile %8.1f (%+4.0f %%) u %.2f "
                  "rate %.2f of peak" % (lab, pss, n, t * 1e6,
                                         pred("tile", pss, f, b, m, n, gm) * 1e6, 100 * r,
                                         useful_share(m, n, tl[0], tl[1], a.sms),
                                         f / max(t - ovh, 1e-9) / peak))
        if abs(r) > abs(worst[0]):
            worst = (r, "%s %s" % (lab, pss))
    print("  worst shape: %+.0f %% (%s)" % (100 * worst[0], worst[1]))
    print("  fit set (ms; ResNet-50 shapes x their count, the other sets' once):")
    for g in sorted(groups):
        v = groups[g]
        print("    %-4s %-4s %s measured %8.3f" % (g + (v["meas"] * 1e3,)) + "".join(
            "; %s %8.3f (%+5.1f %%)" % (nm, v[nm] * 1e3, 100 * (v[nm] / v["meas"] - 1))
            for nm in models))
    for tr in a.trace:
        ops = trace_ops(tr, esz)
        print("trace %s (per iteration; dense convolutions, compute + helpers, transposes "
              "apart)" % os.path.basename(tr))
        for pss in ("fwd", "bwd"):
            sel = [o for o in ops if o[0] == pss]
            meas = sum(o[3] for o in sel) / a.iters
            line = "  %s ops %3.0f measured %7.3f ms" % (pss, len(sel) / a.iters, meas * 1e3)
            for nm in models:
                v = sum(pred(nm, pss, o[1], o[2], o[4], o[5], o[7]) for o in sel) / a.iters
                line += "; %s %7.3f (%+5.1f %%)" % (nm, v * 1e3, 100 * (v / meas - 1))
            print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
