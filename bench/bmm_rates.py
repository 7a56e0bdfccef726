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
one layer of each weights them as their runs do. Pooling is total FLOPs / total time less
--kernel-overhead-us (default 4, the H200 and H100 topologies' kernel_overhead) per row:
ddpsim charges each product kernel kernel_overhead + max(FLOPs / (efficiency x peak),
bytes / (memory efficiency x bandwidth)) (sim/train/compute_layer.c attn_core_time: fwd 2, bwd 4
kernels per layer), so the efficiency whose FLOP time gives the rows' time back is
FLOPs / ((time - overhead) x peak). Every product is pooled, also those ddpsim charges by
their bytes (the memory floor binds most TF32 and half products: K = 64 or N = 64 moves
16-57 FLOPs per byte), the one rule tools/gen_gpus.py applies to every conv and attention
efficiency. `half` pools the fp16 and bf16 rows (ddpsim's half math is either; gpus.yaml
gives both the same peak). --models pools only the named models.

--scale NUM DEN --scale-models M: also prints each pooled value times NUM's rate / DEN's
rate over the models M (each CSV pooled by the same rule, its own peaks), as `scaled KEY:`
lines: how the H100's values are set (tools/gen_gpus.py): the H200's pooled value times
the H100 / H200 ratio of GPT-2 b8's products in the two GPUs' plain bmm.csv (interval
timing on both; GPT-2 b8's products outlast the host's dispatch, the other models' not).

Time: each row's kernels alone (`kernel_us`, torch.profiler; cuBLASLt's workspace memset
included), what a training trace's kernel durations are and what ddpsim's kernel time
(roofline + kernel_overhead) stands for, the host's dispatch apart; --time interval takes
the CUDA-event interval (`ms`). The output says which it pooled ("us of kernels" or "us
of intervals"). A CSV whose rows have no kernel_us and were not
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


def read_rows(path, use_interval, overhead_s=0.0, models=None):
    """The bmm rows: (model, pass, mode, flops, seconds less overhead_s), the CSV's GPU, the
    passes whose time may be the host's (no kernel time, not queued) and whether every row
    was timed by its kernels."""
    try:
        with open(path, newline="", encoding="utf-8") as f:
            rows = list(csv.DictReader(f))
    except OSError as e:
        raise InputError("cannot read %s: %s" % (path, e.strerror))
    out, gpus, hostpaced, seen, kernels_only = [], set(), 0, {}, True
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
        if models and model not in models:
            continue
        if r.get("mode") not in MODES or s <= overhead_s:
            raise InputError("%s:%d: mode %r, time %g us: expected one of %s and a time over "
                             "the kernel overhead (%g us)" % (path, line, r.get("mode"), s * 1e6,
                                                            MODES, overhead_s * 1e6))
        key = (model, pss, r["mode"])
        if key in seen:
            raise InputError("%s:%d: %s-%s in %s again (first at line %d): expected one row "
                             "per MODEL-PASS and mode" % (path, line, model, pss, r["mode"],
                                                          seen[key]))
        seen[key] = line
        kernels_only = kernels_only and bool(kus) and not use_interval
        queued = (r.get("queued_ahead") or r.get("ahead") or "").strip() == "1"
        if not kus and not queued:
            hostpaced += 1
        out.append((model, pss, r["mode"], flops, s - overhead_s))
        gpus.add(r.get("gpu", ""))
    if not out:
        raise InputError("%s: no bmm rows%s" % (path, " of %s" % ", ".join(models)
                                                if models else ""))
    if models and set(models) - set(r[0] for r in out):
        raise InputError("%s: no rows of %s" % (path, ", ".join(sorted(
            set(models) - set(r[0] for r in out)))))
    if len(gpus) != 1:
        raise InputError("%s: rows from %d GPUs: expected one" % (path, len(gpus)))
    return out, gpus.pop(), hostpaced, kernels_only


def pooled(rows):
    f = sum(r[3] for r in rows)
    t = sum(r[4] for r in rows)
    return (f / t / 1e12, t) if t > 0 else (None, 0)


def cell(rate, peak):
    return "%6.1f %5.3f" % (rate, rate / peak) if rate is not None else "%12s" % "-"


def report(rows, peaks, timed="kernels"):
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
        print("  %-15s %7.2f / %g TFLOPS = %.3f  (%s; %.1f us of %s less overhead)"
              % (key, rate, peak, rate / peak, per, t * 1e6, timed))
        chosen[key] = rate
    return chosen


def scale_report(chosen, peaks, paths, models, overhead_us, gpus_yaml, use_interval):
    models = [m for m in (models or "").split(",") if m]
    if not models:
        raise InputError("--scale needs --scale-models")
    rates = []
    for path in paths:
        rows, gpu, _, kernels_only = read_rows(path, use_interval, overhead_us * 1e-6, models)
        if not gpu:
            raise InputError("%s: no gpu column" % path)
        rates.append((path, gpu, kernels_only, {
            key: pooled([r for r in rows if r[2] in modes])[0] for key, modes in KEYS}))
    print("scaled by %s / %s over %s (%s; %s):" % (
        rates[0][1], rates[1][1], ", ".join(models), " / ".join(r[0] for r in rates),
        " / ".join("kernels" if r[2] else "intervals" for r in rates)))
    for key, modes in KEYS:
        num, den = rates[0][3].get(key), rates[1][3].get(key)
        if key not in chosen or not num or not den:
            continue
        rate = chosen[key] * num / den
        print("  scaled %-15s %7.2f x %.2f / %.2f -> %.2f / %g TFLOPS = %.3f" % (
            key + ":", chosen[key], num, den, rate, peaks[modes[0]], rate / peaks[modes[0]]))


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
    ap.add_argument("--kernel-overhead-us", type=float, default=4.0,
                    help="ddpsim's kernel_overhead, taken off each row's time (default 4)")
    ap.add_argument("--models", help="pool only these models (comma-separated MODEL names)")
    ap.add_argument("--scale", nargs=2, metavar=("NUM", "DEN"),
                    help="also print the values times NUM's / DEN's rate over --scale-models")
    ap.add_argument("--scale-models", help="the models --scale pools (comma-separated)")
    a = ap.parse_args(argv)
    if not a.csv and not a.trace:
        ap.error("give a CSV, --trace, or both")
    try:
        if a.csv:
            models = [m for m in (a.models or "").split(",") if m]
            rows, gpu, hostpaced, kernels_only = read_rows(
                a.csv, a.time == "interval", a.kernel_overhead_us * 1e-6, models)
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
            print("kernel_overhead %g us taken off each row's time" % a.kernel_overhead_us)
            print("TFLOP/s and efficiency (rate / peak); pooled = total FLOPs / total time")
            chosen = report(rows, peaks, "kernels" if kernels_only else "intervals")
            if a.scale:
                scale_report(chosen, peaks, a.scale, a.scale_models, a.kernel_overhead_us, a.gpus,
                             a.time == "interval")
        for t in a.trace:
            trace_report(t, a.iters)
    except InputError as e:
        print("bmm_rates: %s" % e, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
