#!/usr/bin/env python3
"""GPU ms per iteration by kernel family from torch.profiler key_averages tables, two GPUs side by side.

The H100 run of 2026-11-26 (bench/results/gpu-2026-11-26-h200/h100/) kept only the
profiler's text tables (`prof/*.txt`, key_averages sorted by CUDA total, 60 rows), not
the Chrome traces, so tools/trace_classes.py (which needs the trace's op context) cannot
read it. This script reads the tables of both GPUs the same way so the comparison is
like for like:

- a row is a kernel when its Self CPU is 0 and its name is not a PyTorch op (`aten::`,
  `Optimizer.`, `ProfilerStep`, names with `#`); the op rows double count their kernels;
- each kernel lands in a family by its (possibly truncated, 55 characters) name:
  GEMM by math (nvjet's type code: `sss` FP32, `hsh` fp16, `tst` bf16; cutlass and
  xmma names: bf16/f16 half, tf32 / tensorop_s1688 TF32, simt sgemm / f32f32_f32f32
  FP32 FFMA), conv (cuDNN implicit GEMMs, in TF32 or half as the run's math) and
  conv:transpose (cuDNN's NCHW<->NHWC), attention (flash / fmha), softmax, norm
  (layer/batch norm, GammaBeta), optimizer (multi_tensor), reduce, elementwise
  (elementwise / vectorized / unrolled / dropout; casts are inside it: a table
  truncates the name before the functor), copy (cat, memcpy, memset), other;
- `covered` is the kernels' sum in the 60 rows; `total` the table's `Self CUDA time
  total` (every kernel and copy); `tail` = total - covered, kernels below the top rows.

Times are per iteration: the tables hold --iters (default 2) profiled iterations.

  python3 bench/kernel_table_families.py A.txt B.txt [--names H200 H100] [--iters 2]
      [--kernels FAMILY]   (that family's kernels one by one instead of the summary)
"""

import argparse
import re
import sys

UNIT = {"us": 1e-3, "ms": 1.0, "s": 1e3}


def parse_ms(text):
    match = re.fullmatch(r"([0-9.]+)(us|ms|s)", text.strip())
    if not match:
        raise ValueError(f"not a time: {text!r}")
    return float(match.group(1)) * UNIT[match.group(2)]


def family(name):
    low = name.lower()
    if "nchwtonhwc" in low or "nhwctonchw" in low:
        return "conv:transpose"
    code = re.search(r"nvjet_sm\d+_([a-z]{3})_", low)
    if code:  # cuBLAS's nvjet type code: s fp32, h fp16, t bf16 (GPT-2 bf16's matmuls)
        return "gemm:fp32" if code.group(1) == "sss" else "gemm:half"
    if "norm" in low or "gammabeta" in low or "bn_" in low or "welford" in low:
        return "norm"
    if "implicit_gemm" in low or "conv" in low or "cudnn" in low or "cask" in low:
        return "conv"
    if "gemm" in low or "cutlass" in low:
        if "bf16" in low or "f16" in low or "_h1688" in low or "_h16816" in low:
            return "gemm:half"
        if "tf32" in low or "tensorop_s1688" in low or "tensorop_s16816" in low:
            return "gemm:tf32"
        return "gemm:fp32"  # simt sgemm, xmma f32f32_f32f32 (FFMA)
    if "flash" in low or "fmha" in low or "attention" in low:
        return "attention"
    if "softmax" in low:
        return "softmax"
    if "multi_tensor" in low:
        return "optimizer"
    if "reduce_kernel" in low:
        return "reduce"
    if "elementwise" in low or "dropout" in low:
        return "elementwise"
    if "cat" in low or "memcpy" in low or "memset" in low or "index" in low:
        return "copy"
    return "other"


def is_op(name):
    return (name.startswith("aten::") or name.startswith("Optimizer.") or
            name.startswith("ProfilerStep") or "#" in name or name.startswith("cuda"))


def read_table(path, iters, kernels=None):
    families = {}
    total = None
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            if line.startswith("Self CUDA time total:"):
                total = parse_ms(line.split(":", 1)[1]) / iters
                continue
            fields = re.split(r"\s{2,}", line.strip())
            if len(fields) != 11 or fields[0] == "Name":
                continue
            name, self_cpu, self_cuda = fields[0], fields[2], fields[6]
            try:
                cpu_ms, cuda_ms = parse_ms(self_cpu), parse_ms(self_cuda)
            except ValueError:
                continue
            if cpu_ms != 0.0 or is_op(name):
                continue
            fam = family(name)
            families[fam] = families.get(fam, 0.0) + cuda_ms / iters
            if kernels is not None:
                key = (fam, name, fields[10])
                kernels[key] = kernels.get(key, 0.0) + cuda_ms / iters
    if total is None:
        sys.exit(f"{path}: no 'Self CUDA time total' line (expected a key_averages table)")
    return families, total


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("a")
    parser.add_argument("b")
    parser.add_argument("--names", nargs=2, default=["A", "B"])
    parser.add_argument("--iters", type=int, default=2)
    parser.add_argument("--kernels", metavar="FAMILY",
                        help="list that family's kernels (name, calls) in both tables; '-' where "
                             "a kernel is not in a table's top rows")
    args = parser.parse_args()
    ka, kb = {}, {}
    fa, ta = read_table(args.a, args.iters, ka)
    fb, tb = read_table(args.b, args.iters, kb)
    na, nb = args.names
    if args.kernels:
        for key in sorted(set(ka) | set(kb), key=lambda k: -(ka.get(k, 0) + kb.get(k, 0))):
            if key[0] != args.kernels:
                continue
            a, b = ka.get(key), kb.get(key)
            ratio = f"{b / a:7.3f}" if a and b else f"{'-':>7s}"
            fmt = lambda v: f"{v:8.3f}" if v is not None else f"{'-':>8s}"
            print(f"{key[1][:55]:55s} {key[2]:>5s} {fmt(a)} {fmt(b)} {ratio}")
        return
    print(f"{'family':14s} {na + ' ms':>10s} {nb + ' ms':>10s} {nb + '/' + na:>10s} {'delta ms':>9s}")
    order = sorted(set(fa) | set(fb), key=lambda k: -(fa.get(k, 0) + fb.get(k, 0)))
    for fam in order:
        a, b = fa.get(fam, 0.0), fb.get(fam, 0.0)
        ratio = f"{b / a:10.3f}" if a > 0 else f"{'-':>10s}"
        print(f"{fam:14s} {a:10.3f} {b:10.3f} {ratio} {b - a:9.3f}")
    ca, cb = sum(fa.values()), sum(fb.values())
    print(f"{'covered':14s} {ca:10.3f} {cb:10.3f} {cb / ca:10.3f} {cb - ca:9.3f}")
    print(f"{'tail':14s} {ta - ca:10.3f} {tb - cb:10.3f} {(tb - cb) / (ta - ca):10.3f} {(tb - cb) - (ta - ca):9.3f}")
    print(f"{'total':14s} {ta:10.3f} {tb:10.3f} {tb / ta:10.3f} {tb - ta:9.3f}")


if __name__ == "__main__":
    main()
