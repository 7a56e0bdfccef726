#!/usr/bin/env python3
"""Split a training iteration's host time into forward, backward and optimizer step.

For models whose iterations are host-bound (bench/results/gpu-2026-11-26b-h200: ResNeXt-101
spent 53 ms of host time per iteration where ResNet-101, with as many ops, spent 38), this
times each phase's host time with the GPU free to run behind, and counts the calls that
synchronise host and device (torch.cuda.set_sync_debug_mode("warn") warns on each one
PyTorch knows of). A phase that waits on the GPU shows up as host time that grows with
GPU work. Writes one CSV row per model.
"""

import argparse
import csv
import os
import statistics
import sys
import time
import warnings

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
import torch_models  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--models", default="resnet101,resnext101_32x4d")
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--iters", type=int, default=20)
    a = ap.parse_args()
    torch.backends.cudnn.benchmark = True
    dev = torch.device("cuda")
    with open(a.out, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["model", "batch", "fwd_ms", "bwd_ms", "step_ms", "iter_ms", "gpu_ms",
                    "syncs_per_iter"])
        for name in a.models.split(","):
            model, x, meta = torch_models.MODELS[name](batch=a.batch)
            model, x = model.to(dev), x.to(dev)
            opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
            phases = {"fwd": [], "bwd": [], "step": [], "iter": []}

            def step(record):
                t0 = time.perf_counter()
                opt.zero_grad(set_to_none=True)
                out = model(x)
                loss = torch.nn.functional.cross_entropy(out, torch.zeros(
                    out.shape[0], dtype=torch.long, device=dev))
                t1 = time.perf_counter()
                loss.backward()
                t2 = time.perf_counter()
                opt.step()
                t3 = time.perf_counter()
                if record:
                    for k, v in (("fwd", t1 - t0), ("bwd", t2 - t1), ("step", t3 - t2),
                                 ("iter", t3 - t0)):
                        phases[k].append(v * 1e3)
            for _ in range(8):
                step(False)
            torch.cuda.synchronize()
            ends = [torch.cuda.Event(enable_timing=True) for _ in range(a.iters + 1)]
            ends[0].record()
            for i in range(a.iters):
                step(True)
                ends[i + 1].record()
            torch.cuda.synchronize()
            gpu = statistics.median(ends[i].elapsed_time(ends[i + 1]) for i in range(a.iters))
            torch.cuda.set_sync_debug_mode("warn")
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                for _ in range(2):
                    step(False)
                torch.cuda.synchronize()
            torch.cuda.set_sync_debug_mode("default")
            row = [name, a.batch] + ["%.3f" % statistics.median(phases[k])
                                     for k in ("fwd", "bwd", "step", "iter")]
            row += ["%.3f" % gpu, "%.1f" % (len(caught) / 2)]
            w.writerow(row)
            f.flush()
            print(",".join(map(str, row)), flush=True)
            for c in caught[:5]:
                print("  sync: %s" % str(c.message)[:160], flush=True)
            del model, opt
            torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
