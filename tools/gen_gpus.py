#!/usr/bin/env python3
"""Generate ddpsim's GPU table (topologies/gpus.yaml) from the reference CSV.

Reads ../shared/data/gpu_specs.csv (relative to the repository root; see
--data) and writes topologies/gpus.yaml. Output depends only on the CSV
(same input, byte-identical output). With --check nothing is written: the
table is regenerated in memory and compared with the one in the tree; the
exit status is 1 when it differs. (The model files come from real PyTorch:
tools/export_model.py.)

Standard library only.
"""

import argparse
import csv
import os
import re
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_DATA = os.path.join(os.path.dirname(REPO), "shared", "data")
SRC = "../shared/data"  # as cited in the generated comments


class GenError(Exception):
    pass


PCIE_X16_GBPS = {3: 16, 4: 32, 5: 64}  # per direction


# Measured efficiencies per op class and math (gpus.yaml `efficiency`, read by
# sim/net/gpu_table.c; sim/train/compute.h says how they are used): each is a
# published achieved rate over the peak it was achieved against, value =
# measured / peak rounded to 3 digits, with what was measured and where.
# Keys CLASS_MATH (conv, matmul, attention x fp32, tf32, half) and memory (the
# fraction of HBM bandwidth a device-to-device copy reaches). A key left out
# was not measured: the topology's flops_efficiency (mem_efficiency) applies.
# Rules: never chosen to make a validation/ row fit; a derived value shows
# its arithmetic. What is a proxy says so:
#  - conv_*: A100 has published convolution measurements (CUTLASS's implicit-
#    GEMM kernels, below); for V100 and H100 none was found in the sources
#    searched, and since cuDNN runs convolutions as implicit GEMMs the same
#    GPU's GEMM measurement in the same math stands in (an upper bound: on
#    A100 the f16 convolution reached 0.534 of peak where large GEMMs reach
#    0.869).
#  - attention_*: not set; attention's batched matmuls take matmul's value.
#  - half: fp16 and bf16 share the tensor rate; the measurement is of either.
# (key, measured, peak, unit, what was measured, source)
_LAYLUP = "https://github.com/lablup/mlxcel/issues/1654"
_PT_TF32 = ("https://pytorch.org/docs/stable/notes/cuda.html"
            "#tensorfloat-32-tf32-on-ampere-and-later-devices")
_MAMF = ("https://github.com/stas00/ml-engineering/blob/master/compute/accelerator/README.md"
         "#maximum-achievable-matmul-flops-comparison-table")
# The CUTLASS README's profiler examples name no GPU; taken as A100 (not
# verified): its sm80 kernel's 166.5 TFLOPS of f16 with f32 accumulation
# exceeds the dense peak of every other Ampere or Turing part (GA102: 71),
# and the examples are built for sm75/sm80 only. CUTLASS's kernels, not cuDNN's.
_CUTLASS = ("https://github.com/NVIDIA/cutlass/blob/main/README.md (and docs.nvidia.com/cutlass "
            "quickstart, 'Building one Convolution CUDA kernel')")
