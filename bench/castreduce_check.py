#!/usr/bin/env python3
"""bench/gpu_kernels.py's castreduce and layernorm rows beside what ddpsim charges for the
same kernel, and the constant each row implies (sim/train/cast_reduce.h, legacy_ew.h,
norm.c): the microbenchmark as a direct check of rates fitted on one H200 trace.

For every row this writes a model file of one memory layer that runs that kernel and
nothing else, runs bin/ddpsim on it (`--strategy single --batch 1`) and reads the
layer's forward or backward op from the --schedule (one kernel_overhead included):

  upcast, downcast  a layer whose forward is autocast's cast of the row's bytes
                    (amp_cast_bytes, all of it amp_upcast_bytes for an upcast), --amp
                    the row's half type; the same layer without the cast is subtracted
  bias_grad_sum     a layer whose backward is one row reduction (bwd_row_reductions
                    [[rows, outputs]]), --dtype the row's
  mask_add          a layer whose forward is one strided kernel of 3 operand-elements
                    an element, all of them autocast's cast kind (legacy_ew), --amp
  layer norm        a layer with layer_norm [rows, 768] and gamma, beta: the forward op
                    (vectorized_layer_norm_kernel); the backward less the backward of
                    the same layer without gamma and beta is the gamma/beta kernel's
                    (GammaBetaBackwardCUDAKernelTemplate; the partial-sum path above
                    65536 rows is three kernels); --dtype the row's, fp32 for amp-bf16
                    (autocast runs layer norm in fp32; the input cast is not charged here)

Measured: kernel_us (torch.profiler's device time of the call's kernels: for a bias
gradient the semaphores' Memset too) and, for the castreduce rows, ms (CUDA events over
calls queued behind a spin: kernels plus the GPU's launch gaps). The layernorm pass rows'
ms are host-paced (no spin) and are not used. Each constant is implied the way its fit
took it (the file that sets it says how):
  DS_UPCAST_CYCLES         (kernel_us - overhead) x SMs x clock / elements
  DS_ROW_REDUCE_STEP_CYCLES (kernel_us - roofline - overhead) x clock / steps, steps as
                           Reduce.cuh's setReduceConfig gives them (ds_row_reduce_steps,
                           mirrored below, with its grid and block)
  DS_LEGACY_CAST_CYCLES    (kernel_us - overhead) x SMs x clock / operand-elements
  LN_FWD_ELEMS_PER_SM_CYCLE  2 x rows x N / (min(rows, SMs) x clock x (kernel_us - overhead))
  LN_GB_ELEMS_PER_CTA_CYCLE  ceil(CTAs / SMs) x 2 x rows x 32 / (clock x (kernel_us - overhead))
(every charge is work + kernel_overhead, so every fit takes the overhead out first:
docs/architecture.md, "Fitted kernel rates")
and over the rows a least-squares fit (through the origin; the casts also with an
intercept) for comparison with the constant in use. --trace FILE.json.gz checks the
reduce_kernel grids and blocks of a torch.profiler trace against the mirror. Standard
library only:

  python3 bench/castreduce_check.py bench/results/gpu-2026-11-27-h200/castreduce.csv \\
    bench/results/gpu-2026-11-27-h200/layernorm.csv --topo validation/topologies/nd-h200-v5.yaml \\
    --trace bench/results/gpu-2026-11-26-h200/prof/gpt2-bf16-b8-p.json.gz
"""

import argparse
import collections
import csv
import gzip
import json
import math
import os
import re
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HALF = {"fp16", "bf16"}
ESZ = {"fp32": 4, "fp16": 2, "bf16": 2}

MODEL = """schema_version: 1
name: one_kernel
sample: s
default_batch: 1
optimizer: sgd
layers:
  - {{name: op, class: memory, fwd_flops: 0, bwd_flops: 0, {keys}}}
  - {{name: w, class: memory, fwd_flops: 0, bwd_flops: 0, fwd_bytes: 0, act_bytes: 0,
     params: [{{name: w, numel: 1}}]}}
"""


