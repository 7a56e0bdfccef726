#!/usr/bin/env python3
"""V100 convolution rates from Baidu DeepBench's published training results (what
topologies/gpus.yaml's V100 conv_fp32 and conv_half are set from: tools/gen_gpus.py).

    git -C DEEPBENCH show 30c51150869ee217f150ef5f31dc69241ed23b49:results/train/DeepBench_NV_V100.xlsx > v100.xlsx
    python3 bench/deepbench_conv.py v100.xlsx

The workbook (DGX-1 V100 SXM2, CUDA 10.1.243, cuDNN 7.6.2.24) has a sheet per math:
"Results FP32" and "Results - FP16 ip, Mixed math" (NHWC, tensor-op math, the algorithms
code/nvidia/conv_bench.cu pins: IMPLICIT_PRECOMP_GEMM forward, ALGO_1 for both
gradients). Each convolution row gives the forward, input-gradient and weight-gradient
times (ms) of one shape at one batch (8 or 16 for ResNet-50's shapes).

ResNet-50's convolutions are pooled as ddpsim charges them: FLOPs of a direct convolution
(2 x N x P x Q x K x C x R x S per pass), each shape counted as often as the model runs
it, total FLOPs / total time. The shapes are DeepBench's "Resnet" rows (the 1x1s, a
stage's first 1x1 strided as in the original ResNet; the 3x3 512 at 7x7), the 3x3s at
56, 28 and 14 from its "Face Recognition" rows, conv1 from "Vision" (batch 16 only; no
input gradient); layer1's first 1x1 (64->64 at 56) and layer2's downsample (256->512/2)
have no row and are left out (3.0 % of the forward FLOPs).

Time: the sheet's times less --kernel-overhead-us (default 4, dgx1-v100.yaml's
kernel_overhead) per kernel ddpsim charges: a convolution layer's forward is one kernel and
its backward (input and weight gradients) one more (sim/train/compute_layer.c), and each is
charged kernel_overhead + max(FLOPs / (efficiency x peak), bytes / (memory efficiency x
bandwidth)), so the efficiency whose FLOP time gives the sheet's time back is FLOPs / ((time
- overhead) x peak). Every pass is pooled, also those ddpsim may charge by their bytes (the
1x1s and the stem in fp16, whose FLOPs per byte are under the ridge at the resulting
efficiency): the one rule tools/gen_gpus.py applies to every conv and attention efficiency.
DeepBench's times are host wall-clock over back-to-back calls (conv_bench.cu), at batch 8 and
16: small for training, so the values are lower bounds at validation/'s batches (64-256).

Standard library only (the .xlsx is read as the zip of XML it is).
"""

import argparse
import sys
import xml.etree.ElementTree as ET
import zipfile

NS = {"m": "http://schemas.openxmlformats.org/spreadsheetml/2006/main",
      "r": "http://schemas.openxmlformats.org/officeDocument/2006/relationships"}
SHEETS = {"fp32": ("Results FP32", 15.7, "conv_fp32"),
          "fp16": ("Results - FP16 ip, Mixed math", 125.0, "conv_half")}

# (DeepBench application column, input width = height, C, K, filter, stride, count in ResNet-50)
RESNET50 = [
    ("Vision", 224, 3, 64, 7, 2, 1),
    ("Face Recognition", 56, 64, 64, 3, 1, 3), ("Resnet", 56, 64, 256, 1, 1, 4),
    ("Resnet", 56, 256, 64, 1, 1, 2),
    ("Resnet", 56, 256, 128, 1, 2, 1), ("Face Recognition", 28, 128, 128, 3, 1, 4),
    ("Resnet", 28, 128, 512, 1, 1, 4), ("Resnet", 28, 512, 128, 1, 1, 3),
    ("Resnet", 28, 512, 256, 1, 2, 1), ("Face Recognition", 14, 256, 256, 3, 1, 6),
    ("Resnet", 14, 256, 1024, 1, 1, 6), ("Resnet", 28, 512, 1024, 1, 2, 1),
    ("Resnet", 14, 1024, 256, 1, 1, 5),
    ("Resnet", 14, 1024, 512, 1, 2, 1), ("Resnet", 7, 512, 512, 3, 1, 3),
    ("Resnet", 7, 512, 2048, 1, 1, 3), ("Resnet", 14, 1024, 2048, 1, 2, 1),
    ("Resnet", 7, 2048, 512, 1, 1, 2),
]


