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

    host_dispatch = forward ms / kernel-launching dispatches,
    host_node = backward ms / nodes that launch a kernel

(kernel-launching dispatches: host_dispatches less the model file's
host_views, the dispatches that launch no kernel, which ddpsim charges
nothing, so that --calib-out's dispatch is the cost ddpsim charges per
remaining dispatch; a file without host_views: all of them. The CSV's
dispatches, nodes, dispatch_us and node_us columns stay per dispatch and
node, views included; the
loss's few ops and nodes are in the phases but not in the counts: a
slight overestimate). A launch queue that fills (more kernels than the
driver queues, about a thousand) or a synchronising op makes the host wait
even behind the spin; the phase's flag 0 then marks its time as not the
host's (the model file's host_syncs names the layers whose forward syncs:
BERT's mask check, `bool(padding_mask.all())`). Such a phase is not
measured: its per-unit cost is left empty in the CSV and the summary says
how many iterations were blocked (it does not print the spin's length as a
host cost). SE-ResNeXt-101 32x4d's fp32 b32 backward launches about 1358
kernels and memsets (ResNeXt-101's 947: the 2026-11-26 traces), more than the
queue holds, so it blocked in every iteration on 2026-11-27 (309.9 ms, the
300 ms spin plus the rest; bench/results/gpu-2026-11-27-h200/notes-host.md).
--pauses N measures such phases: N module hooks spread over the model's blocks
(forward: after the block; backward: when its output's gradient is ready)
drain the queue and queue a fresh spin, and that pause is subtracted from the
phase (`*_paused_ms`); each segment's spin must outlast it, else the phase's
flag is 0 as before. --count-launches profiles one more iteration and writes
each phase's launches (cudaLaunchKernel*, cudaMemsetAsync, cudaMemcpyAsync)
to the log. Each iteration also records bench/host_sched.py's deltas per
phase (its threads' CPU and run-queue time, the machine's steal): the host's
slow iterations say whether the core ran slower or was taken away (with
--pauses the CPU time includes the pauses' waits).
Under --amp the nodes
include the casts' (host_amp_nodes). --device cpu runs the same loop as a dry
run (CPU kernels run inline, so its times are not host costs).

--mode stream times the phases in consecutive training iterations instead:
no spin and no synchronize between them (after the warm-up, one synchronize
before the first timed iteration), the host clock read at each phase's
boundaries, as training's own loop runs and as bench/spin_bias.py's stream
mode does (which calls stream_rows here). Its time is the host's only where
the host is the slower: nothing then waits for the GPU. So each phase also
records a CUDA event when the host finishes it, and after the run that
event's GPU time against the host clock (both from one reference event
recorded on an idle GPU) gives `*_lag_ms`, how far the GPU still had to go
when the host finished; the phase counts as free (`*_free` 1: the GPU had
drained) where the lag is at most --drain-ms (default 1 ms: the phase's last
kernel may still run when the host is done; a lag beyond it means the GPU was
behind and a launch could have waited, if the queue filled). Phases not free
are left out as the spin mode leaves out blocked ones. Two weak points.
Keeping only the phases where the GPU had drained selects the iterations
where the host was slow: when GPU and host times are close (ResNet-50 b32 on
an H200: the GPU's ~17-18 ms against the host's ~20 ms an iteration), a
phase drains only when the host ran slower than usual, so the free phases'
median is biased up (the all-rows median, with the GPU-gated ones, is the
bound from the other side). And a synchronising op mid-phase (BERT's mask
check) waits for the GPU and ends the phase with a small lag, so the phase
still counts as free although part of its time was the GPU's; only the
first warm-up iteration runs under sync-debug ("warn"), which names such
ops but does not flag the timed phases. Not used by any
default: bench/results/gpu-2026-11-27g-h200/notes-host3.md (the spin's bias,
not shown on one lend) asks for it.

--calib-out FILE writes the medians as a calibration file's host section
(traces/calib_file.h: `dispatch`, `node`), which `ddpsim --calib FILE` applies
over the topology's host_dispatch and host_node; the model, batch, device,
torch version and date are its comments. Only phases measured unblocked are
written (a key whose phase blocked in every iteration is left out, said in a
comment); with none it writes nothing and exits 1. Under --amp the forward
also runs autocast's casts (host_cast's, which this does not separate), so
`dispatch` is left out there. On --device cpu no spin runs, so no phase is
unblocked: --cpu-dry-run writes the CPU's times anyway, marked as a dry run
in the file, to check the path into ddpsim.

    python3 bench/host_calibrate.py --model resnet50 --batch 32 --out host.csv
    python3 bench/host_calibrate.py --model resnet50 --batch 32 --calib-out host.yaml
    bin/ddpsim --topo TOPO --model resnet50 --calib host.yaml
"""

import argparse
import csv
import os
import platform
import statistics
import sys
import time

# torch first, so that a machine without it gets what to do (exit 2), not a
# traceback; the script's folder is sys.path[0]
from torch_required import import_torch
torch = import_torch(__file__)

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import torch_measure  # noqa: E402  (its model builder and losses)
from host_pool import (HOST_UNIT, model_total,  # noqa: E402  (the model files' counts, the unit)
                       model_view_nodes_total)
import host_sched  # noqa: E402
from kernel_timing import calib_gpu_line, cpu_model  # noqa: E402  (the CPU's name for the comments)


class Spin:
    """The spin kernel the host's phase runs behind, and the pauses that
    drain the launch queue and queue a fresh spin inside a phase (--pauses):
    `free` stays 1 while every spin outlasted the host's work behind it."""

    def __init__(self, cuda, cycles):
        self.cuda, self.cycles = cuda, cycles
        self.event = None
        self.free, self.paused_s, self.pauses = 1, 0.0, 0

    def start(self):
        """Before the phase: the queue empty, a spin queued, its end marked."""
        self.free, self.paused_s, self.pauses = 1, 0.0, 0
        if self.cuda:
            torch.cuda.synchronize()
            torch.cuda._sleep(self.cycles)
            self.event = torch.cuda.Event()
            self.event.record()

    def pause(self):
        """Inside the phase (a hook): was the spin still running? then wait
        for the queue to drain and queue another; the time is not the host's."""
        t0 = time.perf_counter()
        self.pauses += 1
        if self.cuda:
            if self.event.query():
                self.free = 0
            debug = torch.cuda.get_sync_debug_mode()  # our sync is not the model's
            torch.cuda.set_sync_debug_mode(0)
            torch.cuda.synchronize()
            torch.cuda.set_sync_debug_mode(debug)
            torch.cuda._sleep(self.cycles)
            self.event.record()
        self.paused_s += time.perf_counter() - t0

    def end(self):
        """After the phase: 1 where the GPU was still spinning throughout."""
        if self.cuda and self.event.query():
            self.free = 0
        return self.free


def pause_points(model, run_forward, count):
    """`count` modules spread over one forward's order: blocks (modules with
    children whose parent is a Sequential or ModuleList) with a tensor
    output, else leaf modules; their outputs are not modified in place later
    in torchvision's ResNets (a block's output is the next one's input)."""
    order, handles = [], []
    container = (torch.nn.Sequential, torch.nn.ModuleList)
    blocks = set()
    for parent in model.modules():
        if isinstance(parent, container):
            blocks.update(id(m) for m in parent.children() if any(True for _ in m.children()))

    def record(mod, _inp, out):
        if isinstance(out, torch.Tensor):
            order.append(mod)
    for mod in model.modules():
        handles.append(mod.register_forward_hook(record))
    with torch.no_grad():
        run_forward()
    for h in handles:
        h.remove()
    chosen = [m for m in order if id(m) in blocks] or [m for m in order if not any(True for _ in m.children())]
    if count <= 0 or not chosen:
        return []
    step = len(chosen) / (count + 1)
    return [chosen[int(step * (i + 1))] for i in range(min(count, len(chosen)))]


def launch_counts(fn):
    """fn's CUDA runtime calls that take a slot of the launch queue, from
    torch.profiler (the calls fn's threads made, backward's included)."""
    from torch.profiler import ProfilerActivity, profile
    names = ("cudaLaunchKernel", "cudaLaunchKernelExC", "cuLaunchKernel", "cuLaunchKernelEx",
             "cudaMemsetAsync", "cudaMemcpyAsync")
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        out = fn()
        torch.cuda.synchronize()
    return out, sum(e.count for e in prof.key_averages() if e.key in names)


def model_counts(name, amp):
    """Sums over the model file's layers: host_dispatches, host_views,
    host_nodes (with host_amp_nodes under autocast) and host_view_nodes (the
    nodes that launch nothing, uncharged as views are; under autocast
    host_view_nodes_amp where the file has them) (its casts'
    ToCopyBackward0 nodes run in the backward too; the casts' own dispatches
    are host_cast's)."""
    path = os.path.join(HERE, "..", "models", name + ".yaml")
    with open(path) as f:
        text = f.read()

    def total(key):
        return model_total(text, key)
    return (total("host_dispatches"), total("host_views"),
            total("host_nodes") + (total("host_amp_nodes") if amp else 0),
            model_view_nodes_total(text, amp))


def calib_host_keys(a, rows, dispatches, nodes, cuda, dry_run):
    """The host section's keys from the iterations' rows: {key: (us, note)}
    for each phase measured unblocked (all iterations under --cpu-dry-run),
    and {key: why} for those left out."""
    keys, left = {}, {}
    for key, phase, units, unit in (("dispatch", "f", dispatches, "dispatches"),
                                    ("node", "b", nodes, "nodes")):
        if key == "dispatch" and a.amp:
            left[key] = ("the forward under --amp also runs autocast's casts (host_cast's), "
                         "which this does not separate")
            continue
        if not units:
            left[key] = "the model file has no host_%s" % unit
            continue
        free = [r[phase]["ms"] for r in rows if r[phase]["free"] or dry_run]
        if not free:
            if not cuda:
                left[key] = ("no spin runs on the CPU, --cpu-dry-run writes its times as a dry "
                             "run")
            elif getattr(a, "mode", "spin") == "stream":
                left[key] = ("the GPU was still behind when the host finished the phase in "
                             "every iteration (lag over --drain-ms): the GPU is the slower there, "
                             "the spin mode measures it")
            else:
                left[key] = ("the spin ended before the host's phase in every iteration: the "
                             "host waited for the GPU, --pauses N splits the phase")
            continue
        med = statistics.median(free)
        keys[key] = (med * 1e3 / units, "median %.3f ms of %d %s iterations / %d %s"
                     % (med, len(free), "dry-run" if dry_run else "unblocked", units, unit))
    return keys, left


def write_calib(path, a, keys, left, dry_run, spin_ms, comments=()):
    """The calibration file (schema_version 1, host section; traces/
    calib_file.h), written to a temporary file beside it and renamed;
    `comments`: more comment lines after the iterations' (host_inproc.py's
    round or pooling)."""
    dev = torch.cuda.get_device_name(0) if a.device.startswith("cuda") else a.device
    stream = getattr(a, "mode", "spin") == "stream"
    lines = ["# bench/host_calibrate.py --calib-out: this host's time per dispatched aten op",
             "# (forward) and per autograd node (backward), %s"
             % ("in consecutive iterations (--mode stream), phases whose GPU had drained"
                if stream else "the GPU held behind a spin"),
             "# model: %s, batch %d, %s" % (a.model, a.batch, a.amp or "fp32"),
             "# device: %s; CPU: %s; host: %s" % (dev, cpu_model(), platform.node()),
             "# torch %s, python %s, %s" % (torch.__version__, platform.python_version(),
                                            time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))]
    if stream:
        lines.append("# iterations: %d after %d warm-up, no spin, no synchronize; drained: a lag "
                     "of at most %g ms" % (a.iters, a.warmup, a.drain_ms))
    else:
        lines.append("# iterations: %d after %d warm-up; a spin of %.0f ms per phase, %d pauses "
                     "per phase" % (a.iters, a.warmup, spin_ms, a.pauses))
    lines += ["# " + c for c in comments]
    if dry_run:
        lines.append("# DRY RUN on the CPU (--cpu-dry-run): kernels ran inline, so these "
                     "times are NOT host costs")
    for key, (_, note) in keys.items():
        lines.append("# %s: %s" % (key, note))
    for key, why in left.items():
        lines.append("# %s not written: %s" % (key, why))
    lines.append("schema_version: 1")
    if a.device.startswith("cuda") and not dry_run:
        lines.append(calib_gpu_line(dev))
    lines.append("host:")
    # the unit of dispatch and node: per dispatch and node that launch a kernel
    # (sim/train/calib.c refuses the two without it: files of an older unit)
    lines.append("  unit: %s" % HOST_UNIT)
    lines += ["  %s: %.3fus" % (key, us) for key, (us, _) in keys.items()]
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write("\n".join(lines) + "\n")
    os.replace(tmp, path)