_H100_CAL = "bench/results/gpu-2026-11-23-h100/calibrate/calibrate.log (this project, 2026-11-23)"
_V100 = [
    ("matmul_fp32", 14.0, 15.7, "TFLOPS", "cuBLAS SGEMM at m=2048 shapes, V100", _LAYLUP),
    ("matmul_half", 97.5, 125, "TFLOPS", "cuBLAS f16 GEMM at m=2048, V100: 95 to 100 (midpoint)",
     _LAYLUP),
    ("conv_fp32", 14.0, 15.7, "TFLOPS", "proxy: matmul_fp32 (implicit GEMM)", _LAYLUP),
    ("conv_half", 97.5, 125, "TFLOPS", "proxy: matmul_half (implicit GEMM)", _LAYLUP),
    ("memory", 790, 900, "GB/s", "cudaMemcpy device to device, V100 16GB (HBM2, 900 GB/s as SXM2)",
     "https://www.paranumal.com/single-post/2018/02/08/rough-n-ready-roofline-nvidia-v100-edition"),
]
_A100 = [
    ("matmul_fp32", 18.88, 19.49, "TFLOPS", "cuBLAS SGEMM 5120x4096x4096, A100 80GB PCIe "
     "(same SMs and FP32 peak as SXM4)", "https://github.com/Yinghan-Li/YHs_Sample/issues/4"),
    ("matmul_tf32", 134.2, 156, "TFLOPS", "torch matmul 10240^3 with TF32 'takes 0.016s on "
     "GA100': 2*10240^3/0.016 s = 134.2 TFLOPS", _PT_TF32),
    ("matmul_half", 271.2, 312, "TFLOPS", "BF16 matmul, best shape 1024x10240x5120 (MAMF), A100 SXM",
     _MAMF),
    ("conv_fp32", 16.1362, 19.5, "TFLOPS", "CUTLASS implicit-GEMM fprop on CUDA cores, 3x3, "
     "n=8 224x224 c=k=128, FP32 (cutlass_simt_sfprop_optimized_128x128_8x2_nhwc)", _CUTLASS),
    ("conv_tf32", 166.526, 312, "TFLOPS", "no TF32 convolution measurement found: the fraction of "
     "the f16 tensor-core convolution below (same implicit-GEMM tensor-core kernels)", _CUTLASS),
    ("conv_half", 166.526, 312, "TFLOPS", "CUTLASS implicit-GEMM fprop on tensor cores, same "
     "problem, f16 in, f32 accumulate (cutlass_tensorop_s16816fprop_optimized_f16_128x128_32x5)",
     _CUTLASS),
    ("memory", 1.80, 2.04, "TB/s", "streaming read kernel on A100 80GB SXM, 88% of peak by Nsight "
     "Compute too (the thread cites a GTC talk: ~90% at most)",
     "https://forums.developer.nvidia.com/t/trouble-to-reach-peak-bandwidth-of-a100/339083"),
]
_H100 = [
    ("matmul_fp32", 42.22, 66.9, "TFLOPS", "cuBLAS SGEMM (FP32 math), least-squares rate over 18 "
     "square shapes of ResNet-50's layer FLOPs (edges 117-1949), H100 SXM", _H100_CAL),
    ("matmul_tf32", 95.34, 494.7, "TFLOPS", "the same shapes in TF32 math (cublasSetMathMode); "
     "smaller than the other GPUs' large GEMMs", _H100_CAL),
    ("matmul_half", 794.5, 989, "TFLOPS", "BF16 matmul, best shape 2048x2048x13312 (MAMF), "
     "H100 SXM", _MAMF),
    ("conv_fp32", 42.22, 66.9, "TFLOPS", "proxy: matmul_fp32 (implicit GEMM)", _H100_CAL),
    ("conv_tf32", 95.34, 494.7, "TFLOPS", "proxy: matmul_tf32 (implicit GEMM)", _H100_CAL),
    ("conv_half", 794.5, 989, "TFLOPS", "proxy: matmul_half (implicit GEMM)", _MAMF),
    ("memory", 2985, 3350, "GB/s", "cudaMemcpy device to device of 512 MiB, 2*S/t, H100 SXM",
     _H100_CAL),
]
EFFICIENCY = {
    "V100-SXM2-16/32GB": _V100,
    "A100-SXM4-40GB": _A100,  # the 80 GB card's measurements: same SMs and clocks
    "A100-SXM4-80GB": _A100,
    "H100-SXM5-80GB": _H100,
    # Same GH100 die, SM count and clocks as H100 SXM (gpus.yaml): its FP32, TF32
    # and memory fractions are H100's, not measured on H200; half: GH200 (GH100
    # with 141 GB HBM3e) measured.
    "H200-SXM-141GB": [(k, m, p, u, "H100's, not measured on H200: " + w, src)
                       for k, m, p, u, w, src in _H100 if not k.endswith("_half")] + [
        ("matmul_half", 828.6, 989, "TFLOPS", "BF16 matmul, best shape 1024x15360x4096 (MAMF), "
         "GH200 (GH100, 141 GB HBM3e)", _MAMF),
        ("conv_half", 828.6, 989, "TFLOPS", "proxy: matmul_half (implicit GEMM)", _MAMF),
    ],
}
EFF_KEYS = [c + "_" + m for c in ("conv", "matmul", "attention")
            for m in ("fp32", "tf32", "half")] + ["memory"]