def bad_input(path, line, key, what):
    print("%s:%d: key '%s': %s" % (path, line, key, what), file=sys.stderr)
    sys.exit(2)


def read_rows(path, kind):
    """The CSV's rows of `kind`, numeric fields checked as they are read."""
    rows = []
    with open(path, newline="") as f:
        reader = csv.DictReader(f)
        for key in ("kind", "name", "mode", "shape", "kernel_us", "gpu_sms", "sm_clock_max_mhz"):
            if key not in (reader.fieldnames or []):
                bad_input(path, 1, key, "missing from the header")
        for r in reader:
            if r["kind"] != kind:
                continue
            for key in ("gpu_sms", "sm_clock_max_mhz") + (("kernel_us",) if r["kernel_us"]
                                                          else ()):
                try:
                    v = float(r[key])
                except ValueError:
                    bad_input(path, reader.line_num, key, "expected a number, got %r" % r[key])
                if not v > 0:
                    bad_input(path, reader.line_num, key, "expected a positive number, got %r"
                              % r[key])
            if not re.fullmatch(r"\d+(x\d+)+", r["shape"]):
                bad_input(path, reader.line_num, "shape", "expected AxB[xC...], got %r"
                          % r["shape"])
            r["line"] = reader.line_num
            rows.append(r)
    return rows


def constants(paths):
    """The #define NAME number lines of the headers and sources that set the rates."""
    out = {}
    for p in paths:
        with open(p) as f:
            for m in re.finditer(r"#define (\w+)\s+([\d.]+)\b", f.read()):
                out[m.group(1)] = float(m.group(2))
    return out


def last_pow2(n):
    p = 1
    while p * 2 <= n:
        p *= 2
    return p