def spin_for(cuda, sleep_ms, pauses):
    """The Spin the phases run behind and its length (ms): `sleep_ms`, or
    with pauses each segment's share of it (30 ms at least); cycles per ms
    at the SM clock the properties report (kHz), else 2 GHz."""
    khz = getattr(torch.cuda.get_device_properties(0), "clock_rate", 0) if cuda else 0
    spin_ms = max(30.0, sleep_ms / (pauses + 1)) if pauses > 0 else sleep_ms
    return Spin(cuda, int(spin_ms * (khz if khz else 2_000_000))), spin_ms


def make_forward(model, x, loss_of, amp, dev):
    """One forward with the loss (under autocast with `amp`): the phase
    host_dispatch is measured on."""
    def forward():
        if amp:
            dtype = torch.float16 if amp == "fp16" else torch.bfloat16
            with torch.autocast(dev.type, dtype=dtype):
                return loss_of(model(**x) if isinstance(x, dict) else model(x))
        return loss_of(model(**x) if isinstance(x, dict) else model(x))
    return forward


def phase_rows(forward, opt, spin, cuda, warmup, iters):
    """warmup + iters iterations, each phase (forward with the loss,
    backward, the optimizer step) timed behind a spin of its own; the timed
    iterations' rows {f, b, s: {ms, free, paused_ms, pauses, sched}}."""
    def timed(fn, debug_syncs):
        """fn's host time behind a spin of its own, less its pauses, whether
        the GPU was still spinning whenever the host finished a segment (each
        phase gets its own spin: a whole iteration's launches can fill the
        driver's queue), and the host_sched deltas over the phase."""
        spin.start()
        if debug_syncs:  # around fn alone: the explicit synchronize()s are ours
            torch.cuda.set_sync_debug_mode("warn")
        s0 = host_sched.snapshot()
        t0 = time.perf_counter()
        out = fn()
        t1 = time.perf_counter()
        s1 = host_sched.snapshot()
        if debug_syncs:
            torch.cuda.set_sync_debug_mode(0)
        free = spin.end() if cuda else 0
        if cuda:
            torch.cuda.synchronize()
        return out, dict(ms=(t1 - t0 - spin.paused_s) * 1e3, free=free,
                         paused_ms=spin.paused_s * 1e3, pauses=spin.pauses,
                         sched=host_sched.delta(s0, s1))

    rows = []
    for it in range(warmup + iters):
        # the first warm-up iteration names every op that synchronises the
        # host with the GPU (a sync inside a phase makes its time the spin's)
        debug = cuda and it == 0
        opt.zero_grad(set_to_none=True)
        loss, f = timed(forward, debug)
        _, b = timed(loss.backward, debug)
        _, s = timed(opt.step, debug)
        if it >= warmup:
            rows.append(dict(f=f, b=b, s=s))
    return rows


