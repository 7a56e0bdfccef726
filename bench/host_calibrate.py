#!/usr/bin/env python3
"""The host's own time per dispatched aten op and per autograd node on this
machine, with the GPU held busy so that the host never waits for it: the
topology keys `host_dispatch` and `host_node` (docs/strategies.md, "The host
costs") measured on the user's machine rather than taken from the lent H200's.

Why a new method: the defaults come from profiled traces scaled by each run's
unprofiled time over its profiled time, which charges the host with the
stretches where it waited for the GPU (a ResNet-50 iteration is partly
GPU-bound), and a run's own phases (bench/host_phases.py) are gated by the
GPU wherever the GPU is the slower. Here each phase of an iteration
(forward with the loss, backward, the optimizer step) first queues a spin
kernel (torch.cuda._sleep) long enough to outlast the host's phase, then is
timed on the host; a CUDA event recorded behind the spin says whether the
GPU was still spinning when the host finished (`fwd_free`, `bwd_free`,
`step_free` 1; `host_free` is forward's and backward's together), i.e.
whether any launch could have waited. A spin per phase, not per iteration:
the first H200 run (bench/results/gpu-2026-11-26d-h200) gave ResNeXt-101's
backward the spin's 300 ms, the iteration's launches having filled the
driver's queue. The first warm-up iteration runs under
torch.cuda.set_sync_debug_mode("warn"), so the log names any op that
synchronises with the GPU (BERT's forward waited out the spin there too).
The model file's counts (tools/export_model.py: the aten
ops each layer's forward dispatches, `host_dispatches`, and the autograd
nodes its backward runs, `host_nodes`) turn the phases into per-unit costs:

    host_dispatch = forward ms / dispatches,  host_node = backward ms / nodes

(the loss's few ops and nodes are in the phases but not in the counts: a
slight overestimate). A launch queue that fills (more kernels than the
driver queues, about a thousand) or a synchronising op makes the host wait
even behind the spin; the phase's flag 0 then marks its time as not the
host's (the model file's host_syncs names the layers whose forward syncs:
BERT's mask check, `bool(padding_mask.all())`). Under --amp the nodes
include the casts' (host_amp_nodes). --device cpu runs the same loop as a dry
run (CPU kernels run inline, so its times are not host costs).

    python3 bench/host_calibrate.py --model resnet50 --batch 32 --out host.csv
"""

import argparse
import csv
import os
import re
import statistics
import sys
import time

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import torch_measure  # noqa: E402  (its model builder and losses)


