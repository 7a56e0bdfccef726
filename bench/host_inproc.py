#!/usr/bin/env python3
"""Same-process host calibration: does a calibration taken in the training
run's own process predict that run?

Why: a host-bound single-GPU run (ResNet-50 fp32 batch 32 on an H200) is
ddpsim's largest error, and the host's per-op costs (`host_dispatch`,
`host_node`) vary 1.2-1.65x between fresh processes on the same lent machine
(bench/results/gpu-2026-11-27c-h200/notes-host2.md), so bench/host_calibrate.py
in one process and bench/torch_measure.py in another do not pin the same host.
Here one process repeats `--rounds` times:

  (a) host_calibrate's phase measurement (its functions: each phase of an
      iteration, forward with the loss, backward, the step, timed on the host
      behind a spin kernel; dispatch_us = forward / the model file's
      kernel-launching dispatches, node_us = backward / its nodes that launch a
      kernel, the units ddpsim charges, medians over the iterations whose phase
      finished before the spin did);
  (b) torch_measure's timings (its functions: gpu_ms the median gap between
      CUDA events of consecutive free-running iterations, sync_ms the median
      synchronised iteration) of each config, in an order rotated per round:

        plain              no DDP
        ddp                DDP, bucket_cap_mb 25 and the other defaults
        ddp-nobcast        DDP, broadcast_buffers=False
        ddp-view           DDP, gradient_as_bucket_view=True
        ddp-nobcast-view   DDP, both
        ddp-cap1           DDP, bucket_cap_mb 1 (not in the default --configs)
        ddp-cap100         DDP, bucket_cap_mb 100 (not in the default --configs)

DDP runs over a one-rank process group (NCCL on cuda, gloo on cpu): the
difference to plain is the reducer's cost with no traffic; real DDP at world
size 1 costs ~12 ms more per ResNet-50 b32 iteration than plain on an H200,
ddpsim predicts +2.7 ms (bench/results/gpu-2026-11-26-h200/README.md), and
the ablations say which of DDP's per-iteration work that is. Each config's
model is built once (torch.manual_seed(0) before each) and warmed up
(--warmup iterations) before the first round; the calibration runs on the
plain config's model (built for it where --configs leaves plain out).

--out CSV: one row per (round, config) with kind "train" (gpu_ms, gpu_ms_min,
sync_ms, host_ms: the host's enqueue time per free-running iteration) and one
per round with kind "calib" (dispatch_us, node_us, the medians of the
forward's and backward's times, and fwd_free / bwd_free: how many of the
`calib_iters` iterations each phase ran unblocked). --calib-out PREFIX writes
PREFIX-rN.yaml per round (host_calibrate's calibration file, its writer) with
PREFIX-rN.csv (its per-iteration CSV), and PREFIX-pooled.yaml over all
rounds' iterations.

--calib-modes spin,stream adds host_calibrate's --mode stream beside the spin
(2026-11-27, for bench/gpu_next10.sh: does the stream mode predict the
free-running training better?): per round each mode's calibration, in an
order rotated per round, on the same plain model, then the configs. The
stream calibration is `--stream-iters` consecutive iterations (after
--calib-warmup) with no spin and no synchronize, timed at the phases'
boundaries (host_calibrate.stream_rows); a phase counts (`fwd_free`,
`bwd_free`) where the GPU had drained, a lag of at most --drain-ms, when
the host finished it. Its rows carry calib_mode "stream" and its files are
PREFIX-stream-rN.yaml/.csv and PREFIX-stream-pooled.yaml (the spin's keep
their names). The default, spin alone, runs and writes what it did before
(the CSV gains the calib_mode column).

--device cpu is a dry run (batch 2 and a couple of iterations unless given):
no spin runs on the CPU, so every phase counts as blocked and the files are
written as host_calibrate's --cpu-dry-run writes them, marked DRY RUN.

    python3 bench/host_inproc.py --model resnet50 --batch 32 --rounds 3 \\
        --out inproc.csv --calib-out inproc
    nice /root/venv-torch/bin/python bench/host_inproc.py --device cpu --rounds 2 --out /tmp/x.csv
"""

import argparse
import csv
import os
import statistics
import sys
import time

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import host_calibrate  # noqa: E402  (the phase measurement and the calibration file)
import torch_measure  # noqa: E402  (the models, the DDP wrapper and the timing)

