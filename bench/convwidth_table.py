#!/usr/bin/env python3
"""The width sweep (gpu_kernels.py --only convwidth) as tables: per mode and pass, each
dense convolution's queued rate (FLOPs / (time less cuDNN's NCHW transposes)) over the
grid of (Cin, Cout), 1x1 and 3x3 at one GEMM M (batch x 28 x 28), and the tile shape of
the kernel cuDNN picked (cutlass `..._<tm>x<tn>_...`, xmma `tilesize<tm>x<tn>x<tk>`,
cuBLASLt nvjet `..._<tm>x<tn>_...`), so that a tile model's narrow side and tiles can be
read off the data (notes-convwidth.md).

    python3 bench/convwidth_table.py bench/results/gpu-2026-11-27f-h200/convwidth.csv \
        [--mode fp32-tf32 ...] [--peak-tf32 494.7 --peak-half 989.4]
    python3 bench/convwidth_table.py --selftest

Standard library only.
"""
import argparse
import collections
import csv
import re
import sys

PASSES = ("fwd", "dgrad", "wgrad")
HELPERS = ("Memset", "reduce_wgrad", "splitKreduce", "init_device_workspace", "nchwToNhwc",
           "nhwcToNchw", "ComputeOffsets")


def tile_of(kernel):
    """(family, 'tm x tn') of one kernel's name, or None for cuDNN's helpers."""
    if any(h in kernel for h in HELPERS):
        return None
    m = re.search(r"tilesize(\d+)x(\d+)x\d+", kernel)
    if m:
        fam = "xmma-" + ("implicit" if "implicit_gemm" in kernel else "gemm")
        return fam, "%sx%s" % m.groups()
    m = re.search(r"cutlass_80_tensorop_\w*?gemm_(\d+)x(\d+)_", kernel)
    if m:
        return "cutlass-gemm", "%sx%s" % m.groups()
    m = re.search(r"nvjet_\w+?_(\d+)x(\d+)_", kernel)
    if m:
        return "nvjet", "%sx%s" % m.groups()
    return "other", "?"


def main_kernel(full):
    """The compute kernel's (family, tile) of a row's ' ;; '-joined kernel names."""
    for k in full.split(" ;; "):
        t = tile_of(k)
        if t:
            return t
    return ("none", "?")


def load(paths):
    """{mode: {(cin, cout, k): {pass: (tflops, us, family, tile, xpose_us)}}}"""
    out = collections.defaultdict(dict)
    for p in paths:
        with open(p) as f:
            for r in csv.DictReader(line for line in f if not line.startswith("#")):
                if r.get("kind") != "convwidth":
                    continue
                shape, pss = r["name"].split("/")
                m = re.match(r"(\d+)x(\d+)k(\d+)s1$", shape)
                if not m:
                    continue
                key = tuple(int(x) for x in m.groups())
                us = float(r["ms"]) * 1e3 - float(r["xpose_us"] or 0)
                fam, tile = main_kernel(r["kernel_full"])
                out[r["mode"]].setdefault(key, {})[pss] = (
                    float(r["flops"]) / us / 1e6, us, fam, tile, float(r["xpose_us"] or 0))
    return out


def grid(cells, pss, peak, what):
    """Rows Cin, columns Cout (1x1), then the 3x3s: rate as share of peak, or tile."""
    c1 = sorted({k for k in cells if k[2] == 1})
    cins = sorted({k[0] for k in c1})
    couts = sorted({k[1] for k in c1})
    lines = ["| Cin \\ Cout | " + " | ".join(str(c) for c in couts) + " |",
             "| ---: |" + " ---: |" * len(couts)]
    for ci in cins:
        row = []
        for co in couts:
            v = cells.get((ci, co, 1), {}).get(pss)
            if v is None:
                row.append("-")
            elif what == "rate":
                row.append("%.2f" % (v[0] * 1e12 / peak))
            else:
                row.append(v[3] + ("+T" if v[4] > 0 else ""))
        lines.append("| %d | " % ci + " | ".join(row) + " |")
    k3 = sorted(k for k in cells if k[2] == 3)
    if k3:
        row = []
        for k in k3:
            v = cells[k].get(pss)
            row.append("%d: %s" % (k[0], "-" if v is None else (
                "%.2f" % (v[0] * 1e12 / peak) if what == "rate" else v[3])))
        lines.append("")
        lines.append("3x3, Cin = Cout: " + ", ".join(row))
    return lines


def narrow_pairs(cells, pss, peak):
    """(Cin, Cout) against (Cout, Cin): the same FLOPs and narrow side, transposed."""
    out = []
    for (ci, co, k), per in sorted(cells.items()):
        if k != 1 or ci >= co or pss not in per:
            continue
        other = cells.get((co, ci, 1), {}).get(pss)
        if other:
            out.append("%d->%d %.2f / %d->%d %.2f" % (ci, co, per[pss][0] * 1e12 / peak, co, ci,
                                                      other[0] * 1e12 / peak))
    return out


def selftest():
    ok = tile_of("void cutlass::Kernel2<cutlass_80_tensorop_s1688gemm_64x128_16x6_nn_align4>"
                 "(x::Params)") == ("cutlass-gemm", "64x128")
    ok &= tile_of("sm90_xmma_fprop_implicit_gemm_f16f16_f16f32_f32_nhwckrsc_nhwc_tilesize"
                  "256x128x64_warpgroupsize2x1x1_g1") == ("xmma-implicit", "256x128")
    ok &= tile_of("nvjet_sm90_hsh_128x192_64x5_2x1_v_bz_coopB_TNN") == ("nvjet", "128x192")
    ok &= tile_of("Memset (Device)") is None
    ok &= main_kernel("Memset ;; sm90_xmma_gemm_f32f32_tf32f32_f32_nn_n_tilesize64x256x32_w") \
        == ("xmma-gemm", "64x256")
    print("selftest:", "ok" if ok else "FAILED")
    return 0 if ok else 1


def main():
    if sys.argv[1:] == ["--selftest"]:
        return selftest()
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("csv", nargs="+")
    ap.add_argument("--mode", nargs="*", default=["fp32-tf32", "fp32-tf32-nhwc", "fp16-nhwc"])
    ap.add_argument("--peak-tf32", type=float, default=494.7, help="TFLOP/s (gpus.yaml H200)")
    ap.add_argument("--peak-half", type=float, default=989.4, help="TFLOP/s (gpus.yaml H200)")
    a = ap.parse_args()
    data = load(a.csv)
    for mode in a.mode:
        cells = data.get(mode)
        if not cells:
            print("%s: no %s rows" % (", ".join(a.csv), mode), file=sys.stderr)
            return 2
        peak = (a.peak_half if mode.startswith("fp16") else a.peak_tf32) * 1e12
        for pss in PASSES:
            print("\n### %s %s: rate, share of peak (%.1f TFLOP/s)\n" % (mode, pss, peak / 1e12))
            print("\n".join(grid(cells, pss, peak, "rate")))
            print("\nsame FLOPs and narrow side, Cin < Cout against transposed: " +
                  "; ".join(narrow_pairs(cells, pss, peak)))
            print("\n### %s %s: tile tm x tn of the compute kernel (+T: cuDNN's NCHW "
                  "transposes around it)\n" % (mode, pss))
            print("\n".join(grid(cells, pss, peak, "tile")))
            fams = collections.Counter(v[pss][2] for v in cells.values() if pss in v)
            print("\nkernel families: " + ", ".join("%s %d" % kv for kv in sorted(fams.items())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
