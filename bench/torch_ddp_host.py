#!/usr/bin/env python3
"""Measure DDP's host cost per gradient and per bucket, at world size 1.

A toy model of `--layers` Linear(W, W) layers (no bias: one parameter each)
at batch 1 keeps every kernel tiny, so an iteration's time is the host's:
zero_grad, forward, backward, SGD step. DDP over a one-rank process group
(NCCL on a GPU, gloo on CPU) adds the reducer's work per gradient (the
autograd hook, the copy into the bucket) and per bucket (the collective call
through the process group); no collective traffic. Each configuration runs
`--reps` times, interleaved, and reports the median of the per-rep medians:

  plain          the model alone
  ddp-one        DDP, bucket_cap_mb large enough for one bucket
  ddp-each       DDP, every parameter its own bucket (a cap below one
                 parameter's bytes; the first bucket too)

per-gradient host cost = (ddp-one - plain) / layers;
per-bucket host cost   = (ddp-each - ddp-one) / (its buckets - one), the
bucket counts read from DDP's own logging data.

--buffers N adds N BatchNorm1d(W, affine=False) modules that the forward
never calls: no parameter, three buffers each (running_mean, running_var:
W floats; num_batches_tracked: one int64), as ResNet-50's 53 BatchNorms hold
its 159. DDP broadcasts them before every forward (broadcast_buffers=True,
the default): _pre_forward's Python (named_buffers over the modules, the
version counters), per dtype bucket a flatten, the broadcast call and
BroadcastWork::finish's unflatten and one copy_ per buffer (comm.cpp). Then
ddp-one and ddp-each run with broadcast_buffers=False, and one more
configuration runs it:

  ddp-one-bcast  ddp-one with broadcast_buffers=True

per-buffer host cost   = (ddp-one-bcast - ddp-one) / (3 N buffers).

--view adds one more, as ddp-one otherwise:

  ddp-one-view   ddp-one with gradient_as_bucket_view=True

finalize_backward then skips copy_bucket_to_grad (the copy back per
gradient), while the hook still copies each fresh gradient into its bucket
view (mul_out: zero_grad(set_to_none=True) leaves no gradient that is the
view) and populate_bucket_views_out's as_strided per gradient still runs
(reducer.cpp). So

per-gradient host cost the view drops = (ddp-one - ddp-one-view) / layers,
what stays                            = (ddp-one-view - plain) / layers:

how the per-gradient cost splits between ddpsim's host_grad_copy (dropped
under --grad-as-bucket-view) and host_grad_hook (kept).

--layers L1,L2,... (2026-11-27, for bench/gpu_next10.sh) builds every
configuration at each layer count in one process and interleaves the reps
over all of them (rep 1 of every count and configuration, then rep 2, ...),
so that DDP's cost per iteration, whatever the gradients (_pre_forward's
and _post_forward's Python, the reducer's prepare_for_backward and
finalize_backward, the one bucket's call), separates from its cost per
gradient: per rep the paired difference ddp-one - plain at each count, a
least-squares line over the counts, intercept = per iteration, slope = per
gradient; the summary prints each count's paired medians, the line through
them and the median of the per-rep lines. With one layer count the run is
the one it was.
Writes one CSV row per configuration (and layer count).
"""

import argparse
import csv
import os
import statistics
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from host_pool import line_fit  # noqa: E402  (host_pool.py fits the same lines)


class WithBuffers(torch.nn.Module):
    """The Linear stack and `holders` BatchNorm1d modules that forward never calls."""

    def __init__(self, stack, holders):
        super().__init__()
        self.stack = stack
        self.holders = holders

    def forward(self, x):
        return self.stack(x)


def build(layers, width, dev, cap_mb, buffers=0, broadcast=True, view=False):
    torch.manual_seed(0)
    model = torch.nn.Sequential(*[torch.nn.Linear(width, width, bias=False)
                                  for _ in range(layers)])
    if buffers:
        model = WithBuffers(model, torch.nn.ModuleList(
            torch.nn.BatchNorm1d(width, affine=False) for _ in range(buffers)))
    model = model.to(dev)
    if cap_mb is not None:
        import torch.distributed as dist
        from torch.nn.parallel import DistributedDataParallel as DDP
        per_param_mb = width * width * 4 / 2**20
        if cap_mb == "each":
            # the first bucket has its own cap (dist._DEFAULT_FIRST_BUCKET_BYTES): lower it too
            dist._DEFAULT_FIRST_BUCKET_BYTES = 1
            cap = per_param_mb / 2
        else:
            dist._DEFAULT_FIRST_BUCKET_BYTES = 1024 * 1024
            cap = cap_mb
        # broadcast_buffers only when off: the default's runs stay as they were
        kw = {} if broadcast else dict(broadcast_buffers=False)
        if view:
            kw["gradient_as_bucket_view"] = True
        model = DDP(model, device_ids=[0] if dev.type == "cuda" else None, bucket_cap_mb=cap,
                    **kw)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3, momentum=0.9)
    x = torch.randn(1, width, device=dev)

    def step():
        opt.zero_grad(set_to_none=True)
        model(x).sum().backward()
        opt.step()
    return step, model


