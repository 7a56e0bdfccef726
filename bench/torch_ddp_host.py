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

--calib-out FILE (2026-11-28) writes a calibration file (schema_version 1,
its host section: traces/calib_file.h; ddpsim --calib FILE) with DDP's host
costs on this host, in place of the topology's defaults:

  ddp_grad    per gradient (host_grad_hook + host_grad_copy, which ddpsim
              splits as its defaults: the copy's launch 5.8 us, the hook the
              rest): with several layer counts
              the median of the per-rep lines' slopes (DDP's per-iteration
              cost in their intercepts); with one, the median of the per-rep
              paired (ddp-one - plain) / layers, which also holds that
              per-iteration cost spread over the gradients (an upper bound)
  ddp_bucket  per bucket call (host_collective): per rep the paired
              ddp-each - ddp-one at each count against its extra buckets,
              the median of the per-rep lines' slopes where the counts give
              two or more bucket differences, else of the per-rep
              differences over the buckets
  ddp_buffer  with --buffers N, per buffer (host_buffer): the median over the
              reps (and counts) of the paired ddp-one-bcast - ddp-one, less
              what ddpsim charges the buffers' two dtype buckets (float32,
              int64), 2 (copy + ddp_bucket), copy = min(5.8 us, ddp_grad)
              as ddpsim splits ddp_grad (sim/train/calib.c; the topology's
              defaults, 5.8 and 43.1 us, for a key not written;
              sim/train/ddp_buffers.c), over the 3 N buffers
  ddp_iter    per synchronising iteration (host_ddp_iter): with several layer
              counts, the median of the per-rep lines' intercepts less
              ddp_bucket (ddp-one's one call; the default 43.1 us for a key
              not written); with one layer count 0 us, written (ddp_grad
              then holds it, spread over the gradients)

A key whose fit is not above 0 is not written (the header says why); the
header says the command, the host, the torch version and the numbers used.
--from-csv CSV refits an earlier run's CSV (its reps_ms) without measuring:
the summary lines and --calib-out as that run would have printed and written
them (--buffers N then says how many BatchNorm1d it ran: the CSV does not).
On the CPU (--device cpu, DDP over gloo) the file is a dry run: its kernels
run inline, so its times are not DDP's host costs, and its header says so.
"""

import argparse
import csv
import os
import platform
import shlex
import statistics
import sys
import time

# torch first, so that a machine without it gets what to do (exit 2), not a
# traceback; the script's folder is sys.path[0]
from torch_required import import_torch
torch = import_torch(__file__)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from csv_input import DDP_HOST_COLUMNS, InputError, ddp_host_rows  # noqa: E402
from host_pool import line_fit  # noqa: E402  (host_pool.py fits the same lines)
from kernel_timing import calib_gpu_line, cpu_model  # noqa: E402

# ddpsim's defaults of host_grad_copy and host_collective (us; sim/net/
# topo_compute.c): ddpsim gives ddp_grad's copy part min(5.8, ddp_grad)
# (sim/train/calib.c), and the buffers' dtype buckets pay a copy and a call
GRAD_COPY_US, BUCKET_CALL_US = 5.8, 43.1
# the --buffers toy's broadcast buckets: BatchNorm1d's float32 running stats
# and its int64 num_batches_tracked (comm.cpp buckets by dtype)
BUFFER_DTYPE_BUCKETS = 2


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


def bad_input(msg):
    """The project's bad-input rule: the message on stderr, exit status 2."""
    print(msg, file=sys.stderr)
    sys.exit(2)


