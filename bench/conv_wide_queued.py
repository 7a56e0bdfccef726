#!/usr/bin/env python3
"""ResNeXt's dense (groups 1) 3x3 convolutions at full width, the shapes of
bench/results/gpu-2026-11-26d-h200/conv-b*.csv (where tools/gen_gpus.py's
H200 conv_half 0.679 comes from), timed as rn50conv's rows are since
2026-11-27: each pass queued behind a spin kernel, cold tensors, kernels per
call profiled (bench/gpu_kernels.py rn50_conv_rows with these layers). The
check of a per-pass t0 + FLOPs / rate model fitted on ResNet-50's shapes:
do ResNeXt's wider layers run at the rate it predicts?

    python3 bench/conv_wide_queued.py --batch 32 --out wide-b32.csv
    python3 bench/conv_wide_queued.py --device cpu --batch 1 --quick --out /tmp/w.csv  # dry run
"""

import argparse
import csv
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpu_kernels as gk  # noqa: E402
import torch  # noqa: E402


def wide_layers(quick):
    """((cin, cout, k, stride, pad, side), count): ResNeXt 32x4d's and
    32x8d's 3x3 widths, once each (gpu_kernels.resnext_layers)."""
    seen = []
    for wpg in ((4,) if quick else (4, 8)):
        for width, side, stride in gk.resnext_layers(wpg):
            shape = (width, width, 3, stride, 1, side)
            if shape not in seen:
                seen.append(shape)
    if quick:
        seen = [(8, 8, 3, 1, 1, 8)]
    return [(s, 1) for s in seen]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--modes", default="fp32-tf32,fp16-nhwc",
                    help="comma-separated bench/gpu_kernels.py MODES (default %(default)s)")
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--quick", action="store_true", help="one toy shape (a dry run)")
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    modes = a.modes.split(",")
    for m in modes:
        if m not in gk.MODES:
            ap.error("--modes: unknown mode %r (expected %s)" % (m, ", ".join(gk.MODES)))
    dev = torch.device(a.device)
    torch.backends.cudnn.benchmark = True
    info = dict(gk.gpu_info(dev), torch=torch.__version__)
    print("# " + " ".join("%s=%s" % kv for kv in info.items()), flush=True)
    rows = list(gk.rn50_conv_rows(dev, a.batch, a.warmup, a.iters, "full", info, modes=modes,
                                  kind="wideconv", layers=wide_layers(a.quick)))
    for r in rows:
        print("%-22s %-15s %9.4f ms %6.1f TFLOP/s" % (r["name"], r["mode"], r["ms"],
              r["flops"] / (r["ms"] * 1e9)), flush=True)
    fields = []
    for r in rows:
        fields += [k for k in r if k not in fields]
    tmp = a.out + ".tmp"
    with open(tmp, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields + list(info))
        w.writeheader()
        for r in rows:
            w.writerow(dict(r, **info))
    os.replace(tmp, a.out)


if __name__ == "__main__":
    main()