def measure(step, dev, iters):
    for _ in range(5):
        step()
    out = []
    for _ in range(iters):
        t0 = time.perf_counter()
        step()
        if dev.type == "cuda":
            torch.cuda.synchronize()
        out.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--layers", default="100", help="Linear layers (parameters), or a comma "
                    "list of counts built in one process, their reps interleaved")
    ap.add_argument("--width", type=int, default=256)
    ap.add_argument("--iters", type=int, default=50)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--buffers", type=int, default=0,
                    help="BatchNorm1d(W, affine=False) modules beside the stack (3 buffers each)")
    ap.add_argument("--view", action="store_true",
                    help="also ddp-one-view: ddp-one with gradient_as_bucket_view=True")
    a = ap.parse_args()
    try:
        counts = [int(v) for v in a.layers.split(",") if v]
    except ValueError:
        ap.error("--layers: %s: expected a count or a comma list of counts" % a.layers)
    if not counts or min(counts) < 1 or len(set(counts)) != len(counts):
        ap.error("--layers: %s: expected counts of 1 or more, each once" % a.layers)
    dev = torch.device(a.device)
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29534")
    import torch.distributed as dist
    dist.init_process_group("nccl" if dev.type == "cuda" else "gloo", rank=0, world_size=1)
    configs = [("plain", None), ("ddp-one", 1e6), ("ddp-each", "each")]
    if a.buffers:
        configs.append(("ddp-one-bcast", 1e6))
    if a.view:
        configs.append(("ddp-one-view", 1e6))
    built = {(n, name): build(n, a.width, dev, cap, a.buffers,
                              not a.buffers or name == "ddp-one-bcast", name == "ddp-one-view")
             for n in counts for name, cap in configs}
    times = {key: [] for key in built}
    for _ in range(a.reps):
        for key in built:
            times[key].append(measure(built[key][0], dev, a.iters))
    buckets = {}
    for key, (_, model) in built.items():  # the reducer's own count, after its rebuild
        data = model._get_ddp_logging_data() if hasattr(model, "_get_ddp_logging_data") else {}
        buckets[key] = int(data.get("num_buckets_reduced", 0))
    gpu = torch.cuda.get_device_name(0) if dev.type == "cuda" else "cpu"
    with open(a.out, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["config", "layers", "width", "buckets", "iter_ms_median", "reps_ms", "gpu",
                    "torch"])
        for n in counts:
            for name, _ in configs:
                w.writerow([name, n, a.width, buckets[n, name],
                            "%.4f" % statistics.median(times[n, name]),
                            " ".join("%.4f" % v for v in times[n, name]), gpu, torch.__version__])
    for n in counts:
        summarise(a, n, {name: statistics.median(times[n, name]) for name, _ in configs},
                  {name: buckets[n, name] for name, _ in configs}, gpu)
    if len(counts) > 1:
        per_iteration_line(counts, times)
    dist.destroy_process_group()


def summarise(a, layers, med, buckets, gpu):
    """One layer count's lines: per gradient and per bucket, per buffer and
    the view's split where they ran (from the configurations' medians)."""
    per_grad = (med["ddp-one"] - med["plain"]) / layers * 1e3
    per_bucket = ((med["ddp-each"] - med["ddp-one"]) /
                  max(1, buckets["ddp-each"] - buckets["ddp-one"]) * 1e3)
    print("plain %.3f ms, ddp-one %.3f ms, ddp-each %.3f ms: per gradient %.2f us, "
          "per bucket %.2f us (%d layers, %s)" % (med["plain"], med["ddp-one"], med["ddp-each"],
                                                  per_grad, per_bucket, layers, gpu))
    if a.buffers:
        print("ddp-one-bcast %.3f ms: per buffer %.2f us (%d buffers)" % (
            med["ddp-one-bcast"], (med["ddp-one-bcast"] - med["ddp-one"]) / (3 * a.buffers) * 1e3,
            3 * a.buffers))
    if a.view:
        print("ddp-one-view %.3f ms: per gradient %.2f us dropped by the view, %.2f us kept" % (
            med["ddp-one-view"], (med["ddp-one"] - med["ddp-one-view"]) / layers * 1e3,
            (med["ddp-one-view"] - med["plain"]) / layers * 1e3))


def per_iteration_line(counts, times):
    """DDP's cost (ddp-one - plain, paired per rep) against the layer count:
    each count's paired median, the line through those medians, and the
    median and range of the per-rep lines' intercepts and slopes (us)."""
    reps = len(times[counts[0], "plain"])
    diff = {n: [(times[n, "ddp-one"][r] - times[n, "plain"][r]) * 1e3 for r in range(reps)]
            for n in counts}
    for n in counts:
        print("ddp-one - plain at %d layers, paired per rep: %s us, median %.2f"
              % (n, " ".join("%.1f" % v for v in diff[n]), statistics.median(diff[n])))
    a, b = line_fit([(n, statistics.median(diff[n])) for n in counts])
    print("line over the paired medians: %.2f us an iteration + %.3f us a gradient" % (a, b))
    fits = [line_fit([(n, diff[n][r]) for n in counts]) for r in range(reps)]
    print("per-rep lines: intercept %s us (median %.2f), slope %s us (median %.3f)"
          % (" ".join("%.1f" % f[0] for f in fits), statistics.median(f[0] for f in fits),
             " ".join("%.2f" % f[1] for f in fits), statistics.median(f[1] for f in fits)))


if __name__ == "__main__":
    main()