def read_csv(path, a):
    """An earlier run's CSV (--from-csv): (counts, configs, times, buckets,
    gpu, torch version), as main's measuring part would have them; exits
    with the file and row on a bad one."""
    counts, names, times, buckets, gpus, torches, widths = [], [], {}, {}, set(), set(), set()
    try:
        rows = ddp_host_rows(path)
    except InputError as e:
        bad_input("torch_ddp_host.py: --from-csv: %s" % e)
    for row in rows:
        n, name = row["layers"], row["config"]
        buckets[n, name] = row["buckets"]
        widths.add(row["width"])
        if n not in counts:
            counts.append(n)
        if name not in names:
            names.append(name)
        times[n, name] = row["reps_ms"]
        gpus.add(row["gpu"])
        torches.add(row["torch"])
    for need in ("plain", "ddp-one", "ddp-each"):
        if need not in names:
            bad_input("torch_ddp_host.py: --from-csv %s: no %s rows" % (path, need))
    if any((n, name) not in times for n in counts for name in names):
        bad_input("torch_ddp_host.py: --from-csv %s: expected every configuration at every "
                 "layer count" % path)
    if len(set(len(v) for v in times.values())) != 1:
        bad_input("torch_ddp_host.py: --from-csv %s: expected the same reps in every row "
                 "(they are paired rep by rep)" % path)
    if "ddp-one-bcast" in names and not a.buffers:
        bad_input("torch_ddp_host.py: --from-csv %s: its ddp-one-bcast rows need --buffers N "
                 "(that run's BatchNorm1d count: the CSV does not say)" % path)
    if a.buffers and "ddp-one-bcast" not in names:
        bad_input("torch_ddp_host.py: --from-csv %s: --buffers given, but no ddp-one-bcast rows"
                 % path)
    a.view = "ddp-one-view" in names
    a.width = widths.pop() if len(widths) == 1 else None
    return (counts, [(name, None) for name in names], times, buckets, " / ".join(sorted(gpus)),
            " / ".join(sorted(torches)))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", help="the CSV to write (required unless --from-csv)")
    ap.add_argument("--calib-out", metavar="FILE",
                    help="write a calibration file (host: ddp_grad, ddp_bucket, ddp_buffer) "
                    "from the fit, for ddpsim --calib FILE")
    ap.add_argument("--from-csv", metavar="CSV",
                    help="refit an earlier run's CSV instead of measuring (--buffers N: its "
                    "BatchNorm1d count when it ran ddp-one-bcast)")
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
    if a.buffers < 0:
        ap.error("--buffers: expected 0 or more, got %d" % a.buffers)
    if a.from_csv:
        counts, configs, times, buckets, gpu, version = read_csv(a.from_csv, a)
        report(a, counts, configs, times, buckets, gpu, version)
        return
    if not a.out:
        ap.error("--out is required unless --from-csv")
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
        w.writerow(DDP_HOST_COLUMNS)
        for n in counts:
            for name, _ in configs:
                w.writerow([name, n, a.width, buckets[n, name],
                            "%.4f" % statistics.median(times[n, name]),
                            " ".join("%.4f" % v for v in times[n, name]), gpu, torch.__version__])
    report(a, counts, configs, times, buckets, gpu, torch.__version__)
    dist.destroy_process_group()


def report(a, counts, configs, times, buckets, gpu, version):
    """The summary lines and, with --calib-out, the calibration file."""
    for n in counts:
        summarise(a, n, {name: statistics.median(times[n, name]) for name, _ in configs},
                  {name: buckets[n, name] for name, _ in configs}, gpu)
    if len(counts) > 1:
        per_iteration_line(counts, times)
    if a.calib_out:
        keys, notes, left = calib_fit(a, counts, times, buckets)
        write_calib(a, keys, notes, left, gpu, version)
        print("wrote %s: %s" % (a.calib_out, ", ".join("%s %.3fus" % kv for kv in keys.items())
                                if keys else "no key (see its header)"))


def median_slope(points_per_rep):
    """The per-rep lines' slopes (us) over [[(x, y), ...] per rep] and their
    median; None where the points have fewer than two distinct x."""
    slopes = [line_fit(pts)[1] for pts in points_per_rep]
    if any(b is None for b in slopes):
        return None, None
    return slopes, statistics.median(slopes)


