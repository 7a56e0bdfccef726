#!/usr/bin/env python3
"""Dense convolution rates from `gpu_kernels.py`'s CSVs (--only conv, --only rn50conv), and
the check of them against torch.profiler traces of training runs (what topologies/gpus.yaml's
conv_half and conv_tf32 for H200 and H100 are set from: tools/gen_gpus.py).

    python3 bench/conv_rates.py bench/results/gpu-2026-11-26d-h200/conv-b{32,64,128}.csv
    python3 bench/conv_rates.py --rn50 bench/results/gpu-2026-11-27-h200/rn50conv-b128.csv
    python3 bench/conv_rates.py --trace bench/results/gpu-2026-11-26-h200/prof/X.json.gz ...
    python3 bench/conv_rates.py --rn50 CSV --compare TRACE --mode fp32-tf32-nhwc

CSVs: the dense rows (groups 1: ResNeXt's 3x3 layers at full width, 128 to 2048 channels
at 56x56 to 7x7, strided or not), per math mode and batch: TFLOP/s and efficiency (rate /
the GPU's peak in that math) of the forward, input-gradient and weight-gradient passes and
of the three together, pooled as total FLOPs / total time (the one efficiency that gives
the set its measured time: ddpsim charges FLOPs / (efficiency x peak)). FLOPs are the
direct convolution's, 2 x output elements x input channels x 9, whatever algorithm cuDNN
ran (Winograd's FP32 rows exceed the FP32 peak). Each time is a CUDA-event interval of
the whole call: in NCHW it includes the layout transposes cuDNN runs around its NHWC
tensor-core kernels, which ddpsim charges apart (memory-bound kernels, compute.h), so only
the channels-last rows (fp16-nhwc) are a kernel rate in ddpsim's sense. The last line
prints the value gpus.yaml's conv_half takes: the fp16-nhwc rows of every CSV given, pooled,
less --kernel-overhead-us (default 4) per kernel ddpsim charges (a layer's forward, and its
backward for the input and weight gradients together: 4 us off each forward row, 2 off each
gradient row), the rule of tools/gen_gpus.py (ddpsim charges each kernel kernel_overhead +
FLOPs / (efficiency x peak)); the table is as timed.

--rn50: ResNet-50's own 23 convolution shapes (1x1s and the stem included), each weighted
by how often the model runs it, per kernel size, stride and pass, per mode and batch. Each
call is timed with CUDA events back to back, and no call of these CSVs is under 28 us: where
training's kernel is shorter the call times the host's dispatch (--compare), so a mix of
them is a lower bound of the kernels' rate.

--trace: each trace's dense convolutions (kernels launched under aten's cudnn_convolution
or convolution_backward, groups 1; tools/trace_classes.py attributes them), per kernel
size: FLOPs from the op's recorded shapes (the input gradient counted only where the op
computed it), the time of cuDNN's compute kernels, of its helpers (workspace fills,
memsets, split-K reductions, padding) and of its NCHW/NHWC transposes, and the rate of the
compute kernels with their helpers, transposes apart (as ddpsim charges them). Times per
iteration: --iters (2, bench/torch_measure.py's profile). gpus.yaml's conv_tf32 is set
from the fit row's trace, resnet50-fp32-b32 (validation/training.csv marks the H200
ResNet-50 FP32 batch-32 row `fit`): its `all` GFLOP over its compute + helper time less
ddpsim's kernel_overhead (--kernel-overhead-us, default 4) for each convolution kernel
ddpsim charges (a layer's forward and its backward: one per op), every pass pooled, over
the peak of --trace-gpu (default the H200): the line `gpus.yaml conv_tf32: R / P TFLOPS = E`
(for a half trace a check line) that tools/gen_gpus.py cites; then the same rule per pass,
the forward ops and the backward ops (a backward op's input and weight gradients together,
one overhead per op, as ddpsim charges a layer's backward): the lines `gpus.yaml
conv_tf32_fwd` and `gpus.yaml conv_tf32_bwd` that set the per-pass values; the other traces
are of validation rows: checks, never fitted to.

--compare: one --rn50 CSV's calls in --mode, each times how often the model runs it,
beside the trace's kernels of the same shape and pass (per kernel size, stride and pass),
all shapes and then only the calls that took over --floor-us (below it a call may time
the host's dispatch rather than the GPU); --shapes lists each shape and pass first.

--fit-call: with --trace (repeatable), kernel time = t0 + FLOPs / rate fitted over the
traces' dense convolutions (t0 shared, a rate per trace): how much of a small
convolution's time does not scale with its FLOPs; --check TRACE (repeatable) sets other
traces' convolutions at t0 + FLOPs / rate (the fitted rate of their math) beside their
time and their time at the fitted trace's one rate. An analysis; ddpsim has no such term.

Peaks: the GPU table's fp32, tf32 and fp16 for the GPU named in the CSV's `gpu` column
(topologies/gpus.yaml; bench/gemm_rates.py reads it the same way), or --peak-*.

Standard library only.
"""