def efficiency_lines(gpu, has_tf32):
    """The `efficiency` map of one GPU and a comment line per value."""
    entries = EFFICIENCY.get(gpu, [])
    out, keys = [], set()
    entries = sorted(entries, key=lambda e: EFF_KEYS.index(e[0]))
    for key, measured, peak, unit, what, src in entries:
        check(key in EFF_KEYS and key not in keys, "%s: efficiency key %r" % (gpu, key))
        check(has_tf32 or "tf32" not in key, "%s: %s without TF32" % (gpu, key))
        keys.add(key)
        v = round(measured / peak, 3)
        check(0 < v <= 1, "%s: %s = %g" % (gpu, key, v))
        out.append("    #   %s %.3f = %g / %g %s: %s (%s)"
                   % (key, v, measured, peak, unit, what, src))
    if not out:
        return []
    vals = ", ".join("%s: %.3f" % (k, round(m / p, 3)) for k, m, p, _, _, _ in entries)
    return ["    # efficiency: measured achieved / peak (tools/gen_gpus.py EFFICIENCY)"] + out + [
        "    efficiency: {%s}" % vals]


def check(cond, msg):
    if not cond:
        raise GenError(msg)


def read_csv(data, name):
    path = os.path.join(data, name)
    try:
        with open(path, newline="", encoding="utf-8") as f:
            return list(csv.DictReader(f))
    except OSError as e:
        raise GenError("cannot read %s: %s" % (path, e.strerror))


def num(s, what, gpu):
    s = s.strip()
    check(re.fullmatch(r"\d+(\.\d+)?", s) is not None, "%s: %s %r is not a number" % (gpu, what, s))
    return s


def short_source(s):
    """The source column as one line: its leading clauses, up to 140 characters."""
    parts = [p.strip() for p in re.split(r"(?:;|\.)\s+", " ".join(s.split())) if p.strip()]
    out = parts[0]
    for p in parts[1:]:
        if len(out) + 2 + len(p) > 140:
            break
        out += "; " + p
    return out.replace("\\", "\\\\").replace('"', '\\"')


