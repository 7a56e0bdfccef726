#!/usr/bin/env python3
"""cuDNN's channels-last batch norm kernels in a torch.profiler trace, one row per kernel,
beside the mechanism ddpsim charges for them (sim/train/norm.c, ds_batch_norm_ns).

PyTorch runs batch norm of half inputs through cuDNN (aten/src/ATen/native/cudnn/
BatchNorm.cpp, cudnn_batch_norm and cudnn_batch_norm_backward: mode
CUDNN_BATCHNORM_SPATIAL_PERSISTENT in training, op CUDNN_BATCHNORM_OPS_BN, so no fused
activation), one kernel per layer and direction. With channels-last tensors cuDNN runs
`batchnorm_fwtr_nhwc_semiPersist` and `batchnorm_bwtr_nhwc_semiPersist`, the persistent
NHWC kernels apex and MXNet published (apex/contrib/csrc/groupbn/batch_norm.h,
nhwc_batch_norm_kernel.h): 512-thread CTAs, 16 threads per pixel of 4 channels each (the
template's 512, 16, 4), so a CTA holds 64 channels and 32 pixels per load; the whole grid
is co-resident (2 CTAs per SM, the template's last argument) and meets at a grid-wide
barrier once per block of 64 channels to combine the CTAs' partial sums. Each CTA keeps a
slice of its pixels on chip (registers and shared memory: 384 pixels forward, 192
backward, read off the trace's grids); pixels beyond that are read again after the barrier:

  forward   cached pixels 2 passes (read x, write y), the rest 3 (x, x again, y)
  backward  cached pixels 3 passes (read x, dy, write dx), the rest 5

Grid: gx = ceil(NHW / cached pixels per CTA); where gx fits in 2 x SMs CTAs, gy = min(channel
blocks, 2 x SMs // gx) blocks run side by side and every pixel is cached, else gx = 2 x SMs,
gy = 1, and the channel blocks run one after another (apex's calc_fwd_grid and
calc_bwd_grid; the template's OUTER_LOOPS flag is 0 exactly for those). Time:

  bytes / (HBM bandwidth x mem_efficiency) + kernel_overhead
    + rounds x (barrier + gx x partial cycles / clock)

rounds = ceil(channel blocks / gy), one grid-wide barrier each, after which every CTA merges
the partial results of the gx CTAs sharing its channels (forward: the Welford merge of count,
mean and M2, a dependent chain per partial; backward: two sums). The barrier and the cycles
per partial are not derived: --fit takes them by least squares from the FIRST trace given
(the time of each kernel beyond its bytes and kernel_overhead) and checks them on every
trace; norm.c's BN_NHWC_* hold the fit on the ResNeXt-101 32x4d trace (the defaults here):

    python3 bench/bn_nhwc.py --fit \
        bench/results/gpu-2026-11-26b-h200/prof/resnext101_32x4d-amp-b128-nhwc.json.gz \
        bench/results/gpu-2026-11-26b-h200/prof/resnet50-amp-b128-nhwc.json.gz \
        bench/results/gpu-2026-11-26-h200/prof/resnet50-amp-b128-nhwc.json.gz \
        bench/results/gpu-2026-11-26b-h200/prof/se_resnext101_32x4d-amp-b128-nhwc.json.gz

Without --fit the traces are compared with the model at the given constants; --rows lists
every kernel (shape, the traced grid and the model's, rounds, bytes, times).

Standard library only (and tools/trace_classes.py's trace reader). H200 constants by
default (--sms 132 --bw 4800e9 --mem-eff 0.869 --overhead-us 4: topologies/gpus.yaml and
validation/topologies/nd-h200-v5.yaml).
"""

import argparse
import math
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
import trace_classes as tc  # noqa: E402

BN_OPS = ("aten::cudnn_batch_norm", "aten::cudnn_batch_norm_backward")
PIXELS_PER_CTA = {"fwd": 384, "bwd": 192}
PASSES = {"fwd": (2, 3), "bwd": (3, 5)}  # cached, re-read
CHANNELS_PER_CTA = 64
# norm.c's BN_NHWC_BARRIER_NS and BN_NHWC_FWD/BWD_PARTIAL_CYCLES (what --fit printed on
# the ResNeXt-101 32x4d trace)
BARRIER_US = 4.81
PARTIAL_CYCLES = (49.2, 11.2)


