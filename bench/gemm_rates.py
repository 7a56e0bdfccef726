#!/usr/bin/env python3
"""FP32 and TF32 GEMM rates and efficiencies from `gpu_kernels.py --only gemm`'s CSV:
the transformers' linear GEMMs at their real shapes beside the square GEMMs of equal
FLOPs that `ddpreal calibrate` times (what topologies/gpus.yaml's matmul_fp32 and
matmul_tf32 for H200 and H100 are set from: tools/gen_gpus.py).

    python3 bench/gemm_rates.py bench/results/gpu-2026-11-26d-h200/gemm.csv

Per model (the CSV names each row MODEL-MxKxN-PASS: M tokens, K in-features, N
out-features) and math: TFLOP/s and efficiency (rate / the GPU's peak in that math) of
the forward, input-gradient and weight-gradient GEMMs, of the three passes together,
of the same with each shape counted once, and of the squares. The last lines pool the
models together and print the value gpus.yaml takes.

Pooling is total FLOPs / total time, never a mean of the rates: ddpsim charges each
GEMM FLOPs / (efficiency x peak), so the one efficiency that gives a set of GEMMs its
measured total time is their FLOPs over their time (the FLOP-weighted harmonic mean of
the rates). An arithmetic mean over-weights the fast GEMMs, which take the least time.

A transformer block runs some shapes more than once: BERT's query, key, value and
attention output projections are four 768x768 linears (models/bert-base*.yaml); GPT-2
runs each of its four linears once (c_attn, attn c_proj, c_fc, mlp c_proj). The CSV
has each shape once, so the model columns weight each row by BLOCK_COUNT, which makes
them the GEMM time of one block as the model runs it; `shapes` counts each row once.
All three models have 12 blocks, so pooling one block of each weights them alike.

Time: each row's `ms` is the CUDA-event interval of calls issued back to back, so where a
kernel is shorter than the host's dispatch of a call (28-43 us on the lent H200: the bmm
and rn50conv rows, bench/results/gpu-2026-11-27-h200/notes-bmm.md, notes-rn50conv.md) the
row times the host, not the GPU. The script warns of the rows under --floor-us (default
35): their rate, and the pooled value, may be low (2026-11-26d's gemm.csv: BERT-base b32's
4096x768x768 TF32 forward and input gradient, 29.5 and 30.0 us; the 2026-11-27 repeat's
29.7 and 30.3).

Peaks: the GPU table's fp32 and tf32 for the GPU named in the CSV's `gpu` column
(matched against smi_names in topologies/gpus.yaml), or --peak-fp32/--peak-tf32.

Standard library only.
"""

import argparse
import csv
import os
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PASSES = ("fwd", "dgrad", "wgrad")
MODES = ("fp32", "tf32")
# How often a transformer block runs a linear of (in, out) features, by model; a shape
# not listed runs once (see the docstring).
BLOCK_COUNT = {"bert-base": {(768, 768): 4}, "bert-base-squad": {(768, 768): 4}, "gpt2": {}}


class InputError(Exception):
    pass


def gpu_peaks(gpu, table, modes=MODES):
    """(name, {mode: TFLOP/s} for each of modes) of the gpus.yaml entry whose smi_names
    holds gpu (bench/conv_rates.py asks for fp16 too)."""
    entry, found = None, None
    try:
        with open(table, encoding="utf-8") as f:
            lines = f.readlines()
    except OSError as e:
        raise InputError("cannot read %s: %s" % (table, e.strerror))
    for line in lines + ["  - name: end\n"]:
        s = line.strip()
        if line.startswith("  - name: "):
            if entry and found is None and ('"%s"' % gpu) in entry.get("smi_names", ""):
                found = entry
            entry = {"name": s[len("- name: "):]}
        elif entry is not None and ":" in s and not s.startswith("#"):
            key, _, val = s.partition(":")
            entry[key] = val.strip()
    if found is None:
        raise InputError("%s: no GPU with smi_names %r: give the peaks (--peak-*)"
                         % (table, gpu))
    peaks = {}
    for mode in modes:
        val = found.get(mode, "")
        if not val.endswith("TFLOPS"):
            raise InputError("%s: %s: %s %r is not in TFLOPS" % (table, found["name"], mode, val))
        peaks[mode] = float(val[:-len("TFLOPS")])
    return found["name"], peaks


