#!/usr/bin/env python3
"""SM cycles per operand-element of PyTorch's non-vectorised elementwise kernels, from a
torch.profiler trace (the rates sim/train/legacy_ew.h uses).

A CUDA elementwise op runs elementwise_kernel (not vectorized_elementwise_kernel) when its
operands are not all dense in one layout: an operand broadcast or strided, or dense operands
in different layouts (sim/train/legacy_ew.h). For every such kernel of at least 2^20
elements in the trace, this finds the aten op that launched it (the innermost cpu_op with
the kernel's External id), its tensor operands from the op's recorded Input Dims and Input
Strides (the output is the largest; TensorIterator counts the output as one more operand,
an in-place op's self too, but copy_'s destination, which it does not read, once),
classifies it as tools/export_model.py does (legacy_kind, tools/model_export/legacy_ew.py):
  strided     an operand of other dims than the output's, or with a stride 0 on a dimension
              longer than 1 (a broadcast), or operands in other layouts that share their
              unit-stride dimension;
  transposed  all of the output's dims, but operands whose unit-stride dimensions differ
              (an NCHW operand beside an NHWC one; the trace records the inputs only, and an
              in-place op's output is its first input);
  cast        strided, with operands of mixed dtypes (a bf16 tensor plus an fp32 one):
              the kernel's name has gpu_kernel_impl, not gpu_kernel_impl_nocast, so each
              element is loaded and stored through a switch on its operand's dtype
              (CUDALoops.cuh's dynamic-casting branch);
and prints, per (kind, op, shape), the median duration and SM cycles per operand-element
((duration - kernel_overhead) x SMs x clock / (elements x operands)), then per kind the
least-squares fit through the origin over the groups' medians. ddpsim charges these kernels
kernel_overhead + cycles / (SMs x clock) (sim/train/legacy_ew.c), so the fit takes the
topology's kernel_overhead (--overhead-us, default 4: the shipped topologies') out of each
median first, as every fitted per-kernel rate does (docs/architecture.md, "Fitted kernel
rates").

  python3 bench/legacy_ew_fit.py \\
    bench/results/gpu-2026-11-26b-h200/prof/se_resnext101_32x4d-amp-b128-nhwc.json.gz \\
    --sms 132 --clock-mhz 1980
  python3 bench/legacy_ew_fit.py \\
    bench/results/gpu-2026-11-26-h200/prof/gpt2-bf16-b8-p.json.gz --sms 132 --clock-mhz 1980

(the second: the cast kind, GPT-2's attention-mask add under AMP bf16). Standard library only.

With --unrolled it fits the contiguous dynamic-casting kernel instead (legacy_ew.h's
DS_LEGACY_UNROLLED_CAST_CYCLES): unrolled_elementwise_kernel launched by an arithmetic op
(not copy_: those are casts, cast_reduce.h), whose operands are dense and alike but mixed in
dtype, split by pass (fwd: the thread of the trace's first op; bwd: autograd's thread); the
fit line is the forward's, the pass the exporter counts (amp_cast_ew).

  python3 bench/legacy_ew_fit.py --unrolled \\
    bench/results/gpu-2026-11-26-h200/prof/gpt2-bf16-b8-p.json.gz --sms 132 --clock-mhz 1980
"""

import argparse
import collections
import math
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
import trace_classes as tc  # noqa: E402


def numel(dims):
    return math.prod(dims) if dims else 1


def kind_of(operands, out_dims):
    """operands: [(dims, strides)] of the tensor inputs. 'strided', 'transposed' or None."""
    def layout(dims, strides):
        return tuple(s for d, s in zip(dims, strides) if d != 1)

    def unit_dim(dims, strides):
        return next((i for i, (d, s) in enumerate(zip(dims, strides)) if d > 1 and s == 1), None)
    for dims, strides in operands:
        if list(dims) != list(out_dims) or any(s == 0 and d > 1 for d, s in zip(dims, strides)):
            return "strided"
    if len({layout(d, s) for d, s in operands}) == 1:
        return None
    if len({unit_dim(d, s) for d, s in operands}) > 1:
        return "transposed"
    return "strided"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("trace", help="torch.profiler Chrome trace (.json or .json.gz)")
    ap.add_argument("--sms", type=int, required=True)
    ap.add_argument("--clock-mhz", type=float, required=True)
    ap.add_argument("--min-elements", type=int, default=1 << 20)
    ap.add_argument("--overhead-us", type=float, default=4.0,
                    help="kernel_overhead ddpsim adds to the charge, taken out of each median "
                         "(default 4, the shipped topologies')")
    ap.add_argument("--unrolled", action="store_true",
                    help="the contiguous mixed-dtype ops' unrolled_elementwise_kernel instead")
    args = ap.parse_args()
    events = tc.load(args.trace)
    ops = tc.ops_by_external_id(events)
    cycles_per_s = args.sms * args.clock_mhz * 1e6
    groups = collections.defaultdict(list)
    main_tid = min((e for e in events if e.get("cat") == "cpu_op"), key=lambda e: e["ts"])["tid"]
    prefix = "void at::native::%selementwise_kernel" % ("unrolled_" if args.unrolled else "")
    for e in events:
        if e.get("cat") != "kernel" or not e["name"].startswith(prefix):
            continue
        launched = ops.get(e["args"].get("External id"))
        if not launched:
            continue
        op = min(launched, key=lambda o: o["dur"])
        operands = [(d, s) for d, s in zip(op["args"]["Input Dims"], op["args"]["Input Strides"])
                    if d]
        if not operands:
            continue
        out_dims = max((d for d, _ in operands), key=numel)
        elements = numel(out_dims)
        kind = kind_of(operands, out_dims)
        if args.unrolled:
            if kind is not None or op["name"] == "aten::copy_" or len(operands) < 2:
                continue
            kind = "unrolled-" + ("fwd" if op["tid"] == main_tid else "bwd")
        if kind is None or elements < args.min_elements:
            continue
        # gpu_kernel_impl, not gpu_kernel_impl_nocast: operands of mixed dtypes, each element
        # loaded through a switch on its dtype (CUDALoops.cuh; legacy_ew.h's cast kind)
        if kind == "strided" and "gpu_kernel_impl<" in e["name"]:
            kind = "cast"
        # TensorIterator's operands: the output and the inputs, an in-place op's self
        # twice (add_: out, self, other) but copy_'s destination once (it is not read)
        n_operands = len(operands) + (0 if op["name"] == "aten::copy_" else 1)
        key = (kind, op["name"], tuple(out_dims), n_operands)
        groups[key].append(e["dur"] * 1e-6)
    fit = collections.defaultdict(lambda: [0.0, 0.0])
    ovh = args.overhead_us * 1e-6
    print("kernel_overhead %.1f us taken out of each median before the cycles and the fit"
          % args.overhead_us)
    print("kind        op                          output shape           n  median us  "
          "cycles/operand-element")
    for key in sorted(groups):
        kind, name, dims, n_operands = key
        times = sorted(groups[key])
        t = times[len(times) // 2] - ovh
        work = numel(dims) * n_operands / cycles_per_s  # seconds per cycle per operand-element
        print("%-11s %-27s %-20s %3d %10.1f  %.3f" % (kind, name, "x".join(map(str, dims)),
                                                      len(times), (t + ovh) * 1e6, t / work))
        fit[kind][0] += t * work
        fit[kind][1] += work * work
    for kind, (tw, ww) in sorted(fit.items()):
        print("fit %-11s %.3f SM cycles per operand-element" % (kind, tw / ww))


if __name__ == "__main__":
    main()
