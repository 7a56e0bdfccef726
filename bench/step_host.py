#!/usr/bin/env python3
"""The optimizer step's host time against the parameter tensor count, every
model in ONE process: a call and a per-tensor cost for Adam as for SGD.

Why: sim/net/topo_compute.c's `host_step_call` (370 us) and `host_step_param`
(5.403 us a tensor) are a line over eleven SGD host_calibrate CSVs of four
models (158-446 tensors), each from its own process, while
`host_step_param_adam` (13.31 us) rests on one BERT-base file less SGD's
call: Adam has no line of its own. The host's speed varies 1.2-1.65x
between processes (bench/results/gpu-2026-11-27c-h200/notes-host2.md), so
a line across processes mixes hosts; here one process holds every model's
parameters (`--models`, tools/torch_models.py's factories at batch 1: only
the parameters are used, each given a gradient once) with one optimizer of
each kind (`--optimizers`, built as host_calibrate.py and torch_measure.py
build them: SGD lr 0.01 momentum 0.9, Adam lr 1e-5, PyTorch's defaults
otherwise: the foreach path on CUDA), and times only `opt.step()`:

  each step behind a spin of its own after a synchronize (host_calibrate's
  Spin: the GPU never gates the host; `free` 1 where the spin outlasted the
  step), `--iters` steps per (model, optimizer) per rep, after `--warmup`
  steps each before the first rep (the optimizers' state is created then),
  the (model, optimizer) pairs' order rotated per rep.

One CSV row per timed step. The summary, per optimizer: each model's median
over its free steps, ms / tensors, the least-squares line over the models'
medians (ms a call + us a tensor), and per rep the line over that rep's
medians (the pairs of one rep are seconds apart: the host's drift falls on
each alike), their intercepts' and slopes' medians and ranges. No forward
or backward runs: the step's host is what it is in training (the same
optimizer code over the same tensors), but the caches hold only the
optimizer's data.

--device cpu is a dry run: no spin runs (free 0), CPU optimizers take the
for-loop path, its times are not the GPU path's host costs.

    python3 bench/step_host.py --out step_host.csv
    nice /root/venv-torch/bin/python bench/step_host.py --device cpu \\
        --models resnet50,mobilenet_v2 --reps 2 --iters 2 --out /tmp/step.csv
"""

import argparse
import csv
import os
import statistics
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import host_calibrate  # noqa: E402  (the spin the step runs behind)
import torch_measure  # noqa: E402  (the models, versions)
from host_pool import line_fit  # noqa: E402  (host_pool.py fits the same lines)

OPTIMIZERS = {  # as host_calibrate.py's main and torch_measure.build_parts build them
    "sgd": lambda params: torch.optim.SGD(params, lr=0.01, momentum=0.9),
    "adam": lambda params: torch.optim.Adam(params, lr=1e-5),
}
DEFAULT_MODELS = "gpt2,resnet50,bert-base,resnet101,se_resnext101_32x4d"


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--models", default=DEFAULT_MODELS,
                    help="comma list of tools/torch_models.py names (default: 148 to 446 "
                    "parameter tensors)")
    ap.add_argument("--optimizers", default="adam,sgd", help="comma list of: sgd, adam")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--reps", type=int, default=6)
    ap.add_argument("--iters", type=int, default=10, help="timed steps per pair per rep")
    ap.add_argument("--warmup", type=int, default=3, help="steps per pair before the first rep")
    ap.add_argument("--sleep-ms", type=float, default=40.0,
                    help="the spin before each step (an Adam step over 446 tensors takes a few "
                    "ms of host time)")
    ap.add_argument("--out", required=True, help="CSV, one row per timed step")
    a = ap.parse_args(argv)
    a.models = [m for m in a.models.split(",") if m]
    a.optimizers = [o for o in a.optimizers.split(",") if o]
    bad = [m for m in a.models if m not in torch_measure.torch_models.MODELS]
    if bad or not a.models or len(set(a.models)) != len(a.models):
        ap.error("--models: %s: expected names of tools/torch_models.py (%s), each once"
                 % (",".join(bad) or "(none)", ", ".join(torch_measure.torch_models.MODELS)))
    bad = [o for o in a.optimizers if o not in OPTIMIZERS]
    if bad or not a.optimizers or len(set(a.optimizers)) != len(a.optimizers):
        ap.error("--optimizers: expected a comma list of %s, each once" % ", ".join(OPTIMIZERS))
    if a.reps < 1 or a.iters < 1 or a.warmup < 0 or a.sleep_ms <= 0:
        ap.error("--reps and --iters must be >= 1, --warmup >= 0, --sleep-ms > 0")
    return a


