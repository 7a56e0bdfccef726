#!/usr/bin/env python3
"""The attention core's batched products' rates and efficiencies from `gpu_kernels.py --only
bmm`'s CSV (what topologies/gpus.yaml's attention_fp32, attention_tf32 and attention_half
for H200 and H100 are set from: tools/gen_gpus.py), and, with --trace, the same products as
a training run's torch.profiler trace ran them.

    python3 bench/bmm_rates.py bench/results/gpu-2026-11-27-h200/bmm-queued.csv
    python3 bench/bmm_rates.py --trace bench/results/gpu-2026-11-26-h200/prof/gpt2-fp32-b8.json.gz

The CSV names each row MODEL-PASS: per layer an eager attention core runs the forward
scores S = Q K^T (qk) and context P V (pv), and BmmBackward0 of each runs two products
(dp, dv; dq, dk), each once per layer per pass, so each row counts once and a model's
pooled value is the products' time of one layer. All three models have 12 layers: pooling
one layer of each weights them as their runs do. Pooling is total FLOPs / total time
(bench/gemm_rates.py says why: ddpsim charges FLOPs / (efficiency x peak)). `half` pools
the fp16 and bf16 rows (ddpsim's half math is either; gpus.yaml gives both the same peak).

Time: each row's kernels alone (`kernel_us`, torch.profiler; cuBLASLt's workspace memset
included), since ddpsim charges a kernel's launch apart (kernel_overhead); --time interval
takes the CUDA-event interval (`ms`). A CSV whose rows have no kernel_us and were not
queued behind a spin kernel (queued_ahead 1) timed the host's dispatch where a kernel is
shorter than it: the script says so (the 2026-11-27 run's bmm.csv: BERT-base b32's rows
took 31-43 us in every math, the host's pace, where its kernels take 5-33 us).

Peaks: the GPU table's fp32, tf32, fp16 and bf16 for the CSV's `gpu` column, or --gpu NAME
(matched against smi_names in topologies/gpus.yaml) where the CSV has none.

--trace: the trace's batched products (tools/trace_classes.py class `attention`, aten::bmm),
per launching op (forward matmul or BmmBackward0), input dims and kernel: calls and mean
us per iteration (the trace holds --iters iterations, default 2), TFLOP/s (2 b m k n per
call; memsets count 0 FLOPs), and the trace's pooled rate per math.

Standard library only.
"""

import argparse
import collections
import csv
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
from gemm_rates import InputError, gpu_peaks  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PASSES = ("qk", "pv", "dp", "dv", "dq", "dk")
MODES = ("fp32", "tf32", "fp16", "bf16")
# gpus.yaml's key per math, and the CSV modes it pools
KEYS = (("attention_fp32", ("fp32",)), ("attention_tf32", ("tf32",)),
        ("attention_half", ("fp16", "bf16")))


def read_rows(path, use_interval):
    """The bmm rows: (model, pass, mode, flops, seconds), the CSV's GPU, and the passes
    whose time may be the host's (no kernel time, not queued)."""
    try:
        with open(path, newline="", encoding="utf-8") as f:
            rows = list(csv.DictReader(f))
    except OSError as e:
        raise InputError("cannot read %s: %s" % (path, e.strerror))
    out, gpus, hostpaced = [], set(), 0
    for line, r in enumerate(rows, start=2):
        if r.get("kind", "bmm") != "bmm":
            continue
        try:
            model, pss = r["name"].rsplit("-", 1)
            flops = float(r["flops"])
            kus = (r.get("kernel_us") or "").strip()
            s = float(r["ms"]) / 1e3 if use_interval or not kus else float(kus) / 1e6
        except (KeyError, ValueError, AttributeError):
            raise InputError("%s:%d: expected name MODEL-PASS and numbers in flops, ms and "
                             "kernel_us" % (path, line))
        if pss not in PASSES:
            continue  # a variant the pooling does not use (e.g. dkt, dK as (s x 64))
        if r.get("mode") not in MODES or s <= 0:
            raise InputError("%s:%d: mode %r, time %g: expected one of %s and a positive "
                             "time" % (path, line, r.get("mode"), s, MODES))
        queued = (r.get("queued_ahead") or r.get("ahead") or "").strip() == "1"
        if not kus and not queued:
            hostpaced += 1
        out.append((model, pss, r["mode"], flops, s))
        gpus.add(r.get("gpu", ""))
    if not out:
        raise InputError("%s: no bmm rows" % path)
    if len(gpus) != 1:
        raise InputError("%s: rows from %d GPUs: expected one" % (path, len(gpus)))
    return out, gpus.pop(), hostpaced


def pooled(rows):
    f = sum(r[3] for r in rows)
    t = sum(r[4] for r in rows)
    return (f / t / 1e12, t) if t > 0 else (None, 0)


def cell(rate, peak):
    return "%6.1f %5.3f" % (rate, rate / peak) if rate is not None else "%12s" % "-"


