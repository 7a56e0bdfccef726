#!/usr/bin/env python3
"""Layer norm's fp32 rates (sim/train/norm.c LN_FWD_ELEMS_PER_SM_CYCLE, LN_GB_ELEMS_PER_CTA_CYCLE)
from a torch.profiler trace: the mean time of vectorized_layer_norm_kernel<float> and of
GammaBetaBackwardCUDAKernelTemplate<float> over the trace's calls, each less the topology's
kernel_overhead (ddpsim charges work / rate + kernel_overhead: norm.c), as

  forward     2 x M x N element passes / (min(M, SMs) x clock x (mean - overhead))
  gamma/beta  ceil(CTAs / SMs) x 2 x M x 32 element reads / (clock x (mean - overhead))

M (rows) from the forward's grid (one CTA a row), N from --cols, CTAs from the gamma/beta
kernel's grid. The fit set: the GPT-2 bf16 fit row's H200 trace (autocast runs layer norm in
fp32). Standard library only:

  python3 bench/layernorm_trace_fit.py \\
    bench/results/gpu-2026-11-26-h200/prof/gpt2-bf16-b8-p.json.gz --sms 132 --clock-mhz 1980
"""

import argparse
import math
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
import trace_classes as tc  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("trace")
    ap.add_argument("--sms", type=int, required=True)
    ap.add_argument("--clock-mhz", type=float, required=True)
    ap.add_argument("--cols", type=int, default=768, help="N, the normalised size (GPT-2: 768)")
    ap.add_argument("--overhead-us", type=float, default=4.0,
                    help="kernel_overhead, taken out of each mean (default 4, the shipped "
                         "topologies')")
    a = ap.parse_args()
    events = [e for e in tc.load(a.trace) if e.get("cat") == "kernel"]
    clock = a.clock_mhz * 1e6
    fwd = [e for e in events if "vectorized_layer_norm_kernel<float" in e["name"]]
    gb = [e for e in events if "GammaBetaBackwardCUDAKernelTemplate<float" in e["name"]]
    if not fwd or not gb:
        raise SystemExit("%s: no fp32 layer norm kernels" % a.trace)
    rows = fwd[0]["args"]["grid"][0]
    ctas = gb[0]["args"]["grid"][0]
    t_fwd = sum(e["dur"] for e in fwd) / len(fwd)
    t_gb = sum(e["dur"] for e in gb) / len(gb)
    print("kernel_overhead %.1f us taken out of each mean; M = %d rows of N = %d" % (
        a.overhead_us, rows, a.cols))
    w = t_fwd - a.overhead_us
    print("vectorized_layer_norm_kernel      %3d calls, mean %.3f us, less overhead %.3f: "
          "%.3f element passes per SM cycle" % (
              len(fwd), t_fwd, w, 2.0 * rows * a.cols / (min(rows, a.sms) * clock * w * 1e-6)))
    w = t_gb - a.overhead_us
    print("GammaBetaBackwardCUDAKernel (%2d CTAs) %3d calls, mean %.3f us, less overhead %.3f: "
          "%.2f element reads per CTA cycle" % (
              ctas, len(gb), t_gb, w,
              math.ceil(ctas / a.sms) * 2.0 * rows * 32 / (clock * w * 1e-6)))


if __name__ == "__main__":
    main()