# config name -> torch_measure run keys (ddp_cap 25 MB: DDP's default bucket_cap_mb)
CONFIGS = {
    "plain": {},
    "ddp": dict(ddp_cap=25),
    "ddp-nobcast": dict(ddp_cap=25, broadcast_buffers=False),
    "ddp-view": dict(ddp_cap=25, grad_view=True),
    "ddp-nobcast-view": dict(ddp_cap=25, broadcast_buffers=False, grad_view=True),
    # the bucket-size pairs (validation/ddp_scaling.csv's torch-h200-* rows), timed beside
    # the 25 MB default in one process, rotated per round: not in the default --configs
    "ddp-cap1": dict(ddp_cap=1),
    "ddp-cap100": dict(ddp_cap=100),
}
DEFAULT_CONFIGS = ("plain", "ddp", "ddp-nobcast", "ddp-view", "ddp-nobcast-view")

CALIB_MODES = ("spin", "stream")  # host_calibrate's --mode

COLUMNS = ["round", "kind", "config", "position", "model", "batch", "amp", "device", "iters",
           "gpu_ms", "gpu_ms_min", "sync_ms", "host_ms",
           "dispatch_us", "node_us", "fwd_ms", "bwd_ms", "fwd_free", "bwd_free", "calib_iters",
           "calib_mode", "gpu", "torch", "nccl", "seconds"]


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default="resnet50", help="a name of tools/torch_models.py "
                    "with a models/NAME.yaml (its host_dispatches and host_nodes)")
    ap.add_argument("--batch", type=int, help="default 32 (2 on --device cpu)")
    ap.add_argument("--amp", choices=("fp16", "bf16"))
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--iters", type=int, help="timed training iterations per config and round "
                    "(default 20, 2 on cpu)")
    ap.add_argument("--warmup", type=int, help="training iterations per config before the "
                    "first round (default 8, 1 on cpu)")
    ap.add_argument("--calib-iters", type=int, help="calibration iterations per round "
                    "(default 10, 2 on cpu)")
    ap.add_argument("--calib-warmup", type=int, help="calibration warm-up iterations per round "
                    "(default 2, 0 on cpu)")
    ap.add_argument("--sleep-ms", type=float, default=100.0,
                    help="the spin per calibration phase (host_calibrate's default is 300 ms; a "
                    "ResNet-50 b32 phase takes ~10-30 ms of host time on the H200's host)")
    ap.add_argument("--calib-modes", default="spin",
                    help="comma list of host_calibrate's modes to calibrate in each round, in an "
                    "order rotated per round: spin (each phase behind a spin), stream "
                    "(consecutive iterations, phases kept where the GPU had drained)")
    ap.add_argument("--stream-iters", type=int, help="--calib-modes stream: timed consecutive "
                    "iterations per round (default --iters)")
    ap.add_argument("--drain-ms", type=float, default=1.0,
                    help="--calib-modes stream: the GPU's largest lag behind the host's end of "
                    "a phase that still counts as drained (host_calibrate's --drain-ms)")
    ap.add_argument("--configs", default=",".join(DEFAULT_CONFIGS),
                    help="comma list of: " + ", ".join(CONFIGS))
    ap.add_argument("--out", required=True, help="CSV, one row per (round, config) and per "
                    "(round, calibration)")
    ap.add_argument("--calib-out", help="PREFIX: PREFIX-rN.yaml and PREFIX-rN.csv per round, "
                    "PREFIX-pooled.yaml over the rounds")
    a = ap.parse_args(argv)
    configs = [c for c in a.configs.split(",") if c]
    bad = [c for c in configs if c not in CONFIGS]
    if bad or not configs:
        ap.error("--configs: unknown config %s (expected a comma list of %s)"
                 % (", ".join(map(repr, bad)) or "(none given)", ", ".join(CONFIGS)))
    if len(set(configs)) != len(configs):
        ap.error("--configs: %s names a config twice" % a.configs)
    a.configs = configs
    modes = [m for m in a.calib_modes.split(",") if m]
    bad = [m for m in modes if m not in CALIB_MODES]
    if bad or not modes or len(set(modes)) != len(modes):
        ap.error("--calib-modes: %s: expected a comma list of %s, each once"
                 % (a.calib_modes, ", ".join(CALIB_MODES)))
    a.calib_modes = modes
    if a.drain_ms < 0:
        ap.error("--drain-ms: must be 0 or more")
    if a.model not in torch_measure.torch_models.MODELS:
        ap.error("--model: unknown model %r (tools/torch_models.py has %s)"
                 % (a.model, ", ".join(torch_measure.torch_models.MODELS)))
    if not os.path.exists(os.path.join(HERE, "..", "models", a.model + ".yaml")):
        ap.error("--model: %s has no models/%s.yaml (its host_dispatches and host_nodes)"
                 % (a.model, a.model))
    cpu = a.device == "cpu"
    for key, gpu_default, cpu_default in (("batch", 32, 2), ("iters", 20, 2), ("warmup", 8, 1),
                                          ("calib_iters", 10, 2), ("calib_warmup", 2, 0)):
        if getattr(a, key) is None:
            setattr(a, key, cpu_default if cpu else gpu_default)
    if a.stream_iters is None:
        a.stream_iters = a.iters
    for key in ("rounds", "iters", "calib_iters", "stream_iters", "batch"):
        if getattr(a, key) < 1:
            ap.error("--%s: must be 1 or more" % key.replace("_", "-"))
    if a.warmup < 0 or a.calib_warmup < 0:
        ap.error("--warmup, --calib-warmup: must be 0 or more")
    return a