def calib_fit(a, counts, times, buckets):
    """The host section's keys from the reps: ({key: us}, [header lines
    with the numbers used], {key: why not written})."""
    reps = len(times[counts[0], "plain"])
    keys, notes, left = {}, [], {}
    ms_us = 1e3
    # per gradient: ddp-one - plain, paired per rep
    diff = {n: [(times[n, "ddp-one"][r] - times[n, "plain"][r]) * ms_us for r in range(reps)]
            for n in counts}
    for n in counts:
        notes.append("ddp-one - plain at %d layers, paired per rep (us): %s; median %.2f"
                     % (n, " ".join("%.1f" % v for v in diff[n]), statistics.median(diff[n])))
    if len(counts) > 1:
        slopes, grad = median_slope([[(n, diff[n][r]) for n in counts] for r in range(reps)])
        notes.append("ddp_grad: the median of the per-rep lines' slopes over %s layers: %s us "
                     "-> %.3f us" % (",".join(map(str, counts)),
                                     " ".join("%.2f" % v for v in slopes), grad))
    else:
        n = counts[0]
        grad = statistics.median(v / n for v in diff[n])
        notes.append("ddp_grad: one layer count (%d), the median of the per-rep (ddp-one - "
                     "plain) / layers: %.3f us, DDP's per-iteration cost spread over the "
                     "gradients too (an upper bound)" % (n, grad))
    if grad > 0:
        keys["ddp_grad"] = grad
    else:
        left["ddp_grad"] = "the fit is %.3f us, not above 0" % grad
    # per bucket: ddp-each - ddp-one, paired per rep, against the extra buckets
    extra = {n: buckets[n, "ddp-each"] - buckets[n, "ddp-one"] for n in counts}
    each = {n: [(times[n, "ddp-each"][r] - times[n, "ddp-one"][r]) * ms_us for r in range(reps)]
            for n in counts}
    for n in counts:
        notes.append("ddp-each - ddp-one at %d layers (%d - %d buckets), paired per rep (us): "
                     "%s; median %.2f" % (n, buckets[n, "ddp-each"], buckets[n, "ddp-one"],
                                          " ".join("%.1f" % v for v in each[n]),
                                          statistics.median(each[n])))
    usable = [n for n in counts if extra[n] >= 0]
    bucket = None
    if len(set(extra[n] for n in usable)) > 1:
        slopes, bucket = median_slope([[(extra[n], each[n][r]) for n in usable]
                                       for r in range(reps)])
        notes.append("ddp_bucket: the median of the per-rep lines' slopes over %s extra "
                     "buckets: %s us -> %.3f us"
                     % (",".join(str(extra[n]) for n in usable),
                        " ".join("%.2f" % v for v in slopes), bucket))
    elif usable and extra[usable[0]] > 0:
        n = usable[0]
        bucket = statistics.median(v / extra[n] for v in each[n])
        notes.append("ddp_bucket: one bucket difference (%d at %d layers), the median of the "
                     "per-rep differences over it: %.3f us" % (extra[n], n, bucket))
    if bucket is None:
        left["ddp_bucket"] = "no layer count gave ddp-each more buckets than ddp-one"
    elif bucket > 0:
        keys["ddp_bucket"] = bucket
    else:
        left["ddp_bucket"] = "the fit is %.3f us, not above 0" % bucket
    # per iteration: the per-rep lines' intercepts (ddp-one's one bucket
    # call in them, less ddp_bucket as ddpsim charges it)
    if len(counts) > 1:
        icepts = [line_fit([(n, diff[n][r]) for n in counts])[0] for r in range(reps)]
        call = keys.get("ddp_bucket", BUCKET_CALL_US)
        it = statistics.median(icepts) - call
        notes.append("ddp_iter: the median of the per-rep lines' intercepts over %s layers: "
                     "%s us -> %.2f, less one bucket call %.3f = %.3f us"
                     % (",".join(map(str, counts)), " ".join("%.1f" % v for v in icepts),
                        statistics.median(icepts), call, it))
        if it > 0:
            keys["ddp_iter"] = it
        else:
            left["ddp_iter"] = "the fit is %.3f us, not above 0" % it
    else:
        # ddp_grad is then (ddp-one - plain) / layers, the per-iteration cost
        # spread over the gradients: ddpsim's default host_ddp_iter on top of
        # it would charge that cost twice
        keys["ddp_iter"] = 0.0
        notes.append("ddp_iter: 0 us: with one layer count ddp_grad holds the per-iteration "
                     "cost, spread over the gradients (no line to take an intercept from)")
    # per buffer: ddp-one-bcast - ddp-one, paired per rep, less the two
    # dtype buckets' copy launch and call as ddpsim charges them
    if a.buffers:
        bc = [(times[n, "ddp-one-bcast"][r] - times[n, "ddp-one"][r]) * ms_us
              for n in counts for r in range(reps)]
        med = statistics.median(bc)
        copy = min(GRAD_COPY_US, keys.get("ddp_grad", GRAD_COPY_US))
        call = keys.get("ddp_bucket", BUCKET_CALL_US)
        nbuf = 3 * a.buffers
        buf = (med - BUFFER_DTYPE_BUCKETS * (copy + call)) / nbuf
        notes.append("ddp-one-bcast - ddp-one, paired per rep%s (us): %s; median %.2f"
                     % (" and count" if len(counts) > 1 else "",
                        " ".join("%.1f" % v for v in bc), med))
        notes.append("ddp_buffer: (%.2f - %d x (copy %.3f + ddp_bucket %.3f)) / %d buffers "
                     "= %.3f us" % (med, BUFFER_DTYPE_BUCKETS, copy, call, nbuf, buf))
        if buf > 0:
            keys["ddp_buffer"] = buf
        else:
            left["ddp_buffer"] = "the fit is %.3f us, not above 0" % buf
    return keys, notes, left