import argparse
import ast
import collections
import os
import sys

BENCH = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(BENCH)
sys.path.insert(0, BENCH)
sys.path.insert(0, os.path.join(REPO, "tools"))
import gemm_rates  # noqa: E402
import trace_classes as tc  # noqa: E402
from csv_input import InputError, kind_rows, one_gpu  # noqa: E402

PASSES = ("fwd", "dgrad", "wgrad")
# gpu_kernels.py's conv modes and the peak each runs against
MODES = {"fp32": "fp32", "fp32-tf32": "tf32", "fp16": "fp16", "fp16-nhwc": "fp16"}
RN50_MODES = {"fp32-tf32": "tf32", "fp32-tf32-nhwc": "tf32", "fp16-nhwc": "fp16"}
TAKEN = "fp16-nhwc"  # the mode gpus.yaml's conv_half is set from (see the docstring)
# cuDNN's kernels in a convolution op that are not its implicit GEMM: layout transposes
# (ddpsim charges them apart) and helpers (part of the convolution's cost)
TRANSPOSES = ("nchwToNhwc", "nhwcToNchw")
HELPERS = ("reduce_wgrad", "init_device_workspace", "Memset", "AddPadding", "splitKreduce",
           "ReduceSplitK")
CONV_OPS = ("aten::cudnn_convolution", "aten::convolution_backward")




def check_pass_mode_time(path, line, pss, mode, modes, ms):
    """A timed conv row's pass, mode (one of `modes`) and time, or InputError at path:line."""
    if pss not in PASSES or mode not in modes or ms <= 0:
        raise InputError("%s:%d: pass %r, mode %r, ms %g: expected one of %s, one of "
                         "%s and a positive time" % (path, line, pss, mode, ms, PASSES,
                                                     tuple(modes)))


def read_rows(paths):
    """The dense conv rows: (mode, batch, pass, flops, seconds), and the GPU named."""
    out, gpus = [], set()
    for path, line, r in kind_rows(paths, "conv"):
        if r.get("groups") != "1":
            continue
        try:
            pss = r["name"].rsplit("/", 1)[1]
            batch = int(r["shape"].split("x", 1)[0])
            flops, ms = float(r["flops"]), float(r["ms"])
        except (KeyError, ValueError, TypeError, AttributeError, IndexError):
            raise InputError("%s:%d: expected name WIDTH/PASS, shape BATCHx..., and numbers "
                             "in flops and ms" % (path, line))
        check_pass_mode_time(path, line, pss, r["mode"], MODES, ms)
        out.append((r["mode"], batch, pss, flops, ms / 1e3))
        gpus.add(r.get("gpu", ""))
    if not out:
        raise InputError("%s: no dense conv rows (kind conv, groups 1)" % ", ".join(paths))
    return out, one_gpu(gpus)


def read_rn50(paths):
    """gpu_kernels.py --only rn50conv rows: {(mode, batch): {(kernel, stride, pass): [flops,
    seconds]}} weighted by how often ResNet-50 runs each shape (`elements`), the stem's
    input gradient left out (training computes none for the model's input), and the GPU."""
    out, gpus = collections.defaultdict(lambda: collections.defaultdict(lambda: [0.0, 0.0])), set()
    for path, line, r in kind_rows(paths, "rn50conv"):
        try:
            shape, pss = r["name"].rsplit("/", 1)
            cin, rest = shape.split("x", 1)
            kernel, stride = rest.split("k", 1)[1].split("s")
            batch = int(r["shape"].split("x", 1)[0])
            count, flops, ms = int(r["elements"]), float(r["flops"]), float(r["ms"])
        except (KeyError, ValueError, TypeError, AttributeError, IndexError):
            raise InputError("%s:%d: expected name CINxCOUTkKsS/PASS, shape BATCHx..., and "
                             "numbers in elements, flops and ms" % (path, line))
        check_pass_mode_time(path, line, pss, r["mode"], RN50_MODES, ms)
        if cin == "3" and pss == "dgrad":
            continue
        key = ("%sx%s" % (kernel, kernel), int(stride), pss)
        cell_ = out[(r["mode"], batch)][key]
        cell_[0] += count * flops
        cell_[1] += count * ms / 1e3
        gpus.add(r.get("gpu", ""))
    if not out:
        raise InputError("%s: no rn50conv rows" % ", ".join(paths))
    return out, one_gpu(gpus)