def read_sheet(path, name):
    """The sheet's rows as lists of cell strings (shared strings resolved)."""
    try:
        z = zipfile.ZipFile(path)
    except (OSError, zipfile.BadZipFile) as e:
        fail("%s: not a readable .xlsx (%s)" % (path, e))
    shared = []
    if "xl/sharedStrings.xml" in z.namelist():
        for si in ET.fromstring(z.read("xl/sharedStrings.xml")).findall("m:si", NS):
            shared.append("".join(t.text or "" for t in si.iter("{%s}t" % NS["m"])))
    book = ET.fromstring(z.read("xl/workbook.xml"))
    rels = {r.get("Id"): r.get("Target")
            for r in ET.fromstring(z.read("xl/_rels/workbook.xml.rels"))}
    for sheet in book.find("m:sheets", NS):
        if sheet.get("name") != name:
            continue
        target = rels[sheet.get("{%s}id" % NS["r"])].lstrip("/")
        if not target.startswith("xl/"):
            target = "xl/" + target
        rows = []
        for row in ET.fromstring(z.read(target)).iter("{%s}row" % NS["m"]):
            cells = []
            for c in row.findall("m:c", NS):
                v = c.find("m:v", NS)
                text = "" if v is None else v.text
                if c.get("t") == "s" and text:
                    text = shared[int(text)]
                cells.append(text)
            rows.append(cells)
        return rows
    fail("%s: no sheet %r" % (path, name))


def fail(msg):
    print("deepbench_conv: " + msg, file=sys.stderr)
    sys.exit(2)


def find_row(rows, app, width, c, n, k, f, stride):
    for r in rows:
        if len(r) < 17 or r[0] != app:
            continue
        try:
            shape = [int(float(x)) for x in (r[1], r[2], r[3], r[4], r[5], r[6], r[10])]
        except ValueError:
            continue
        if shape == [width, width, c, n, k, f, stride]:
            return r
    return None


def pool(path, sheet, rows, batch):
    """Total FLOPs, total ms and ddpsim's kernels (forward, backward) over ResNet-50's shapes
    at the batch."""
    all_f = all_t = kernels = 0.0
    for app, width, c, k, f, stride, count in RESNET50:
        if app == "Vision" and batch != 16:
            continue  # conv1: DeepBench ran it at batch 16 only
        r = find_row(rows, app, width, c, batch, k, f, stride)
        if r is None:
            fail("%s: sheet %r has no %s row %dx%d C=%d N=%d K=%d %dx%d/%d"
                 % (path, sheet, app, width, width, c, batch, k, f, f, stride))
        p, q = int(float(r[15])), int(float(r[16]))
        flops = 2.0 * batch * p * q * k * c * f * f
        try:
            times = [float(x) for x in r[12:15] if x != "N/A*"]
        except ValueError:
            fail("%s: sheet %r, %s row %dx%d C=%d N=%d K=%d: a time that is not a number: %r"
                 % (path, sheet, app, width, width, c, batch, k, r[12:15]))
        all_f += count * flops * len(times)
        all_t += count * sum(times)
        kernels += count * 2  # the forward's kernel and the backward's
    return all_f, all_t, kernels


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("xlsx", help="DeepBench's results/train/DeepBench_NV_V100.xlsx")
    ap.add_argument("--kernel-overhead-us", type=float, default=4.0,
                    help="ddpsim's kernel_overhead, taken off each kernel (default 4)")
    args = ap.parse_args()
    ovh_ms = args.kernel_overhead_us / 1e3
    print("kernel_overhead %g us taken off each of ddpsim's kernels (a layer's forward, its "
          "backward)" % args.kernel_overhead_us)
    values = []
    for math, (sheet, peak, key) in SHEETS.items():
        rows = read_sheet(args.xlsx, sheet)
        for batch in (8, 16):
            all_f, all_t, kernels = pool(args.xlsx, sheet, rows, batch)
            busy = all_t - kernels * ovh_ms
            rate = all_f / busy / 1e9
            print("%s batch %2d (peak %g TFLOP/s): %.3f GFLOP in %.3f ms, %d kernels: "
                  "%.3f TFLOP/s = %.3f of peak; less overhead %.3f ms: %.3f TFLOP/s = %.3f"
                  % (math, batch, peak, all_f / 1e9, all_t, kernels, all_f / all_t / 1e9,
                     all_f / all_t / 1e9 / peak, busy, rate, rate / peak))
            if batch == 16:
                values.append((key, rate, peak))
    # what tools/gen_gpus.py sets: every pass at batch 16, less the overhead
    for key, rate, peak in values:
        print("gpus.yaml V100 %s: %.3f / %g TFLOPS = %.3f" % (key, rate, peak,
                                                             round(rate / peak, 3)))


if __name__ == "__main__":
    main()