def stream_rows(forward, opt, cuda, warmup, iters, drain_ms, debug_first=True, sched=False):
    """warmup + iters consecutive training iterations with no spin and no
    synchronize, each phase (forward with the loss, backward, the step)
    timed by the host clock at its boundaries; the timed iterations' rows in
    phase_rows' shape, plus each phase's lag_ms: when the GPU reached an
    event recorded as the host finished the phase, less when the host
    finished it (the GPU's and the host's clocks tied by a reference event
    recorded on the idle GPU after a synchronize; the two events' pickup
    latencies cancel). free = 1 where the lag is at most drain_ms: the GPU
    had (about) drained, the host was the slower, no launch waited. On the
    CPU no event runs: free 0 and lag empty, as phase_rows' CPU rows.
    debug_first: the first iteration (a warm-up one) under the sync-debug
    mode, as phase_rows does, naming any op that synchronises. sched:
    host_sched's deltas per phase, as phase_rows records them; off by
    default, as reading every thread's /proc entries between the phases
    would give the GPU time to catch up that training does not (the rows'
    sched is then None, the CSV's cells empty)."""
    if cuda:
        torch.cuda.synchronize()
        ref = torch.cuda.Event(enable_timing=True)
        t_ref = time.perf_counter()
        ref.record()
    raw = []
    for it in range(warmup + iters):
        debug = cuda and debug_first and it == 0
        phases = {}
        opt.zero_grad(set_to_none=True)
        out = [None]
        for key, fn in (("f", forward), ("b", lambda: out[0].backward()), ("s", opt.step)):
            if debug:
                torch.cuda.set_sync_debug_mode("warn")
            s0 = host_sched.snapshot() if sched else None
            t0 = time.perf_counter()
            r = fn()
            t1 = time.perf_counter()
            s1 = host_sched.snapshot() if sched else None
            if debug:
                torch.cuda.set_sync_debug_mode(0)
            if key == "f":
                out[0] = r
            event = None
            if cuda:
                event = torch.cuda.Event(enable_timing=True)
                event.record()
            phases[key] = dict(ms=(t1 - t0) * 1e3, t1=t1, event=event, paused_ms=0.0, pauses=0,
                               sched=host_sched.delta(s0, s1) if sched else None)
        if it >= warmup:
            raw.append(phases)
    if cuda:
        torch.cuda.synchronize()
    rows = []
    for phases in raw:
        row = {}
        for key, ph in phases.items():
            lag = None
            if cuda:
                lag = ref.elapsed_time(ph["event"]) - (ph["t1"] - t_ref) * 1e3
            row[key] = dict(ms=ph["ms"], free=int(lag is not None and lag <= drain_ms),
                            lag_ms=lag, paused_ms=0.0, pauses=0, sched=ph["sched"])
        rows.append(row)
    return rows