def report(rows, peaks):
    print("%-22s %-4s " % ("model", "math") + " ".join("%12s" % c for c in PASSES + ("layer",))
          + "  layer us")
    models = list(dict.fromkeys(r[0] for r in rows))
    for mode in MODES:
        for m in models:
            sel = [r for r in rows if r[0] == m and r[2] == mode]
            if not sel:
                continue
            rates = [pooled([r for r in sel if r[1] == p])[0] for p in PASSES]
            rate, t = pooled(sel)
            print("%-22s %-4s " % (m, mode) + " ".join(cell(x, peaks[mode]) for x in rates)
                  + " " + cell(rate, peaks[mode]) + "  %8.1f" % (t * 1e6))
    chosen = {}
    print("pooled, all models (one layer of each):")
    for key, modes in KEYS:
        sel = [r for r in rows if r[2] in modes]
        if not sel:
            continue
        rate, t = pooled(sel)
        peak = peaks[modes[0]]
        per = ", ".join("%s %.3f" % (m, pooled([r for r in sel if r[0] == m])[0] / peak)
                        for m in models if any(r[0] == m for r in sel))
        print("  %-15s %7.2f / %g TFLOPS = %.3f  (%s; %.1f us of kernels)"
              % (key, rate, peak, rate / peak, per, t * 1e6))
        chosen[key] = rate
    return chosen


def trace_report(path, iters):
    import trace_classes as tc
    per = collections.defaultdict(lambda: [0.0, 0, 0.0])
    acts = []
    for e, chain in tc.gpu_activities(tc.load(path)):
        if tc.classify(chain) != "attention":
            continue
        aten = [c for c in chain if c["name"].startswith("aten::")]
        inner = aten[-1] if aten else None
        if inner is not None and inner["name"] == "aten::bmm":
            acts.append((e, chain, aten, inner))
    # an fp32 bmm's math is its GEMM kernel's: CUDA-core (ffma) FP32, else tensor-core
    # TF32 (sm90_xmma_..._tf32..., cutlass_80_tensorop_s1688gemm); a memset takes its call's
    tensor_core = {}
    for e, _, _, inner in acts:
        if e.get("cat") == "kernel":
            eid = e["args"].get("External id")
            tensor_core[eid] = tensor_core.get(eid, False) or "ffma" not in e["name"]
    for e, chain, aten, inner in acts:
        nodes = [c["name"].split("evaluate_function: ")[-1] for c in chain
                 if "evaluate_function:" in c["name"]]
        d, ty = tc.dims(inner), tc.types(inner)
        kernel = e["name"]
        math = "half" if not ty or ty[0] != "float" else \
            "tf32" if tensor_core.get(e["args"].get("External id")) else "fp32"
        flops = 0.0
        if e.get("cat") == "kernel" and len(d) >= 2 and len(d[0]) == 3 and len(d[1]) == 3:
            flops = 2.0 * d[0][0] * d[0][1] * d[0][2] * d[1][2]
        key = (math, nodes[-1] if nodes else aten[0]["name"], str(d), kernel.split("(")[0][:70])
        per[key][0] += e["dur"]
        per[key][1] += 1
        per[key][2] += flops
    if not per:
        raise InputError("%s: no aten::bmm kernels of class attention" % path)
    print("%s (per iteration of %d):" % (path, iters))
    print("%-5s %-14s %-34s %5s %8s %8s  %s" % ("math", "op", "dims", "calls", "mean us",
                                               "TFLOP/s", "kernel"))
    tot = collections.defaultdict(lambda: [0.0, 0.0])
    for (math, op, d, kernel), (us, n, fl) in sorted(per.items()):
        print("%-5s %-14s %-34s %5.0f %8.1f %8s  %s" % (
            math, op, d, n / iters, us / n, "%.1f" % (fl / us / 1e6) if fl else "-", kernel))
        tot[math][0] += us / iters
        tot[math][1] += fl / iters
    for math, (us, fl) in tot.items():
        print("  %s: %.1f GFLOP in %.1f us per iteration: %.1f TFLOP/s (memsets included)"
              % (math, fl / 1e9, us, fl / us / 1e6))


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("csv", nargs="?", help="a CSV of bench/gpu_kernels.py --only bmm")
    ap.add_argument("--gpus", default=os.path.join(REPO, "topologies", "gpus.yaml"),
                    help="the GPU table the peaks come from (default: %(default)s)")
    ap.add_argument("--gpu", help="the GPU's nvidia-smi name, where the CSV has no gpu column")
    ap.add_argument("--time", choices=("kernel", "interval"), default="kernel",
                    help="kernel_us (default) or the CUDA-event interval ms")
    ap.add_argument("--trace", action="append", default=[],
                    help="a torch.profiler trace (.json.gz) whose products to list")
    ap.add_argument("--iters", type=int, default=2, help="iterations in each trace")
    a = ap.parse_args(argv)
    if not a.csv and not a.trace:
        ap.error("give a CSV, --trace, or both")
    try:
        if a.csv:
            rows, gpu, hostpaced = read_rows(a.csv, a.time == "interval")
            gpu = gpu or a.gpu
            if not gpu:
                raise InputError("%s: no gpu column: give --gpu" % a.csv)
            name, peaks = gpu_peaks(gpu, a.gpus, MODES)
            print("%s: %s, peaks (%s) %s TFLOP/s; time: %s" % (
                a.csv, gpu, name, ", ".join("%s %g" % kv for kv in peaks.items()),
                "the CUDA-event interval" if a.time == "interval" else
                "the kernels alone (the interval where a row has no kernel_us)"))
            if hostpaced:
                print("warning: %d rows have no kernel time and were not queued behind a "
                      "spin kernel: where a kernel is shorter than the host's dispatch, "
                      "their interval is the host's" % hostpaced)
            print("TFLOP/s and efficiency (rate / peak); pooled = total FLOPs / total time")
            report(rows, peaks)
        for t in a.trace:
            trace_report(t, a.iters)
    except InputError as e:
        print("bmm_rates: %s" % e, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