def rn50_report(paths, table, peaks_given):
    per, gpu = read_rn50(paths)
    name, peaks = peaks_given or gemm_rates.gpu_peaks(gpu, table, ("tf32", "fp16"))
    print("%s: %s, ResNet-50's convolutions as the model runs them (each shape times its "
          "count), TFLOP/s and efficiency against the %s peak of the mode's math"
          % (", ".join(paths), gpu, name))
    for mode, batch in sorted(per):
        peak = peaks[RN50_MODES[mode]]
        cells = per[(mode, batch)]
        print("  %s batch %d (peak %g TFLOP/s)" % (mode, batch, peak))
        for key in sorted(cells):
            f, t = cells[key]
            print("    %-4s s%d %-6s %8.1f GFLOP %8.3f ms %7.1f TFLOP/s %6.3f"
                  % (key[0], key[1], key[2], f / 1e9, t * 1e3, f / t / 1e12, f / t / 1e12 / peak))
        f = sum(v[0] for v in cells.values())
        t = sum(v[1] for v in cells.values())
        print("    all            %8.1f GFLOP %8.3f ms %7.1f TFLOP/s %6.3f  (the model's mix)"
              % (f / 1e9, t * 1e3, f / t / 1e12, f / t / 1e12 / peak))


def pooled(rows):
    f = sum(r[3] for r in rows)
    t = sum(r[4] for r in rows)
    return f / t / 1e12 if t > 0 else None


def cell(rate, peak):
    return "%6.1f %5.3f" % (rate, rate / peak) if rate is not None else "%12s" % "-"


def report(rows, peaks):
    print("%-10s %-6s " % ("mode", "batch") + " ".join("%12s" % c for c in PASSES + ("all",)))
    batches = sorted(set(r[1] for r in rows))
    for mode in MODES:
        peak = peaks[MODES[mode]]
        for b in batches + ["all"]:
            sel = [r for r in rows if r[0] == mode and (b == "all" or r[1] == b)]
            if not sel:
                continue
            rates = [pooled([r for r in sel if r[2] == p]) for p in PASSES] + [pooled(sel)]
            print("%-10s %-6s " % (mode, b) + " ".join(cell(x, peak) for x in rates))
    return pooled([r for r in rows if r[0] == TAKEN])


def conv_op(chain):
    """(pass, x dims, w dims, stride, input-gradient computed, groups) of the innermost
    convolution op in a kernel's chain, or None."""
    for e in reversed(chain):
        if e["name"] not in CONV_OPS:
            continue
        dims, ci = tc.dims(e), e["args"].get("Concrete Inputs") or []
        try:
            if e["name"] == "aten::convolution_backward":  # grad_out, input, weight, ...
                mask = ast.literal_eval(ci[10])
                return ("bwd", dims[1], dims[2], ast.literal_eval(ci[4])[0], bool(mask[0]),
                        int(ci[9]), e)
            return "fwd", dims[0], dims[1], ast.literal_eval(ci[3])[0], False, int(ci[5]), e
        except (IndexError, ValueError, SyntaxError, TypeError):
            return None
    return None