def write_calib(a, keys, notes, left, gpu, version):
    """The calibration file (schema_version 1, host section; traces/
    calib_file.h), written to a temporary file beside it and renamed."""
    cmd = " ".join(shlex.quote(v) for v in ["bench/torch_ddp_host.py"] + sys.argv[1:])
    lines = ["# %s" % cmd,
             "# bench/torch_ddp_host.py --calib-out: DDP's host costs at world size 1 "
             "(a stack of Linear layers at batch 1, host-bound): per gradient, per bucket call"
             + (", per broadcast buffer" if a.buffers else "")]
    if a.from_csv:
        lines += ["# refit at %s from %s (its rows: device %s, torch %s; the measuring "
                  "host's name and CPU are not in the CSV)"
                  % (time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), a.from_csv, gpu,
                     version)]
    else:
        lines += ["# device: %s; CPU: %s; host: %s" % (gpu, cpu_model(), platform.node()),
                  "# torch %s, python %s, %s" % (version, platform.python_version(),
                                                 time.strftime("%Y-%m-%dT%H:%M:%SZ",
                                                               time.gmtime()))]
    if gpu == "cpu":
        lines.append("# DRY RUN on the CPU (DDP over gloo): kernels ran inline, so these times "
                     "are NOT DDP's host costs")
    lines += ["# " + v for v in notes]
    for key, why in left.items():
        lines.append("# %s not written: %s" % (key, why))
    lines.append("schema_version: 1")
    if gpu and gpu != "cpu":
        lines.append(calib_gpu_line(gpu))
    if keys:
        lines.append("host:")
        lines += ["  %s: %.3fus" % kv for kv in keys.items()]
    tmp = a.calib_out + ".tmp"
    with open(tmp, "w") as f:
        f.write("\n".join(lines) + "\n")
    os.replace(tmp, a.calib_out)


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