def calib_args(a, iters, warmup, mode="spin"):
    """The fields host_calibrate's calib_host_keys, write_calib and print_phases read."""
    return argparse.Namespace(model=a.model, batch=a.batch, amp=a.amp, device=a.device,
                              iters=iters, warmup=warmup, pauses=0, mode=mode,
                              drain_ms=a.drain_ms)


def mode_prefix(a, mode):
    """--calib-out's prefix for a mode's files: the spin's keep PREFIX, the
    stream's PREFIX-stream."""
    return a.calib_out if mode == "spin" else "%s-%s" % (a.calib_out, mode)


def median_or_blank(values, fmt="%.3f"):
    return fmt % statistics.median(values) if values else ""


def calibrate(a, rnd, mode, parts, dev, counts, spin, spin_ms, cuda, writer, info):
    """One round's phase measurement in `mode` (spin: host_calibrate's
    phase_rows; stream: its stream_rows) on the plain model: its CSV row,
    and with --calib-out its calibration file and per-iteration CSV.
    counts: (kernel-launching dispatches, nodes that launch a kernel, every
    dispatch, every node); the per-iteration CSV carries every dispatch and
    node, as host_calibrate.py's does (bench/host_pool.py reads both and
    takes the free ones out itself). Returns the rows and whether the file
    was written."""
    t0 = time.perf_counter()
    dispatches, nodes, all_dispatches, all_nodes = counts
    forward = host_calibrate.make_forward(parts["model"], parts["x"], parts["loss"], a.amp, dev)
    if mode == "stream":
        iters = a.stream_iters
        # the sync-debug iteration only where it is a warm-up one, as phase_rows' first
        rows = host_calibrate.stream_rows(forward, parts["opt"], cuda, a.calib_warmup, iters,
                                          a.drain_ms, debug_first=a.calib_warmup > 0)
    else:
        iters = a.calib_iters
        rows = host_calibrate.phase_rows(forward, parts["opt"], spin, cuda, a.calib_warmup,
                                         iters)
    ca = calib_args(a, iters, a.calib_warmup, mode)
    print("round %d calibration%s: " % (rnd, "" if len(a.calib_modes) == 1 else " (%s)" % mode),
          end="")
    host_calibrate.print_phases(ca, rows, dispatches, nodes, cuda, spin_ms)
    free_f = [r["f"]["ms"] for r in rows if r["f"]["free"]]
    free_b = [r["b"]["ms"] for r in rows if r["b"]["free"]]
    writer.writerow(dict(round=rnd, kind="calib", config="plain", position=0, model=a.model,
                         batch=a.batch, amp=a.amp or "", device=a.device, iters="",
                         dispatch_us=median_or_blank([ms * 1e3 / dispatches for ms in free_f]
                                                     if dispatches else [], "%.2f"),
                         node_us=median_or_blank([ms * 1e3 / nodes for ms in free_b]
                                                 if nodes else [], "%.2f"),
                         fwd_ms=median_or_blank([r["f"]["ms"] for r in rows]),
                         bwd_ms=median_or_blank([r["b"]["ms"] for r in rows]),
                         fwd_free=len(free_f), bwd_free=len(free_b), calib_iters=len(rows),
                         calib_mode=mode, gpu=info["gpu"], torch=info["torch"], nccl=info["nccl"],
                         seconds="%.1f" % (time.perf_counter() - t0)))
    written = False
    if a.calib_out:
        prefix = mode_prefix(a, mode)
        host_calibrate.write_rows("%s-r%d.csv" % (prefix, rnd), ca, rows, all_dispatches,
                                  all_nodes,
                                  sum(len(g["params"]) for g in parts["opt"].param_groups))
        written = write_file("%s-r%d.yaml" % (prefix, rnd), ca, rows, counts, cuda, spin_ms,
                             ["bench/host_inproc.py round %d of %d, in the training run's process"
                              % (rnd, a.rounds)])
    return rows, written


def write_file(path, ca, rows, counts, cuda, spin_ms, comments):
    """host_calibrate's calibration file from `rows` (on the CPU as its
    --cpu-dry-run writes it); False, said, where no phase ran unblocked."""
    dry_run = not cuda
    keys, left = host_calibrate.calib_host_keys(ca, rows, counts[0], counts[1], cuda, dry_run)
    if not keys:
        print("  %s not written: no phase measured unblocked (%s)"
              % (path, "; ".join("%s: %s" % kv for kv in left.items())))
        return False
    host_calibrate.write_calib(path, ca, keys, left, dry_run, spin_ms, comments)
    print("  wrote %s (%s)" % (path, ", ".join("%s %.1fus" % (k, v[0]) for k, v in keys.items())))
    return True