def read_rows(path):
    """The gemm rows: (model, (k, n), pass, mode, flops, seconds)."""
    try:
        with open(path, newline="", encoding="utf-8") as f:
            rows = list(csv.DictReader(f))
    except OSError as e:
        raise InputError("cannot read %s: %s" % (path, e.strerror))
    out, gpus = [], set()
    for line, r in enumerate(rows, start=2):
        if r.get("kind") != "gemm":
            continue
        try:
            model, dims, pss = r["name"].rsplit("-", 2)
            _, k, n = (int(x) for x in dims.split("x"))
            flops, ms = float(r["flops"]), float(r["ms"])
        except (KeyError, ValueError, TypeError, AttributeError):
            raise InputError("%s:%d: expected name MODEL-MxKxN-PASS and numbers in flops "
                             "and ms" % (path, line))
        if pss not in PASSES + ("square",) or r["mode"] not in MODES or ms <= 0:
            raise InputError("%s:%d: pass %r, mode %r, ms %g: expected one of %s, one of %s "
                             "and a positive time" % (path, line, pss, r["mode"], ms,
                                                      PASSES + ("square",), MODES))
        out.append((model, (k, n), pss, r["mode"], flops, ms / 1e3))
        gpus.add(r.get("gpu", ""))
    if not out:
        raise InputError("%s: no rows of kind gemm" % path)
    if len(gpus) != 1:
        raise InputError("%s: rows from %d GPUs (%s): expected one" % (path, len(gpus),
                                                                       ", ".join(sorted(gpus))))
    return out, gpus.pop()


def family(model):
    """bert-base-squad-b24 -> bert-base-squad (the batch suffix off)."""
    head, _, tail = model.rpartition("-")
    return head if tail.startswith("b") and tail[1:].isdigit() else model


def pooled(rows, weighted):
    """TFLOP/s of rows: total FLOPs / total time, each row counted as often as a block
    runs its shape when weighted."""
    f = t = 0.0
    for model, shape, _, _, flops, s in rows:
        w = BLOCK_COUNT.get(family(model), {}).get(shape, 1) if weighted else 1
        f += w * flops
        t += w * s
    return f / t / 1e12 if t > 0 else None


def cell(rate, peak):
    return "%6.1f %5.3f" % (rate, rate / peak) if rate is not None else "%12s" % "-"


def report(rows, peaks):
    cols = PASSES + ("model", "shapes", "square")
    print("%-22s %-4s " % ("model", "math") + " ".join("%12s" % c for c in cols))

    def line(name, mode, sel):
        real = [r for r in sel if r[2] != "square"]
        rates = [pooled([r for r in real if r[2] == p], True) for p in PASSES]
        rates += [pooled(real, True), pooled(real, False),
                  pooled([r for r in sel if r[2] == "square"], True)]
        print("%-22s %-4s " % (name, mode) + " ".join(cell(x, peaks[mode]) for x in rates))
        return rates[3]

    models = list(dict.fromkeys(r[0] for r in rows))
    modes = [mode for mode in MODES if any(r[3] == mode for r in rows)]
    for mode in modes:
        for m in models:
            sel = [r for r in rows if r[0] == m and r[3] == mode]
            if sel:
                line(m, mode, sel)
    return {mode: line("all", mode, [r for r in rows if r[3] == mode]) for mode in modes}


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("csv", help="a gemm.csv of bench/gpu_kernels.py --only gemm")
    ap.add_argument("--gpus", default=os.path.join(REPO, "topologies", "gpus.yaml"),
                    help="the GPU table the peaks come from (default: %(default)s)")
    ap.add_argument("--peak-fp32", type=float, help="FP32 peak, TFLOP/s")
    ap.add_argument("--peak-tf32", type=float, help="TF32 peak, TFLOP/s")
    ap.add_argument("--floor-us", type=float, default=35.0,
                    help="warn of rows shorter than this (the host's dispatch; default 35)")
    a = ap.parse_args(argv)
    try:
        rows, gpu = read_rows(a.csv)
        if a.peak_fp32 and a.peak_tf32:
            name, peaks = "given", {"fp32": a.peak_fp32, "tf32": a.peak_tf32}
        else:
            name, peaks = gpu_peaks(gpu, a.gpus)
    except InputError as e:
        print("gemm_rates: %s" % e, file=sys.stderr)
        return 2
    print("%s: %s, peaks (%s) fp32 %g, tf32 %g TFLOP/s" % (a.csv, gpu, name, peaks["fp32"],
                                                          peaks["tf32"]))
    print("TFLOP/s and efficiency (rate / peak); pooled = total FLOPs / total time; passes "
          "and model: shapes counted as often as a block runs them; shapes: each once")
    chosen = report(rows, peaks)
    short = [r for r in rows if r[2] != "square" and r[5] * 1e6 < a.floor_us]
    if short:
        print("warning: %d rows under %g us, where a CUDA-event interval of back-to-back calls "
              "may time the host's dispatch (28-43 us on the lent H200), not the kernel: %s"
              % (len(short), a.floor_us, ", ".join("%s-%dx%d-%s %s %.1f us" % (
                  r[0], r[1][0], r[1][1], r[2], r[3], r[5] * 1e6) for r in short)))
    for mode, rate in chosen.items():
        if rate is None:
            continue
        print("gpus.yaml matmul_%s: %.2f / %g TFLOPS = %.3f (all models' linears, as a block "
              "runs them)" % (mode, rate, peaks[mode], rate / peaks[mode]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