def per_unit(phase, units):
    """A phase's time per dispatch or node (us), empty where it blocked: a
    blocked phase's time is the spin's, not the host's."""
    return "%.2f" % (phase["ms"] * 1e3 / units) if units and phase["free"] else ""


def write_rows(path, a, rows, dispatches, nodes, tensors):
    """The CSV of one row per iteration, written to a temporary file and
    renamed; `tensors`: the optimizer's parameter tensors (the step's units,
    bench/host_pool.py's host_step_param)."""
    cols = ["model", "batch", "amp", "device", "iter", "fwd_ms", "bwd_ms", "step_ms",
            "host_free", "fwd_free", "bwd_free", "step_free", "dispatches", "nodes", "dispatch_us",
            "node_us", "fwd_pauses", "bwd_pauses", "fwd_paused_ms", "bwd_paused_ms",
            "fwd_cpu_ms", "fwd_wait_ms", "bwd_cpu_ms", "bwd_wait_ms", "steal_ms", "cpus",
            "tensors"]
    lags = bool(rows) and "lag_ms" in rows[0]["f"]  # --mode stream's
    if lags:
        cols += ["fwd_lag_ms", "bwd_lag_ms", "step_lag_ms"]

    def lag(phase):
        return "" if phase["lag_ms"] is None else "%.3f" % phase["lag_ms"]
    tmp = path + ".tmp"
    with open(tmp, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(cols)
        for i, r in enumerate(rows):
            fs, bs, ss = r["f"]["sched"], r["b"]["sched"], r["s"]["sched"]
            if fs is None or bs is None or ss is None:  # stream_rows without sched
                cpu = ["", "", "", "", "", ""]
            else:
                cpu = ["%.3f" % fs["cpu_ms"], "%.3f" % fs["wait_ms"], "%.3f" % bs["cpu_ms"],
                       "%.3f" % bs["wait_ms"],
                       "%.1f" % (fs["steal_ms"] + bs["steal_ms"] + ss["steal_ms"]), bs["cpus"]]
            w.writerow([a.model, a.batch, a.amp or "", a.device, i, "%.3f" % r["f"]["ms"],
                        "%.3f" % r["b"]["ms"], "%.3f" % r["s"]["ms"],
                        r["f"]["free"] & r["b"]["free"],
                        r["f"]["free"], r["b"]["free"], r["s"]["free"],
                        dispatches, nodes, per_unit(r["f"], dispatches), per_unit(r["b"], nodes),
                        r["f"]["pauses"], r["b"]["pauses"], "%.3f" % r["f"]["paused_ms"], "%.3f" % r["b"]["paused_ms"]]
                       + cpu + [tensors] + ([lag(r["f"]), lag(r["b"]), lag(r["s"])] if lags else []))
    os.replace(tmp, path)


def print_phases(a, rows, dispatches, nodes, cuda, spin_ms):
    """The summary: each phase's median and how many iterations were
    unblocked, and the per-unit costs where any was."""
    stream = getattr(a, "mode", "spin") == "stream"
    if stream:
        print("%s batch %d%s on %s, consecutive iterations (--mode stream), drained: a lag of "
              "at most %g ms:" % (a.model, a.batch, " " + a.amp if a.amp else "", a.device,
                                  a.drain_ms))
    else:
        print("%s batch %d%s on %s, %d pauses per phase, spin %.0f ms:"
              % (a.model, a.batch, " " + a.amp if a.amp else "", a.device, a.pauses, spin_ms))
    for key, name, units, unit in (("f", "forward", dispatches, "host_dispatch"),
                                   ("b", "backward", nodes, "host_node")):
        ms = [r[key]["ms"] for r in rows]
        free = [r[key]["ms"] for r in rows if r[key]["free"]]
        if stream:
            lags = [r[key]["lag_ms"] for r in rows if r[key]["lag_ms"] is not None]
            print("  %s: median %.3f ms over %d iterations (min %.3f, max %.3f); the GPU drained "
                  "when the host finished in %d%s"
                  % (name, statistics.median(ms), len(ms), min(ms), max(ms), len(free),
                     " (lag median %.3f ms, max %.3f)" % (statistics.median(lags), max(lags))
                     if lags else ""))
            if units and free:
                print("  %s: %.1fus  # %d %s, median of the %d drained iterations"
                      % (unit, statistics.median(free) * 1e3 / units, units,
                         "kernel-launching dispatches" if key == "f" else "nodes", len(free)))
            elif units:
                print("  %s: not measured: %s" % (unit, "the GPU was still behind when the host "
                                                  "finished in every iteration (the GPU is the "
                                                  "slower in this phase: the spin mode measures "
                                                  "it)" if cuda else "on the CPU no event runs"))
            continue
        print("  %s: median %.3f ms over %d iterations (min %.3f, max %.3f); the GPU still "
              "spinning throughout in %d"
              % (name, statistics.median(ms), len(ms), min(ms), max(ms), len(free)))
        if not units:
            continue
        if free:
            print("  %s: %.1fus  # %d %s, median of the %d unblocked iterations"
                  % (unit, statistics.median(free) * 1e3 / units, units,
                     "kernel-launching dispatches" if key == "f" else "nodes", len(free)))
        else:
            print("  %s: not measured: the spin ended before the host's %s in every iteration "
                  "(the host waited for the GPU: a full launch queue or a synchronising op; "
                  "its %.1f ms are the spin's%s); --pauses N splits the phase"
                  % (unit, name, statistics.median(ms), "" if cuda else "; on the CPU no spin runs"))


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
    ap.add_argument("--pauses", type=int, default=0,
                    help="hooks per phase that drain the launch queue behind a fresh spin, "
                    "the pause not counted (phases launching more than the queue holds)")
    ap.add_argument("--mode", choices=("spin", "stream"), default="spin",
                    help="spin: each phase behind a spin kernel (the default, the pooled "
                    "constants' way); stream: consecutive iterations, no spin, phases kept where "
                    "the GPU had drained when the host finished")
    ap.add_argument("--drain-ms", type=float, default=1.0,
                    help="--mode stream: the GPU's largest lag behind the host's end of a phase "
                    "that still counts as drained")
    ap.add_argument("--count-launches", action="store_true",
                    help="one more iteration under torch.profiler: each phase's launches")
    ap.add_argument("--out", help="CSV, one row per iteration")
    ap.add_argument("--calib-out", help="a calibration file with the host section "
                    "(dispatch, node) for ddpsim --calib; only phases measured unblocked")
    ap.add_argument("--cpu-dry-run", action="store_true",
                    help="with --device cpu and --calib-out: write the CPU's times anyway "
                    "(marked in the file; not host costs), to check the file's path")
    a = ap.parse_args()
    if not a.out and not a.calib_out:
        ap.error("give --out CSV, --calib-out FILE or both")
    if a.cpu_dry_run and (a.device != "cpu" or not a.calib_out):
        ap.error("--cpu-dry-run is for --device cpu with --calib-out")
    if a.mode == "stream" and a.pauses:
        ap.error("--pauses splits a spin; --mode stream has none")
    if a.drain_ms < 0:
        ap.error("--drain-ms must be 0 or more")
    dev = torch.device(a.device)
    torch.backends.cudnn.benchmark = True
    model, x, meta = torch_measure.torch_models.MODELS[a.model](batch=a.batch)
    model = model.to(dev)
    x = torch_measure.to_device(x, dev)
    loss_of = torch_measure.make_loss(meta["loss"], x)
    opt = (torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
           if meta["optimizer"] == "sgd" else torch.optim.Adam(model.parameters(), lr=1e-5))
    dispatches, views, nodes, view_nodes = model_counts(a.model, a.amp)
    kernel_dispatches, charged_nodes = dispatches - views, nodes - view_nodes
    cuda = dev.type == "cuda"
    spin, spin_ms = spin_for(cuda, a.sleep_ms, a.pauses)
    forward = make_forward(model, x, loss_of, a.amp, dev)

    points = pause_points(model, forward, a.pauses) if a.pauses > 0 else []

    def at_point(_mod, _inp, out):
        spin.pause()
        if isinstance(out, torch.Tensor) and out.requires_grad:
            out.register_hook(lambda g: spin.pause())
    for mod in points:
        mod.register_forward_hook(at_point)

    if a.mode == "stream":
        rows = stream_rows(forward, opt, cuda, a.warmup, a.iters, a.drain_ms)
    else:
        rows = phase_rows(forward, opt, spin, cuda, a.warmup, a.iters)
    if a.out:
        tensors = sum(len(g["params"]) for g in opt.param_groups)
        write_rows(a.out, a, rows, dispatches, nodes, tensors)
    print_phases(a, rows, kernel_dispatches, charged_nodes, cuda, spin_ms)
    if a.count_launches and cuda:
        opt.zero_grad(set_to_none=True)
        loss, nf = launch_counts(forward)
        _, nb = launch_counts(loss.backward)
        _, ns = launch_counts(opt.step)
        print("  launches (kernels, memsets, copies) in one profiled iteration: forward %d, "
              "backward %d, step %d%s" % (nf, nb, ns, " (pause hooks' spins included)" if points else ""))
    if a.calib_out:
        keys, left = calib_host_keys(a, rows, kernel_dispatches, charged_nodes, cuda,
                                      a.cpu_dry_run)
        if not keys:
            sys.exit("host_calibrate.py: %s not written: no phase measured unblocked (%s)"
                     % (a.calib_out, "; ".join("%s: %s" % kv for kv in left.items())))
        write_calib(a.calib_out, a, keys, left, a.cpu_dry_run, spin_ms)
        print("  wrote %s (%s); ddpsim --calib %s applies it"
              % (a.calib_out, ", ".join("%s %.1fus" % (k, v[0]) for k, v in keys.items()),
                 a.calib_out))


if __name__ == "__main__":
    main()