def gpus(data):
    rows = read_csv(data, "gpu_specs.csv")
    for gpu in EFFICIENCY:
        check(any(r["gpu"] == gpu for r in rows), "EFFICIENCY names %r, not in gpu_specs.csv" % gpu)
    out = [
        "# GPU table. Generated by tools/gen_gpus.py from %s/gpu_specs.csv (NVIDIA datasheets "
        "via the pages named there); do not edit by hand." % SRC,
        "# fp32: vector FP32; tf32/fp16/bf16: tensor cores, dense (no sparsity), key omitted "
        "where the GPU has none. mem: HBM capacity (decimal GB); mem_bw: HBM bandwidth.",
        "# nvlink_bw: NVLink per direction, all links together; pcie_bw: PCIe x16 per direction "
        "(Gen3 16, Gen4 32, Gen5 64 GBps).",
        "schema_version: 1",
        "gpus:",
    ]
    for r in rows:
        gpu = r["gpu"]
        m = re.fullmatch(r"(.*-)(\d+)/(\d+)GB", gpu)
        if m:
            variants = [(m.group(1) + m.group(k) + "GB", m.group(k)) for k in (2, 3)]
            mm = re.match(r"(\d+) or (\d+) GB", r["memory"])
            check(mm is not None and (mm.group(1), mm.group(2)) == (m.group(2), m.group(3)),
                  "%s: memory column %r" % (gpu, r["memory"]))
        else:
            mm = re.match(r"(\d+) GB", r["memory"])
            check(mm is not None, "%s: memory column %r" % (gpu, r["memory"]))
            variants = [(gpu, mm.group(1))]
        nv = r["nvlink"]
        m1 = re.search(r"(\d+(?:\.\d+)?) (?:GB/s )?per direction", nv)
        bidir = [float(x) for x in re.findall(r"(\d+(?:\.\d+)?) GB/s bidir", nv)]
        # total bidirectional = the largest "GB/s bidir" figure (V100 also quotes per link)
        if m1:
            nvlink = m1.group(1)
            check(not bidir or max(bidir) == 2 * float(nvlink), "%s: nvlink" % gpu)
        elif bidir:
            nvlink = "%g" % (max(bidir) / 2)
        else:
            check(nv.strip().lower() in ("", "n/a", "none"), "%s: nvlink %r" % (gpu, nv))
            nvlink = None
        mp = re.search(r"Gen(\d) x16", r["pcie"])
        check(mp is not None and int(mp.group(1)) in PCIE_X16_GBPS, "%s: pcie %r" % (gpu, r["pcie"]))
        pcie = PCIE_X16_GBPS[int(mp.group(1))]
        for pat, mult in ((r"~?(\d+) GB/s/dir", 1), (r"(\d+)\+\d+ GB/s", 1), (r"(\d+) GB/s bidir", 0.5)):
            mq = re.search(pat, r["pcie"])
            if mq:  # a figure quoted in the column must agree with the generation
                check(float(mq.group(1)) * mult == pcie, "%s: pcie %r" % (gpu, r["pcie"]))
        for name, mem in variants:
            out += [
                "  - name: %s" % name,
                "    arch: %s" % r["arch"],
                "    sms: %d" % int(r["SMs"]),
                "    fp32: %sTFLOPS" % num(r["fp32_TFLOPS_vector"], "fp32", gpu),
            ]
            for key, col in (("tf32", "tf32_tensor_TFLOPS_dense"), ("fp16", "fp16_tensor_TFLOPS_dense"),
                             ("bf16", "bf16_tensor_TFLOPS_dense")):
                v = r[col].strip()
                if v.lower().startswith("n/a"):
                    check(key != "fp16", "%s: fp16 is required" % gpu)
                    continue
                out.append("    %s: %sTFLOPS" % (key, num(v, key, gpu)))
            out += [
                "    mem: %sGB" % mem,
                "    mem_bw: %sGBps" % num(r["hbm_bw_GBps"], "hbm_bw_GBps", gpu),
            ]
            if nvlink is not None:
                out.append("    nvlink_bw: %sGBps" % nvlink)
            out += [
                "    pcie_bw: %dGBps" % pcie,
                '    source: "%s"' % short_source(r["source_and_notes"]),
            ]
            out += efficiency_lines(gpu, not r["tf32_tensor_TFLOPS_dense"].strip().lower()
                                    .startswith("n/a"))
    return "\n".join(out) + "\n"


OUTPUTS = (("topologies/gpus.yaml", gpus),)


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", default=DEFAULT_DATA,
                    help="directory of the reference CSVs (default: %(default)s)")
    ap.add_argument("--check", action="store_true",
                    help="write nothing; exit 1 if a generated file in the tree is out of date")
    args = ap.parse_args(argv)
    try:
        texts = [(rel, fn(args.data)) for rel, fn in OUTPUTS]
    except (GenError, KeyError, ValueError) as e:
        print("gen_gpus: error: %s" % e, file=sys.stderr)
        return 2
    stale = 0
    for rel, text in texts:
        path = os.path.join(REPO, rel)
        try:
            with open(path, encoding="utf-8", newline="") as f:
                old = f.read()
        except OSError:
            old = None
        if args.check:
            if old != text:
                print("gen_gpus: %s is %s; run python3 tools/gen_gpus.py"
                      % (rel, "missing" if old is None else "out of date"), file=sys.stderr)
                stale = 1
        elif old != text:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w", encoding="utf-8", newline="\n") as f:
                f.write(text)
            print("wrote %s" % rel)
    if args.check and not stale:
        print("gen_gpus: generated files are up to date")
    return stale


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