def model(direction, m, c, esz, sms):
    """(bytes, rounds, gx, gy) of one kernel: m = N*H*W pixels, c channels."""
    max_ctas = 2 * sms
    ppc = PIXELS_PER_CTA[direction]
    cblks = math.ceil(c / CHANNELS_PER_CTA)
    gx = math.ceil(m / ppc)
    if gx <= max_ctas:
        gy = max(1, min(cblks, max_ctas // gx))
        cached = m
    else:
        gx, gy = max_ctas, 1
        cached = gx * ppc
    rounds = math.ceil(cblks / gy)
    p_cached, p_again = PASSES[direction]
    bytes_ = esz * c * (cached * p_cached + (m - cached) * p_again)
    return bytes_, rounds, gx, gy


def kernels(path):
    ev = tc.load(path)
    ops = {}
    for e in ev:
        if e.get("ph") == "X" and e.get("name") in BN_OPS:
            eid = e.get("args", {}).get("External id")
            if eid is not None:
                ops.setdefault(eid, e)
    out = []
    for e in ev:
        if e.get("cat") != "kernel" or "_nhwc_semiPersist" not in e["name"]:
            continue
        op = ops.get(e["args"].get("External id"))
        if not op:
            continue
        dims = op["args"]["Input Dims"][0]
        direction = "bwd" if "bwtr" in e["name"] else "fwd"
        out.append((e["ts"], direction, dims, e["dur"], e["args"].get("grid")))
    out.sort()
    return out


def solve3(rows):
    """Least squares of y on three features (normal equations, Cramer's rule)."""
    a = [[sum(r[0][i] * r[0][j] for r in rows) for j in range(3)] for i in range(3)]
    v = [sum(r[0][i] * r[1] for r in rows) for i in range(3)]

    def det(m):
        return (m[0][0] * (m[1][1] * m[2][2] - m[1][2] * m[2][1]) -
                m[0][1] * (m[1][0] * m[2][2] - m[1][2] * m[2][0]) +
                m[0][2] * (m[1][0] * m[2][1] - m[1][1] * m[2][0]))
    d = det(a)
    out = []
    for k in range(3):
        m = [row[:] for row in a]
        for i in range(3):
            m[i][k] = v[i]
        out.append(det(m) / d)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("traces", nargs="+")
    ap.add_argument("--fit", action="store_true",
                    help="fit the round's constants on the first trace, check them on all")
    ap.add_argument("--barrier-us", type=float, default=BARRIER_US)
    ap.add_argument("--partial-cycles", type=float, nargs=2, default=PARTIAL_CYCLES,
                    metavar=("FWD", "BWD"))
    ap.add_argument("--rows", action="store_true", help="print every kernel")
    ap.add_argument("--iters", type=int, default=2)
    ap.add_argument("--sms", type=int, default=132)
    ap.add_argument("--clock-mhz", type=float, default=1980)
    ap.add_argument("--bw", type=float, default=4800e9)
    ap.add_argument("--mem-eff", type=float, default=0.869)
    ap.add_argument("--overhead-us", type=float, default=4.0)
    ap.add_argument("--esz", type=int, default=2, help="bytes per activation element")
    a = ap.parse_args()
    bw = a.bw * a.mem_eff
    cyc_us = 1.0 / a.clock_mhz

    def rows_of(path):
        out = []
        for ts, d, dims, dur, grid in kernels(path):
            n, c = dims[0], dims[1]
            m = n
            for x in dims[2:]:
                m *= x
            b, rounds, gx, gy = model(d, m, c, a.esz, a.sms)
            out.append((d, dims, dur, grid, (gx, gy), rounds, b, b / bw * 1e6))
        return out

    barrier, partial = a.barrier_us, list(a.partial_cycles)
    if a.fit:
        fit_rows = []
        for d, dims, dur, grid, g, rounds, b, stream_us in rows_of(a.traces[0]):
            f = [rounds, rounds * g[0] if d == "fwd" else 0, rounds * g[0] if d == "bwd" else 0]
            fit_rows.append((f, dur - stream_us - a.overhead_us))
        barrier, pf, pb = solve3(fit_rows)
        partial = [pf / cyc_us, pb / cyc_us]
        print(f"fit on {a.traces[0]} ({len(fit_rows)} kernels, least squares of the time beyond "
              f"bytes and overhead): barrier {barrier:.2f} us per round, a partial's merge "
              f"{partial[0]:.1f} cycles forward, {partial[1]:.1f} backward")
    for path in a.traces:
        rows = rows_of(path)
        print(f"{path}: {len(rows)} kernels")
        tot = {"fwd": [0, 0, 0], "bwd": [0, 0, 0]}
        grid_ok = 0
        sq = 0
        for d, dims, dur, grid, g, rounds, b, stream_us in rows:
            pc = partial[0] if d == "fwd" else partial[1]
            pred = stream_us + rounds * (barrier + g[0] * pc * cyc_us) + a.overhead_us
            el = 1
            for x in dims:
                el *= x
            old = el * a.esz * PASSES[d][1] / bw * 1e6 + a.overhead_us
            tot[d][0] += dur
            tot[d][1] += pred
            tot[d][2] += old
            sq += ((pred - dur) / dur) ** 2
            grid_ok += list(grid[:2]) == list(g)
            if a.rows:
                print(f"  {d} {str(dims):22s} grid {str(grid[:2]):10s} model {str(g):10s} "
                      f"rounds {rounds:2d} {b / 1e6:7.1f} MB  measured {dur:7.1f} us  "
                      f"model {pred:7.1f}  3/5 passes {old:7.1f}")
        print(f"  grids as the model's: {grid_ok} of {len(rows)}; rms error per kernel "
              f"{100 * math.sqrt(sq / max(1, len(rows))):.1f} %")
        for d in ("fwd", "bwd"):
            m_, p_, o_ = (x / a.iters / 1000 for x in tot[d])
            print(f"  {d}: measured {m_:.3f} ms/iter  model {p_:.3f}  3/5 passes at the "
                  f"roofline {o_:.3f}")
        m_, p_, o_ = (sum(tot[d][i] for d in tot) / a.iters / 1000 for i in range(3))
        print(f"  total: measured {m_:.3f} ms/iter  model {p_:.3f}  3/5 passes {o_:.3f}")


if __name__ == "__main__":
    main()