def reduce_config(rows, outputs, sms, sm_threads=2048):
    """Reduce.cuh's setReduceConfig for a sum over rows of a dense [rows, outputs]
    tensor, as sim/train/cast_reduce.c ds_row_reduce_steps follows it: (output_vec_size,
    block (x, y), grid (x, y), dependent steps)."""
    vec = 4
    while vec > 1 and outputs % vec:
        vec //= 2
    max_threads, dim0 = 512 // vec, outputs // vec
    dim0_pow2 = last_pow2(dim0) if dim0 < max_threads else max_threads
    dim1_pow2 = last_pow2(rows) if rows < max_threads else max_threads
    width = min(dim0_pow2, 32)
    height = min(dim1_pow2, max_threads // width)
    width = min(dim0_pow2, max_threads // height)
    if not (rows >= height * 16 or rows >= 256):
        return vec, (width, height), (math.ceil(dim0 / width), 1), math.ceil(rows / 4)
    per_thread = math.ceil(rows / height)
    grid = math.ceil(dim0 / width)
    target = sms * (sm_threads // (width * height))
    ctas = 1
    if per_thread >= 256 and grid <= target:
        ctas = max(min(math.ceil(target / grid), math.ceil(per_thread / 16)),
                   math.ceil(per_thread / 256))
    steps = math.ceil(per_thread / ctas) + (math.ceil(ctas / height) if ctas > 1 else 0)
    return vec, (width, height), (grid, ctas), steps


def run_op(ddpsim, topo, tmp, keys, kind, args):
    """The duration (us) of layer `op`'s `kind` (fwd, bwd) op in ddpsim's schedule of
    the one-layer model with `keys`."""
    model, sched = os.path.join(tmp, "m.yaml"), os.path.join(tmp, "s.csv")
    with open(model, "w") as f:
        f.write(MODEL.format(keys=keys))
    cmd = [ddpsim, "--topo", topo, "--world-size", "1", "--model", model, "--strategy",
           "single", "--batch", "1", "--schedule", sched] + args
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    with open(sched) as f:
        for r in csv.DictReader(line for line in f if not line.startswith("#")):
            if r["kind"] == kind and r["stream"] == "compute" and r["name"] == "op":
                return float(r["dur_us"])
    return 0.0


def dtype_args(mode):
    if mode in HALF:
        return ["--dtype", mode]
    if mode.startswith("amp-"):
        return ["--dtype", "fp32"]
    return ["--dtype", "fp32"]


def fit_origin(pairs):
    """Least squares through the origin of y against x: sum(xy) / sum(xx)."""
    sxx = sum(x * x for x, _ in pairs)
    return sum(x * y for x, y in pairs) / sxx if sxx else float("nan")


def fit_line(pairs):
    n = len(pairs)
    mx = sum(x for x, _ in pairs) / n
    my = sum(y for _, y in pairs) / n
    sxx = sum((x - mx) ** 2 for x, _ in pairs)
    b = sum((x - mx) * (y - my) for x, y in pairs) / sxx
    return my - b * mx, b


def casts(rows, a, tmp, k, ovh):
    print("== casts: fp32 -> half (vectorised) and half -> fp32 (unrolled, DS_UPCAST_CYCLES "
          "%.3f)" % k["DS_UPCAST_CYCLES"])
    print("%-8s %-4s %-6s %-10s %9s %8s %8s %8s %7s %9s" % (
        "cast", "half", "tensor", "shape", "elements", "kern us", "ev us", "ddpsim", "/ev",
        "cyc/elem"))
    base = "fwd_bytes: 0, act_bytes: 0, op_fwd_bytes: 0, bwd_bytes: 0, amp_fwd_bytes: 0, " \
           "amp_bwd_bytes: 0, amp_grad_cast_bytes: 0, amp_cast_bytes: %d, amp_upcast_bytes: " \
           "%d, params: []"
    fits = collections.defaultdict(list)
    for r in rows:
        if r["name"] not in ("upcast", "downcast"):
            continue
        n, b = int(r["elements"]), int(r["bytes"])
        up = b if r["name"] == "upcast" else 0
        amp = ["--dtype", "fp32", "--amp", r["mode"]]
        charge = run_op(a.ddpsim, a.topo, tmp, base % (b, up), "fwd", amp) - \
            run_op(a.ddpsim, a.topo, tmp, base % (0, 0), "fwd", amp)
        work = n / (float(r["gpu_sms"]) * float(r["sm_clock_max_mhz"]) * 1e6) * 1e6
        kus, ev = float(r["kernel_us"]), float(r["ms"]) * 1e3
        cyc = (kus - ovh) / work
        print("%-8s %-4s %-6s %-10s %9d %8.2f %8.2f %8.2f %7.2f %9.3f" % (
            r["name"], r["mode"], r["layout"], r["shape"], n, kus, ev, charge, charge / ev, cyc))
        fits[r["name"]].append((work, kus, ev, n))
    for name, pts in sorted(fits.items()):
        big = [(w, t - ovh) for w, t, _, n in pts if n >= 1 << 20]
        a0, slope = fit_line([(w, t) for w, t, _, _ in pts])
        print("%s: through the origin, kernel_us - %g us over the %d rows of >= 2^20 "
              "elements (the fit's rule): %.3f SM cycles/element; kernel_us = %.2f us + "
              "%.3f cycles/element x elements (all %d rows)" % (
                  name, ovh, len(big), fit_origin(big), a0, slope, len(pts)))
    print()


def row_sums(rows, a, tmp, k, ovh, bw):
    step = k["DS_ROW_REDUCE_STEP_CYCLES"]
    print("== bias-gradient row sums: reduce_kernel (DS_ROW_REDUCE_STEP_CYCLES %.0f)" % step)
    print("%-5s %-10s %4s %-8s %-9s %5s %8s %8s %8s %7s %8s %9s" % (
        "dtype", "shape", "vec", "block", "grid", "steps", "kern us", "ev us", "ddpsim", "/ev",
        "roofline", "cyc/step"))
    pts = []
    for r in rows:
        if r["name"] != "bias_grad_sum":
            continue
        m, n = (int(x) for x in r["shape"].split("x"))
        sms, clock = int(r["gpu_sms"]), float(r["sm_clock_max_mhz"]) * 1e6
        vec, block, grid, steps = reduce_config(m, n, sms)
        targs = [t for t in r["kernel_args"].split(";") if t]
        want = "%d/%d" % (512 // vec, vec)
        if targs != [want]:
            print("  line %d: reduce_kernel<%s>, the config gives <%s>" % (
                r["line"], ";".join(targs), want))
        esz = ESZ[r["mode"]]
        keys = ("fwd_bytes: 0, act_bytes: 0, op_fwd_bytes: 0, bwd_bytes: 0, amp_bwd_bytes: 0, "
                "bwd_reduce_bytes: "
                "%d, bwd_row_reductions: [[%d, %d]], params: []" % ((m + 1) * n * 4, m, n))
        charge = run_op(a.ddpsim, a.topo, tmp, keys, "bwd", dtype_args(r["mode"]))
        roof = (m + 1) * n * esz / bw * 1e6
        kus, ev = float(r["kernel_us"]), float(r["ms"]) * 1e3
        cyc = (kus - roof - ovh) * 1e-6 * clock / steps
        pts.append((steps / clock * 1e6, kus - roof - ovh, kus - roof, steps))
        print("%-5s %-10s %4d %-8s %-9s %5d %8.2f %8.2f %8.2f %7.2f %8.2f %9.0f" % (
            r["mode"], r["shape"], vec, "%dx%d" % block, "%dx%d" % grid, steps, kus, ev,
            charge, charge / ev, roof, cyc))
    if pts:
        a0, slope = fit_line([(s, y) for s, _, y, _ in pts])
        print("through the origin (the fit's rule: kernel - roofline - %g us against steps; "
              "the Memset's ~1-1.6 us inside kernel_us): %.0f SM cycles/step; kernel - "
              "roofline = %.2f us + %.0f cycles x steps (%d rows, steps %d-%d)" % (
                  ovh, fit_origin([(s, y) for s, y, _, _ in pts]), a0, slope, len(pts),
                  min(p[3] for p in pts), max(p[3] for p in pts)))
    print()


def mask_adds(rows, a, tmp, k, ovh):
    rate = k["DS_LEGACY_CAST_CYCLES"]
    print("== attention mask add: half scores + fp32 mask over the heads, out fp32 "
          "(elementwise_kernel<128, 4>, DS_LEGACY_CAST_CYCLES %.3f)" % rate)
    print("%-4s %-14s %11s %8s %8s %8s %7s %9s" % (
        "half", "shape", "operand-el", "kern us", "ev us", "ddpsim", "/ev", "cyc/op-el"))
    for r in rows:
        if r["name"] != "mask_add":
            continue
        b, h, s1, s2 = (int(x) for x in r["shape"].split("x"))
        n = b * h * s1 * s2
        opel = 3 * n  # scores, the broadcast mask, the output
        fp32 = n * 8 + b * s1 * s2 * 4  # the file's bytes are fp32 sizes
        legacy = "[%d, %d, 0, %d]" % (fp32, opel, opel)
        keys = ("fwd_bytes: %d, act_bytes: 0, op_fwd_bytes: %d, bwd_bytes: 0, amp_fwd_bytes: "
                "%d, amp_bwd_bytes: 0, amp_cast_bytes: 0, amp_grad_cast_bytes: 0, legacy_ew: {fwd: %s}, params: []" % (
                    fp32, fp32, fp32 // 2, legacy))
        charge = run_op(a.ddpsim, a.topo, tmp, keys, "fwd", ["--dtype", "fp32", "--amp", r["mode"]])
        work = opel / (float(r["gpu_sms"]) * float(r["sm_clock_max_mhz"]) * 1e6) * 1e6
        kus, ev = float(r["kernel_us"]), float(r["ms"]) * 1e3
        print("%-4s %-14s %11d %8.2f %8.2f %8.2f %7.2f %9.3f" % (
            r["mode"], r["shape"], opel, kus, ev, charge, charge / ev, (kus - ovh) / work))
    print()


def layer_norms(rows, a, tmp, k, ovh):
    fwd_rate, gb_rate = k["LN_FWD_ELEMS_PER_SM_CYCLE"], k["LN_GB_ELEMS_PER_CTA_CYCLE"]
    print("== layer norm, N = 768 (norm.c: forward %.3f element passes per SM cycle, %.3f "
          "on 2-byte elements; gamma/beta %.2f per CTA cycle); ddpsim's charge has one "
          "kernel_overhead (%g us), the kernel times none; dY+X: the bytes the gamma/beta "
          "kernel reads (L2 %s MB)" % (fwd_rate, k.get("LN_FWD_ELEMS_PER_SM_CYCLE_HALF", 0),
                                       gb_rate, ovh, rows[0]["gpu_l2_mb"] if rows else "?"))
    fwd_fit = collections.defaultdict(list)
    print("%-16s %-8s %6s %10s %8s %8s %7s %9s" % (
        "rows", "mode", "M", "dY+X MB", "kern us", "ddpsim", "/kern", "rate"))
    kernels = collections.defaultdict(dict)
    for r in rows:
        if not r["name"].endswith("/kernel"):
            continue
        kernels[(r["name"].rsplit("-", 1)[0], r["mode"], r["shape"])].setdefault(
            r["name"].split("/")[0].rsplit("-", 1)[1], []).append(r)
    for (model, mode, shape), passes in kernels.items():
        m, n = (int(x) for x in shape.split("x"))
        first = next(iter(passes.values()))[0]
        sms, clock = int(first["gpu_sms"]), float(first["sm_clock_max_mhz"]) * 1e6
        esz = 4 if mode == "fp32" or mode.startswith("amp-") else 2
        fp32 = m * n * 4
        common = ("fwd_bytes: %d, act_bytes: %d, bwd_bytes: %d, amp_fwd_bytes: %d, "
                  "amp_bwd_bytes: %d, amp_cast_bytes: 0, amp_grad_cast_bytes: 0, "
                  "layer_norm: [%d, %d]" % (2 * fp32, fp32, 5 * fp32, 2 * fp32, 5 * fp32, m, n))
        with_w = common + ", params: [{name: g, numel: %d}, {name: b, numel: %d}]" % (n, n)
        args = dtype_args(mode)
        for kr in passes.get("fwd", []):
            if kr["kernel"] != "vectorized_layer_norm_kernel":
                continue
            charge = run_op(a.ddpsim, a.topo, tmp, with_w, "fwd", args)
            kus = float(kr["kernel_us"])
            rate = 2.0 * m * n / (min(m, sms) * clock * (kus - ovh) * 1e-6)
            if model != "sweep":
                fwd_fit["%d-byte %s" % (esz, "(autocast)" if mode.startswith("amp-") else
                                        "")].append((2.0 * m * n / (min(m, sms) * clock),
                                                     (kus - ovh) * 1e-6))
            print("%-16s %-8s %6d %10.1f %8.2f %8.2f %7.2f %9.3f  forward" % (
                model, mode, m, 2 * m * n * esz / 1e6, kus, charge, charge / kus, rate))
        gb = [kr for kr in passes.get("bwd", []) if kr["kernel"] != "layer_norm_grad_input_"
              "kernel_vectorized" and not (mode.startswith("amp-") and "elementwise" in kr["kernel"])]
        if gb:
            charge = run_op(a.ddpsim, a.topo, tmp, with_w, "bwd", args) - \
                run_op(a.ddpsim, a.topo, tmp, common + ", params: []", "bwd", args)
            kus = sum(float(kr["kernel_us"]) for kr in gb)
            ctas = math.ceil(n / 32)
            rate = math.ceil(ctas / sms) * 2.0 * m * 32 / (clock * (kus - ovh) * 1e-6)
            print("%-16s %-8s %6d %10.1f %8.2f %8.2f %7.2f %9.2f  gamma/beta%s" % (
                model, mode, m, 2 * m * n * esz / 1e6, kus, charge, charge / kus, rate,
                " (%s)" % "+".join(kr["kernel"] for kr in gb) if len(gb) > 1 else ""))
    for key, pts in sorted(fwd_fit.items()):
        print("forward, %s elements, the models' rows (%d): %.3f element passes per SM cycle "
              "(least squares through the origin of the kernel time less kernel_overhead %g us)" % (
                  key, len(pts), 1 / fit_origin(pts), ovh))
    print()


def trace_grids(path, sms):
    """reduce_kernel launches of a torch.profiler trace whose grid and block the
    config of some [rows, outputs] with rows a multiple of 1024 and outputs in the
    traces' widths reproduces; prints each distinct launch and the match."""
    with gzip.open(path, "rt") as f:
        events = json.load(f)["traceEvents"]
    seen = collections.Counter()
    for e in events:
        if e.get("cat") == "kernel" and "reduce_kernel<" in e.get("name", ""):
            args = e.get("args", {})
            seen[(tuple(args.get("grid", [])), tuple(args.get("block", [])))] += 1
    print("== reduce_kernel launches of %s: grid, block, calls; the [rows, outputs] of "
          "the transformers' widths whose config (mirror of ds_row_reduce_steps) gives them"
          % path)
    cands = [(m, w) for m in (1024, 4096, 8192, 9216) for w in (768, 2304, 3072)]
    for (grid, block), calls in sorted(seen.items()):
        hits = ["[%d, %d] (%d steps)" % (m, w, cfg[3]) for m, w in cands
                for cfg in [reduce_config(m, w, sms)]
                if tuple(cfg[2]) == tuple(grid[:2]) and tuple(cfg[1]) == tuple(block[:2])]
        print("  grid %-14s block %-12s %4d calls  %s" % (
            list(grid), list(block), calls, ", ".join(hits) or "-"))
    print()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("castreduce", help="gpu_kernels.py --only castreduce output")
    ap.add_argument("layernorm", nargs="?", help="gpu_kernels.py --only layernorm output")
    ap.add_argument("--topo", required=True, help="the topology of the rows' GPU")
    ap.add_argument("--ddpsim", default=os.environ.get("DDPSIM_BIN",
                                                       os.path.join(REPO, "bin", "ddpsim")))
    ap.add_argument("--overhead-us", type=float, default=4.0,
                    help="the topology's kernel_overhead (default 4)")
    ap.add_argument("--mem-gbps", type=float, default=4800 * 0.869,
                    help="achievable HBM bandwidth, GB/s (the H200's 4800 x its measured "
                         "efficiency.memory 0.869, topologies/gpus.yaml)")
    ap.add_argument("--trace", help="a torch.profiler trace whose reduce_kernel grids to check")
    a = ap.parse_args()
    # the constants in use, from this script's checkout, whatever the working directory
    k = constants([os.path.join(REPO, "sim", "train", f)
                   for f in ("cast_reduce.h", "legacy_ew.h", "norm.c")])
    rows = read_rows(a.castreduce, "castreduce")
    ovh = a.overhead_us
    with tempfile.TemporaryDirectory() as tmp:
        casts(rows, a, tmp, k, ovh)
        row_sums(rows, a, tmp, k, ovh, a.mem_gbps * 1e9)
        mask_adds(rows, a, tmp, k, ovh)
        if a.layernorm:
            layer_norms(read_rows(a.layernorm, "layernorm"), a, tmp, k, ovh)
    if a.trace:
        trace_grids(a.trace, int(rows[0]["gpu_sms"]) if rows else 132)


if __name__ == "__main__":
    main()