def model_counts(name, amp):
    """Sum of host_dispatches and host_nodes over the model file's layers,
    with host_amp_nodes under autocast (its casts' ToCopyBackward0 nodes run
    in the backward too; the casts' own dispatches are host_cast's)."""
    path = os.path.join(HERE, "..", "models", name + ".yaml")
    with open(path) as f:
        text = f.read()

    def total(key):
        return sum(int(v) for v in re.findall(r"^\s+%s: (\d+)" % key, text, re.M))
    return total("host_dispatches"), total("host_nodes") + (total("host_amp_nodes") if amp else 0)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default="resnet50", help="a name of tools/torch_models.py")
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--amp", choices=("fp16", "bf16"))
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--iters", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--sleep-ms", type=float, default=300.0,
                    help="the spin kernel's length, longer than the host's iteration")
    ap.add_argument("--out", required=True, help="CSV, one row per iteration")
    a = ap.parse_args()
    dev = torch.device(a.device)
    torch.backends.cudnn.benchmark = True
    model, x, meta = torch_measure.torch_models.MODELS[a.model](batch=a.batch)
    model = model.to(dev)
    x = torch_measure.to_device(x, dev)
    loss_of = torch_measure.make_loss(meta["loss"], x)
    opt = (torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
           if meta["optimizer"] == "sgd" else torch.optim.Adam(model.parameters(), lr=1e-5))
    dispatches, nodes = model_counts(a.model, a.amp)
    cuda = dev.type == "cuda"
    # cycles per ms at the SM clock the properties report (kHz), else 2 GHz
    khz = getattr(torch.cuda.get_device_properties(0), "clock_rate", 0) if cuda else 0
    cycles = int(a.sleep_ms * (khz if khz else 2_000_000))

    def forward():
        if a.amp:
            dtype = torch.float16 if a.amp == "fp16" else torch.bfloat16
            with torch.autocast(dev.type, dtype=dtype):
                return loss_of(model(**x) if isinstance(x, dict) else model(x))
        return loss_of(model(**x) if isinstance(x, dict) else model(x))

    def timed(fn, debug_syncs):
        """fn's host time behind a spin of its own, and whether the GPU was
        still spinning when the host finished (each phase gets its own spin:
        a whole iteration's launches can fill the driver's queue)."""
        if cuda:
            torch.cuda.synchronize()
            torch.cuda._sleep(cycles)
            spun = torch.cuda.Event()
            spun.record()
        if debug_syncs:  # around fn alone: the explicit synchronize()s are ours
            torch.cuda.set_sync_debug_mode("warn")
        t0 = time.perf_counter()
        out = fn()
        t1 = time.perf_counter()
        if debug_syncs:
            torch.cuda.set_sync_debug_mode(0)
        free = int(not spun.query()) if cuda else 0
        if cuda:
            torch.cuda.synchronize()
        return out, (t1 - t0) * 1e3, free

    rows = []
    for it in range(a.warmup + a.iters):
        # the first warm-up iteration names every op that synchronises the
        # host with the GPU (a sync inside a phase makes its time the spin's)
        debug = cuda and it == 0
        opt.zero_grad(set_to_none=True)
        loss, f_ms, f_free = timed(forward, debug)
        _, b_ms, b_free = timed(loss.backward, debug)
        _, s_ms, s_free = timed(opt.step, debug)
        if it >= a.warmup:
            rows.append(dict(fwd_ms=f_ms, bwd_ms=b_ms, step_ms=s_ms, host_free=f_free & b_free,
                             fwd_free=f_free, bwd_free=b_free, step_free=s_free))
    cols = ["model", "batch", "amp", "device", "iter", "fwd_ms", "bwd_ms", "step_ms",
            "host_free", "fwd_free", "bwd_free", "step_free", "dispatches", "nodes", "dispatch_us", "node_us"]
    tmp = a.out + ".tmp"
    with open(tmp, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(cols)
        for i, r in enumerate(rows):
            w.writerow([a.model, a.batch, a.amp or "", a.device, i, "%.3f" % r["fwd_ms"],
                        "%.3f" % r["bwd_ms"], "%.3f" % r["step_ms"], r["host_free"],
                        r["fwd_free"], r["bwd_free"], r["step_free"],
                        dispatches, nodes,
                        "%.2f" % (r["fwd_ms"] * 1e3 / dispatches) if dispatches else "",
                        "%.2f" % (r["bwd_ms"] * 1e3 / nodes) if nodes else ""])
    os.replace(tmp, a.out)
    fwd = statistics.median(r["fwd_ms"] for r in rows)
    bwd = statistics.median(r["bwd_ms"] for r in rows)
    ffree = sum(r["fwd_free"] for r in rows)
    bfree = sum(r["bwd_free"] for r in rows)
    print("%s batch %d%s on %s: forward %.3f ms, backward %.3f ms (medians of %d; the GPU "
          "still spinning at the end of forward in %d, of backward in %d)"
          % (a.model, a.batch, " " + a.amp if a.amp else "", a.device, fwd, bwd, len(rows),
             ffree, bfree))
    if dispatches and nodes:
        print("  host_dispatch: %.1fus  # %d dispatches\n  host_node: %.1fus  # %d nodes"
              % (fwd * 1e3 / dispatches, dispatches, bwd * 1e3 / nodes, nodes))


if __name__ == "__main__":
    main()