def main(argv=None):
    a = parse_args(argv)
    dev = torch.device(a.device)
    cuda = dev.type == "cuda"
    torch.backends.cudnn.benchmark = True  # as torch_measure and host_calibrate
    dist = torch_measure.one_rank_group(dev)
    info = torch_measure.print_versions(dev)
    # per kernel-launching dispatch (host_calibrate.py's docstring)
    dispatches, views, nodes, view_nodes = host_calibrate.model_counts(a.model, a.amp)
    counts = (dispatches - views, nodes - view_nodes, dispatches, nodes)
    spin, spin_ms = host_calibrate.spin_for(cuda, a.sleep_ms, 0)

    t0 = time.perf_counter()
    built = {}
    for name in a.configs if "plain" in a.configs else ["plain"] + a.configs:
        torch.manual_seed(0)  # the same initial weights in every config
        built[name] = torch_measure.build_parts(
            dict(CONFIGS[name], model=a.model, batch=a.batch, amp=a.amp), dev)
        for _ in range(a.warmup):
            built[name]["step"]()
        torch_measure.sync(dev)
        print("built and warmed up %s (%d iterations): %.1f s"
              % (name, a.warmup, time.perf_counter() - t0), flush=True)

    pooled, gpu_ms = {m: [] for m in a.calib_modes}, {c: [] for c in a.configs}
    f = open(a.out, "w", newline="")
    writer = csv.DictWriter(f, fieldnames=COLUMNS, restval="")
    writer.writeheader()
    for rnd in range(1, a.rounds + 1):
        shift = (rnd - 1) % len(a.calib_modes)
        for mode in a.calib_modes[shift:] + a.calib_modes[:shift]:
            rows, _ = calibrate(a, rnd, mode, built["plain"], dev, counts, spin, spin_ms, cuda,
                                writer, info)
            pooled[mode] += rows
            f.flush()
        shift = (rnd - 1) % len(a.configs)
        order = a.configs[shift:] + a.configs[:shift]
        for pos, name in enumerate(order):
            t1 = time.perf_counter()
            gpu, host, enq = torch_measure.time_run(built[name]["step"], dev, a.iters)
            g = statistics.median(gpu) if gpu else float("nan")
            s = statistics.median(host)
            gpu_ms[name].append(g if gpu else s)
            writer.writerow(dict(round=rnd, kind="train", config=name, position=pos,
                                 model=a.model, batch=a.batch, amp=a.amp or "", device=a.device,
                                 iters=a.iters, gpu_ms="%.3f" % g,
                                 gpu_ms_min="%.3f" % (min(gpu) if gpu else float("nan")),
                                 sync_ms="%.3f" % s,
                                 host_ms="%.3f" % (statistics.median(enq) if enq else float("nan")),
                                 gpu=info["gpu"], torch=info["torch"], nccl=info["nccl"],
                                 seconds="%.1f" % (time.perf_counter() - t1)))
            f.flush()
            print("round %d %-17s gpu %8.3f ms  sync %8.3f ms" % (rnd, name, g, s), flush=True)
    f.close()

    print("summary, %s batch %d%s on %s, %d rounds (%.1f s):"
          % (a.model, a.batch, " " + a.amp if a.amp else "", info["gpu"], a.rounds,
             time.perf_counter() - t0))
    base = statistics.median(gpu_ms["plain"]) if "plain" in gpu_ms else None
    for name in a.configs:
        med = statistics.median(gpu_ms[name])
        print("  %-17s %s ms per round, median %.3f%s"
              % (name, " ".join("%.3f" % v for v in gpu_ms[name]), med,
                 "" if base is None or name == "plain" else ", %+.3f vs plain" % (med - base)))
    ok = True
    for mode in a.calib_modes:
        ca = calib_args(a, len(pooled[mode]), a.calib_warmup, mode)
        host_calibrate.print_phases(ca, pooled[mode], counts[0], counts[1], cuda, spin_ms)
        if a.calib_out:
            ok = write_file("%s-pooled.yaml" % mode_prefix(a, mode), ca, pooled[mode], counts,
                            cuda, spin_ms,
                            ["bench/host_inproc.py: %d rounds of %d iterations pooled, each "
                             "after %d warm-up, in the training run's process"
                             % (a.rounds, a.stream_iters if mode == "stream" else a.calib_iters,
                                a.calib_warmup)]) and ok
    dist.destroy_process_group()
    if not ok:
        sys.exit(1)


if __name__ == "__main__":
    main()