def timed_step(opt, spin, cuda):
    """One step's host ms behind a spin of its own, and whether the spin
    outlasted it (host_calibrate.phase_rows' timed, for the step alone)."""
    spin.start()
    t0 = time.perf_counter()
    opt.step()
    t1 = time.perf_counter()
    free = spin.end() if cuda else 0
    if cuda:
        torch.cuda.synchronize()
    return (t1 - t0) * 1e3, free


def summary(a, tensors, ms):
    """Per optimizer: each model's median over its free steps (all steps on
    the CPU), the line over those, and the per-rep lines."""
    for opt in a.optimizers:
        print("%s step, host ms (median of the free steps; spin outlasted the step):" % opt)
        med = {}
        for m in a.models:
            steps = [v for rep in ms[m, opt] for v, free in rep if free or not a.cuda]
            n = sum(len(rep) for rep in ms[m, opt])
            if not steps:
                print("  %-22s %4d tensors: no free step of %d" % (m, tensors[m], n))
                continue
            med[m] = statistics.median(steps)
            print("  %-22s %4d tensors: %.3f ms, %.2f us a tensor (%d of %d free)"
                  % (m, tensors[m], med[m], med[m] * 1e3 / tensors[m], len(steps), n))
        call, per = line_fit([(tensors[m], med[m]) for m in med])
        if call is None:
            print("  one tensor count only: no line")
            continue
        print("  line over the models' medians: %.3f ms a call + %.3f us a tensor"
              % (call, per * 1e3))
        for m in med:
            print("    %-22s residual %+.3f ms" % (m, med[m] - call - per * tensors[m]))
        fits = []
        for r in range(a.reps):
            pts = [(tensors[m], statistics.median(v for v, free in ms[m, opt][r]
                                                  if free or not a.cuda))
                   for m in a.models if any(free or not a.cuda for _, free in ms[m, opt][r])]
            fit = line_fit(pts)
            if fit[0] is not None:
                fits.append(fit)
        if fits:
            print("  per-rep lines (%d): call %s ms, median %.3f; per tensor %s us, median %.3f"
                  % (len(fits), " ".join("%.3f" % f[0] for f in fits),
                     statistics.median(f[0] for f in fits),
                     " ".join("%.2f" % (f[1] * 1e3) for f in fits),
                     statistics.median(f[1] for f in fits) * 1e3))


def main(argv=None):
    a = parse_args(argv)
    dev = torch.device(a.device)
    a.cuda = dev.type == "cuda"
    info = torch_measure.print_versions(dev)
    t0 = time.perf_counter()
    opts, tensors = {}, {}
    for m in a.models:
        torch.manual_seed(0)
        model = torch_measure.torch_models.MODELS[m](batch=1)[0].to(dev)
        params = [p for p in model.parameters() if p.requires_grad]
        for p in params:  # one gradient, kept: the step reads it, nothing zeroes it
            p.grad = torch.randn_like(p) * 1e-3
        tensors[m] = len(params)
        for o in a.optimizers:
            opts[m, o] = OPTIMIZERS[o](params)
            for _ in range(a.warmup):
                opts[m, o].step()
        torch_measure.sync(dev)
        print("built %s (%d parameter tensors) and warmed up %s: %.1f s"
              % (m, tensors[m], ", ".join(a.optimizers), time.perf_counter() - t0), flush=True)
    spin, spin_ms = host_calibrate.spin_for(a.cuda, a.sleep_ms, 0)
    pairs = [(m, o) for m in a.models for o in a.optimizers]
    ms = {pair: [] for pair in pairs}
    tmp = a.out + ".tmp"
    with open(tmp, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["rep", "position", "model", "optimizer", "tensors", "iter", "step_ms",
                    "step_free", "spin_ms", "device", "gpu", "torch"])
        for rep in range(1, a.reps + 1):
            shift = (rep - 1) % len(pairs)
            for pos, (m, o) in enumerate(pairs[shift:] + pairs[:shift]):
                steps = [timed_step(opts[m, o], spin, a.cuda) for _ in range(a.iters)]
                ms[m, o].append(steps)
                for i, (v, free) in enumerate(steps):
                    w.writerow([rep, pos, m, o, tensors[m], i, "%.4f" % v, free,
                                "%.0f" % spin_ms, a.device, info["gpu"], info["torch"]])
            f.flush()
    os.replace(tmp, a.out)
    print("%d reps of %d steps per (model, optimizer), each behind a %.0f ms spin, on %s (%.1f s)"
          % (a.reps, a.iters, spin_ms, info["gpu"], time.perf_counter() - t0))
    summary(a, tensors, ms)
    return 0


if __name__ == "__main__":
    sys.exit(main())