def trace_rates(path, iters):
    """Per kernel size: [GFLOP, compute ms, helper ms, transpose ms, ops] per iteration of
    the trace's dense convolutions (ops: forward and backward calls, the kernels ddpsim
    charges for them); the same per pass of the op ("fwd", "bwd": a backward op's input and
    weight gradients together, as ddpsim charges a layer's backward); and the kernels whose
    op's shapes could not be read."""
    per = collections.defaultdict(lambda: [0.0, 0.0, 0.0, 0.0, 0.0])
    by_pass = {p: [0.0, 0.0, 0.0, 0.0, 0.0] for p in ("fwd", "bwd")}
    counted, unread = set(), 0
    for e, chain in tc.gpu_activities(tc.load(path)):
        if tc.classify(chain) != "conv":
            continue
        op = conv_op(chain)
        if op is None:
            unread += 1
            continue
        pss, x, w, stride, dgrad, groups, ev = op
        if groups != 1:
            continue
        n, _, h, _ = x
        k, c, r, s = w
        side = (h + 2 * (r // 2) - r) // stride + 1
        key = "%dx%d" % (r, s)
        name = e["name"]
        col = 3 if any(t in name for t in TRANSPOSES) else 2 if any(
            t in name for t in HELPERS) else 1
        cells = (per[key], by_pass[pss])
        for v in cells:
            v[col] += e["dur"] / 1e3 / iters
        op_id = (ev["tid"], ev["ts"])
        if op_id not in counted:  # the op's FLOPs once, however many kernels it ran
            counted.add(op_id)
            passes = 1 if pss == "fwd" else 1 + dgrad
            for v in cells:
                v[4] += 1.0 / iters
                v[0] += 2.0 * n * k * side * side * c * r * s * passes / 1e9 / iters
    return per, by_pass, unread


COMPUTE_PASS = (("dgrad", "dgrad"), ("wgrad", "wgrad"), ("fprop", "fwd"))


def trace_passes(path, iters, by_shape=False):
    """Per (kernel size, stride, pass), or with by_shape per (kernel size, stride, pass, in
    channels, out channels, input side, batch): [GFLOP, ms of compute and helper kernels, launches,
    ops] per iteration of the trace's dense convolutions, transposes apart. A backward op's
    kernel is the input gradient's or the weight's by its name (cuDNN's xmma `dgrad`,
    `wgrad`); one that names neither (a GEMM: nvjet, cutlass) is the input gradient's
    if it is the op's first such kernel and the op computes that gradient (cuDNN runs
    the input gradient first), else the weight gradient's; helpers go with the pass of
    the compute kernel before them in the op."""
    per = collections.defaultdict(lambda: [0.0, 0.0, 0, 0])
    seen = {}  # op -> [compute kernels so far, last pass]; (op, pass) -> 1 once counted
    for e, chain in sorted(tc.gpu_activities(tc.load(path)), key=lambda a: a[0]["ts"]):
        if tc.classify(chain) != "conv":
            continue
        op = conv_op(chain)
        if op is None:
            continue
        pss, x, w, stride, dgrad, groups, ev = op
        if groups != 1 or any(t in e["name"] for t in TRANSPOSES):
            continue
        n, _, h, _ = x
        k, c, r, s = w
        side = (h + 2 * (r // 2) - r) // stride + 1
        op_id = (ev["tid"], ev["ts"])
        state = seen.setdefault(op_id, [0, None])
        helper = any(t in e["name"] for t in HELPERS)
        if pss == "fwd":
            which = "fwd"
        elif helper and state[1]:
            which = state[1]
        else:
            which = next((v for t, v in COMPUTE_PASS if t in e["name"]), None)
            if which is None or which == "fwd":
                which = "dgrad" if dgrad and state[0] == 0 else "wgrad"
        if not helper:
            state[0] += 1
            state[1] = which
        key = ("%dx%d" % (r, s), stride, which) + ((c, k, h, n) if by_shape else ())
        per[key][1] += e["dur"] / 1e3 / iters
        per[key][2] += 1.0 / iters
        flops_key = (op_id, which)
        if flops_key not in seen:
            seen[flops_key] = 1
            per[key][0] += 2.0 * n * k * side * side * c * r * s / 1e9 / iters
            per[key][3] += 1.0 / iters
    return per


def pass_report(path, iters, peak):
    per = trace_passes(path, iters)
    print("%s by kernel size, stride and pass (per iteration; compute + helper kernels)"
          % path)
    print("  %-6s %6s %-6s %9s %9s %8s %9s %6s" % ("kernel", "stride", "pass", "GFLOP", "ms",
                                                  "launches", "TFLOP/s", "eff"))
    tot = [0.0, 0.0]
    for key in sorted(per):
        g, ms, n, _ = per[key]
        tot[0] += g
        tot[1] += ms
        print("  %-6s %6d %-6s %9.1f %9.3f %8.1f %9.1f %6.3f" % (key[0], key[1], key[2], g, ms, n,
                                                               g / ms if ms else 0,
                                                               g / ms / peak if ms else 0))
    print("  all                  %9.1f %9.3f %8s %9.1f %6.3f" % (tot[0], tot[1], "",
                                                              tot[0] / tot[1],
                                                              tot[0] / tot[1] / peak))


def overhead_rate(path, cell, overhead_us, what):
    """(rate in TFLOP/s, busy ms) of a trace_rates cell by the rule of tools/gen_gpus.py:
    ddpsim charges each op kernel_overhead + FLOPs / (efficiency x peak), so the rate that
    gives the cell's time back is GFLOP / (compute + helper ms - ops x overhead)."""
    busy = cell[1] + cell[2] - cell[4] * overhead_us / 1e3
    if busy <= 0:
        raise InputError("%s: %.0f %s ops x %g us exceed their convolutions' %.3f ms"
                         % (path, cell[4], what, overhead_us, cell[1] + cell[2]))
    return cell[0] / busy, busy


def trace_report(path, iters, overhead_us=None, peak=None):
    per, by_pass, unread = trace_rates(path, iters)
    print("%s (per iteration; rate: compute + helper kernels, transposes apart)" % path)
    print("  %-6s %9s %6s %11s %10s %13s %9s" % ("kernel", "GFLOP", "share", "compute ms",
                                                 "helper ms", "transpose ms", "TFLOP/s"))
    total = [0.0] * 5
    flops = sum(v[0] for v in per.values())
    for key in sorted(per, key=lambda k: -per[k][0]) + ["all"]:
        v = total if key == "all" else per[key]
        if key != "all":
            total = [a + b for a, b in zip(total, v)]
        busy = v[1] + v[2]
        print("  %-6s %9.1f %5.1f%% %11.3f %10.3f %13.3f %9.1f"
              % (key, v[0], 100 * v[0] / flops if flops else 0, v[1], v[2], v[3],
                 v[0] / busy if busy else 0))
    if unread:
        print("  (%d kernels of convolution ops without readable shapes left out)" % unread)
    if overhead_us is None or not total[4]:
        return
    math, (pk_name, pk) = ("conv_half", peak["fp16"]) if conv_half(path) else \
        ("conv_tf32", peak["tf32"])
    rate, busy = overhead_rate(path, total, overhead_us, "forward and backward")
    print("  %.1f GFLOP in %.3f ms less %.0f kernels (forward and backward ops) x %g us = "
          "%.3f ms" % (total[0], total[1] + total[2], total[4], overhead_us, busy))
    label = "gpus.yaml conv_tf32" if math == "conv_tf32" else \
        "conv_half by the same rule (a check: gpus.yaml's conv_half is the CSVs')"
    print("%s: %.1f / %g TFLOPS = %.3f (%s's peak; every pass of the trace)"
          % (label, rate, pk, round(rate / pk, 3), pk_name))
    # the same rule per pass: the forward ops, and the backward ops (input and weight
    # gradients together, one kernel_overhead per op as ddpsim charges a layer's backward)
    for pss, what in (("fwd", "forward"), ("bwd", "backward")):
        cell = by_pass[pss]
        if not cell[4]:
            continue
        rate, busy = overhead_rate(path, cell, overhead_us, what)
        print("  %s: %.1f GFLOP in %.3f ms less %.0f kernels x %g us = %.3f ms"
              % (what, cell[0], cell[1] + cell[2], cell[4], overhead_us, busy))
        label = "gpus.yaml %s_%s" % (math, pss) if math == "conv_tf32" else \
            "%s_%s by the same rule (a check)" % (math, pss)
        print("%s: %.1f / %g TFLOPS = %.3f (%s's peak; the trace's %s ops)"
              % (label, rate, pk, round(rate / pk, 3), pk_name, what))


def read_rn50_shapes(paths, mode):
    """{(kernel, stride, pass, in, out, side, batch): (ms per call, how often the model runs it)}
    of gpu_kernels.py --only rn50conv rows in `mode`, and the batch (one)."""
    out, batches = {}, set()
    for path, line, r in kind_rows(paths, "rn50conv"):
        if r.get("mode") != mode:
            continue
        try:
            shape, pss = r["name"].rsplit("/", 1)
            cin, rest = shape.split("x", 1)
            cout, ks = rest.split("k", 1)
            kernel, stride = ks.split("s")
            batch, _, side, _ = (int(v) for v in r["shape"].split("x"))
            key = ("%sx%s" % (kernel, kernel), int(stride), pss, int(cin), int(cout), side,
                   batch)
            out[key] = (float(r["ms"]), int(r["elements"]))
        except (KeyError, ValueError, TypeError, AttributeError, IndexError):
            raise InputError("%s:%d: expected name CINxCOUTkKsS/PASS, shape BxCxHxW, and "
                             "numbers in elements and ms" % (path, line))
        batches.add(batch)
    if len(batches) != 1:
        raise InputError("%s: %d batches of mode %s: expected one CSV's" % (
            ", ".join(paths), len(batches), mode))
    return out, batches.pop()


def compare_report(paths, mode, trace, iters, floor_us, shapes=False):
    """The microbenchmark's time of each (shape, pass), times how often the model runs it,
    beside the trace's kernels of the same shape and pass (compute + helpers, transposes
    apart), per iteration; per kernel size, stride and pass, then all, then the shapes whose
    microbenchmark call took over floor_us (a call at or under it times the host's
    dispatch, not the GPU: every shape's call at batch 32 takes at least ~27 us)."""
    micro, batch = read_rn50_shapes(paths, mode)
    per = trace_passes(trace, iters, by_shape=True)
    print("%s (%s, batch %d) against %s: ms per iteration, micro = call ms x count"
          % (", ".join(paths), mode, batch, trace))
    classes = collections.defaultdict(lambda: [0.0] * 5)
    if shapes:
        print("  per shape: us per call (trace: its kernels per op), how often per iteration")
    for key, (g, ms, _, ops) in sorted(per.items()):
        if key not in micro:
            raise InputError("%s: trace shape %s has no %s row" % (", ".join(paths), key, mode))
        call_ms, count = micro[key]
        if abs(ops - count) > 1e-9:
            raise InputError("%s: shape %s runs %g times per iteration in the trace, %d in the "
                             "CSV" % (trace, key, ops, count))
        if shapes:
            print("  %-4s s%d %-5s %4d->%-4d @%3d x%-2d trace %7.1f us  micro %7.1f us  %5.2f"
                  % (key[0], key[1], key[2], key[3], key[4], key[5], count, ms / ops * 1e3,
                     call_ms * 1e3, call_ms * ops / ms))
        c = classes[key[:3]]
        c[0] += g
        c[1] += ms
        c[2] += call_ms * count
        if call_ms * 1e3 > floor_us:
            c[3] += ms
            c[4] += call_ms * count
    print("  %-6s %6s %-6s %9s %9s %9s %7s %9s %9s %7s" % (
        "kernel", "stride", "pass", "GFLOP", "trace ms", "micro ms", "micro/", "trace ms",
        "micro ms", "micro/"))
    print("  %-22s %9s %29s %27s" % ("", "", "all shapes", "calls over %g us" % floor_us))
    tot = [0.0] * 5
    for key in sorted(classes) + ["all"]:
        c = tot if key == "all" else classes[key]
        if key != "all":
            tot = [a + b for a, b in zip(tot, c)]
        name = ("all", "", "") if key == "all" else key
        print("  %-6s %6s %-6s %9.1f %9.3f %9.3f %7.2f %9.3f %9.3f %7s" % (
            name[0], name[1], name[2], c[0], c[1], c[2], c[2] / c[1], c[3], c[4],
            "%.2f" % (c[4] / c[3]) if c[3] else "-"))


def fit_call(paths, iters):
    """Kernel time = t0 + FLOPs / rate_i over the dense convolutions of traces i (one rate
    per trace, its math's; t0 shared): each shape and pass one point (its FLOPs and mean
    compute + helper time per op), weighted by how often the iteration runs it, least
    squares. For a given t0 each trace's best 1 / rate is (Sxy - t0 Sx) / Sxx (weighted
    sums over its points); putting that back leaves a residual u - t0 v per point, u = y -
    x Sxy / Sxx, v = 1 - x Sx / Sxx, so t0 = sum(w u v) / sum(w v v). Returns t0 in us and,
    per trace, (rate in TFLOP/s, kernels, GFLOP, ms per iteration)."""
    sets = []
    for path in paths:
        pts = [(g * 1e9 / ops, ms * 1e-3 / ops, ops)
               for g, ms, _, ops in trace_passes(path, iters, by_shape=True).values() if ops > 0]
        sx = sum(w * f for f, _, w in pts)
        sxx = sum(w * f * f for f, _, w in pts)
        sxy = sum(w * f * t for f, t, w in pts)
        if len(pts) < 2 or sxx <= 0:
            raise InputError("%s: fewer than two convolution shapes to fit" % path)
        sets.append((pts, sx, sxx, sxy))
    num = den = 0.0
    for pts, sx, sxx, sxy in sets:
        for f, t, w in pts:
            u, v = t - f * sxy / sxx, 1 - f * sx / sxx
            num += w * u * v
            den += w * v * v
    if den <= 0:
        raise InputError("%s: every shape of the same FLOPs: no intercept to fit"
                         % ", ".join(paths))
    t0 = num / den
    out = []
    for path, (pts, sx, sxx, sxy) in zip(paths, sets):
        slope = (sxy - t0 * sx) / sxx
        if slope <= 0:
            raise InputError("%s: time does not rise with FLOPs (slope %g)" % (path, slope))
        out.append((1 / slope / 1e12, sum(w for _, _, w in pts), sx / 1e9,
                    sum(w * t for _, t, w in pts) * 1e3))
    return t0 * 1e6, out


def conv_half(path):
    """Whether a trace's dense convolutions take half inputs (fp16 / bf16)."""
    for e, chain in tc.gpu_activities(tc.load(path)):
        if tc.classify(chain) == "conv":
            op = conv_op(chain)
            if op is not None:
                return any(t in ("c10::Half", "c10::BFloat16") for t in tc.types(op[6]))
    raise InputError("%s: no convolution kernels" % path)


def predict_report(t0, paths, per, checks, iters):
    """Each check trace's dense convolutions at t0 + FLOPs / rate (the rate of the fitted
    trace of the same math) beside their measured time and their time at that trace's one
    rate (total FLOPs / total time)."""
    by_math = {}
    for path, (rate, _, gflop, ms) in zip(paths, per):
        by_math[conv_half(path)] = (rate, gflop / ms)
    print("  check (not fitted): kernels, measured ms, t0 + FLOPs / rate, at one rate")
    for path in checks:
        half = conv_half(path)
        if half not in by_math:
            raise InputError("%s: no fitted trace of its math" % path)
        rate, mix = by_math[half]
        pts = [(g, ms, ops) for g, ms, _, ops in
               trace_passes(path, iters, by_shape=True).values() if ops > 0]
        ms = sum(p[1] for p in pts)
        gflop = sum(p[0] for p in pts)
        call = sum(ops * t0 * 1e-3 + g / rate for g, _, ops in pts)
        one = gflop / mix
        print("  %s: %.0f, %.3f, %.3f (%+d %%), %.3f (%+d %%)"
              % (path, sum(p[2] for p in pts), ms, call, round(100 * (call / ms - 1)), one,
                 round(100 * (one / ms - 1))))


def fit_report(paths, iters, checks=()):
    t0, per = fit_call(paths, iters)
    print("kernel time = t0 + FLOPs / rate over each trace's dense convolutions (shape x pass, "
          "weighted by its count), t0 shared, least squares")
    for path, (rate, ops, gflop, ms) in zip(paths, per):
        print("  %s: %.1f kernels, %.1f GFLOP in %.3f ms per iteration: rate %.1f TFLOP/s"
              % (path, ops, gflop, ms, rate))
    print("t0: %.1f us per kernel" % t0)
    if checks:
        predict_report(t0, paths, per, checks, iters)


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("csv", nargs="*", help="CSVs of bench/gpu_kernels.py --only conv")
    ap.add_argument("--trace", action="append", default=[],
                    help="a torch.profiler trace (.json.gz) of a training run; repeatable")
    ap.add_argument("--iters", type=int, default=2, help="iterations in each trace (2)")
    ap.add_argument("--kernel-overhead-us", type=float, default=4.0,
                    help="ddpsim's kernel_overhead, taken off each convolution kernel it "
                    "charges (CSVs, --trace; default 4, the H200 and H100 topologies')")
    ap.add_argument("--trace-gpu", default="NVIDIA H200",
                    help="--trace: the traces' GPU, for its peaks (default %(default)s)")
    ap.add_argument("--rn50", action="append", default=[],
                    help="a CSV of gpu_kernels.py --only rn50conv (repeatable): ResNet-50's own "
                         "mix per kernel size, stride and pass")
    ap.add_argument("--compare", metavar="TRACE",
                    help="with one --rn50 CSV and --mode: its calls beside the trace's kernels "
                         "of the same shapes and passes")
    ap.add_argument("--mode", default="fp32-tf32-nhwc", choices=sorted(RN50_MODES),
                    help="--compare's microbenchmark mode (default: %(default)s)")
    ap.add_argument("--floor-us", type=float, default=45.0,
                    help="--compare: calls at or under this many us are left out of its "
                         "second columns (host-bound; default %(default)s)")
    ap.add_argument("--fit-call", action="store_true",
                    help="with --trace (repeatable): fit kernel time = t0 + FLOPs / rate over "
                         "their dense convolutions, t0 shared, a rate per trace (an analysis: "
                         "ddpsim has no such term; bench/results/gpu-2026-11-27-h200/"
                         "notes-rn50conv.md)")
    ap.add_argument("--check", action="append", default=[], metavar="TRACE",
                    help="--fit-call: a trace to predict (repeatable), not fitted")
    ap.add_argument("--shapes", action="store_true",
                    help="--compare: each shape and pass first, us per call")
    ap.add_argument("--by-pass", action="store_true",
                    help="with --trace: per kernel size, stride and pass (forward, input "
                         "gradient, weight gradient), efficiency against the fp16 peak")
    ap.add_argument("--gpus", default=os.path.join(REPO, "topologies", "gpus.yaml"),
                    help="the GPU table the peaks come from (default: %(default)s)")
    ap.add_argument("--peak-fp32", type=float, help="FP32 peak, TFLOP/s")
    ap.add_argument("--peak-tf32", type=float, help="TF32 peak, TFLOP/s")
    ap.add_argument("--peak-fp16", type=float, help="FP16 tensor peak, TFLOP/s")
    a = ap.parse_args(argv)
    if not a.csv and not a.trace and not a.rn50:
        ap.error("give CSVs, --trace, --rn50, or several")
    try:
        if a.csv:
            rows, gpu = read_rows(a.csv)
            if a.peak_fp32 and a.peak_tf32 and a.peak_fp16:
                name, peaks = "given", {"fp32": a.peak_fp32, "tf32": a.peak_tf32,
                                        "fp16": a.peak_fp16}
            else:
                name, peaks = gemm_rates.gpu_peaks(gpu, a.gpus, ("fp32", "tf32", "fp16"))
            print("%s: %s, peaks (%s) fp32 %g, tf32 %g, fp16 %g TFLOP/s"
                  % (", ".join(a.csv), gpu, name, peaks["fp32"], peaks["tf32"], peaks["fp16"]))
            print("dense 3x3 convolutions: TFLOP/s and efficiency (rate / peak), pooled = total "
                  "FLOPs / total time; NCHW modes include cuDNN's layout transposes")
            report(rows, peaks)
            taken = [r for r in rows if r[0] == TAKEN]
            if taken:
                ovh = a.kernel_overhead_us * 1e-6
                share = {"fwd": ovh, "dgrad": ovh / 2, "wgrad": ovh / 2}
                if any(r[4] <= share[r[2]] for r in taken):
                    raise InputError("a %s row is shorter than its share of the %g us kernel "
                                     "overhead" % (TAKEN, a.kernel_overhead_us))
                f = sum(r[3] for r in taken)
                t = sum(r[4] for r in taken)
                busy = t - sum(share[r[2]] for r in taken)
                rate = f / busy / 1e12
                print("%s rows: %.1f GFLOP in %.3f ms, less %g us per kernel ddpsim charges "
                      "(%d forward, %d backward) %.3f ms" % (
                          TAKEN, f / 1e9, t * 1e3, a.kernel_overhead_us,
                          sum(r[2] == "fwd" for r in taken),
                          sum(r[2] == "dgrad" for r in taken), busy * 1e3))
                print("gpus.yaml conv_half: %.1f / %g TFLOPS = %.3f (%s rows, every batch)"
                      % (rate, peaks["fp16"], rate / peaks["fp16"], TAKEN))
        if a.compare:
            compare_report(a.rn50, a.mode, a.compare, a.iters, a.floor_us, a.shapes)
        elif a.rn50:
            given = ("given", {"tf32": a.peak_tf32, "fp16": a.peak_fp16}) \
                if a.peak_tf32 and a.peak_fp16 else None
            rn50_report(a.rn50, a.gpus, given)
        if a.fit_call:
            fit_report(a.trace, a.iters, a.check)
        if a.trace and not a.fit_call:
            name = "given" if a.peak_tf32 and a.peak_fp16 else a.trace_gpu
            tp = {"tf32": (name, a.peak_tf32), "fp16": (name, a.peak_fp16)} \
                if name == "given" else {m: (name, v) for m, v in gemm_rates.gpu_peaks(
                    a.trace_gpu, a.gpus, ("tf32", "fp16"))[1].items()}
        for path in [] if a.fit_call else a.trace:
            trace_report(path, a.iters, a.kernel_overhead_us, tp)
            if a.by_pass:
                peak = a.peak_fp16 or gemm_rates.gpu_peaks("NVIDIA H200", a.gpus, ("fp16",))[1]["fp16"]
                pass_report(path, a.iters, peak)
    except (InputError, gemm_rates.InputError) as e:
        print("conv_rates: %s" % e, file=sys.stderr)
        return 2
    except (OSError, ValueError, KeyError) as e:
        print("conv_rates: %s" % e, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
