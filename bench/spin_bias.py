#!/usr/bin/env python3
"""Does holding the GPU behind a spin change the host's own time per phase?

bench/host_calibrate.py measures the host's time per dispatch and per
autograd node with each phase (forward with the loss, backward, the
optimizer step) queued behind a spin kernel, so that no launch can wait for
the GPU. On the lent H200 (bench/results/gpu-2026-11-27f-h200, host_inproc)
a calibration taken that way in the training run's own process predicted
ResNet-50 fp32 b32 20 % slow and ResNet-101 18 % fast. This script asks
whether the spin itself is part of that: in ONE process, on one model, it
alternates blocks of iterations timed three ways and compares the host's
time for the same phases:

  spin    each phase behind a spin of its own, after a synchronize
          (host_calibrate's phase_rows, one iteration at a time);
  sync    the same phases after a synchronize, without a spin: the GPU runs
          each kernel as it is launched, the driver's queue stays short when
          the host is the slower (ResNet-50 and -101 at batch 32 are);
  stream  consecutive training iterations with no synchronize at all, the
          phases timed by host clock reads at their boundaries: what a
          training loop does (a host-bound loop is never gated by the GPU
          unless the launch queue fills or an op synchronises);
          host_calibrate.stream_rows (its --mode stream), whose free flag
          says whether the GPU had drained when the host finished the phase
          (--drain-ms); the CSV keeps each phase's lag (`*_lag_ms`: how
          far the GPU still had to go when the host finished it).

Blocks of --block iterations rotate spin, sync, stream for --cycles cycles,
so drift in the host's speed (it varies 1.2-1.65x between processes and
within one: notes-host2.md) falls on every mode alike. One CSV row per
timed iteration; a summary of each mode's median per phase and its ratio to
stream. `--device cpu` runs the loop as a dry run (CPU kernels run inline:
its times are not host costs).

    python3 bench/spin_bias.py --model resnet50 --batch 32 --out spin_bias.csv
"""

import argparse
import csv
import os
import statistics
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import host_calibrate  # noqa: E402
import torch_measure  # noqa: E402

MODES = ("spin", "sync", "stream")
PHASES = ("f", "b", "s")  # forward with the loss, backward, optimizer step


class NoSpin:
    """host_calibrate.phase_rows' spin interface with nothing queued: the
    phases run after a synchronize, the GPU free to keep up."""
    paused_s = 0.0
    pauses = 0

    def start(self):
        pass

    def end(self):
        return 0


def stream_rows(forward, opt, cuda, n, drain_ms):
    """1 + n consecutive iterations with no synchronize, each phase's host
    time read at its boundaries (host_calibrate.stream_rows, --mode stream's
    loop); the last n's rows in phase_rows' shape, free 1 where the GPU had
    drained (a lag of at most drain_ms) when the host finished the phase.
    The first, after the previous block's synchronize, is dropped as
    phase_rows' warm-up is. (Before 2026-11-27's stream mode in
    host_calibrate, this loop wrote free 0: the 27g CSVs' stream rows.)"""
    return host_calibrate.stream_rows(forward, opt, cuda, 1, n, drain_ms, debug_first=False)


def lag_cell(phase):
    """A phase's lag_ms as a CSV cell: stream's rows have it (how far the GPU
    still had to go when the host finished the phase; host_calibrate.stream_rows),
    empty for spin's and sync's rows and on the CPU."""
    lag = phase.get("lag_ms")
    return "" if lag is None else "%.3f" % lag


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default="resnet50", help="a name of tools/torch_models.py")
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--cycles", type=int, default=8)
    ap.add_argument("--block", type=int, default=5, help="iterations per mode per cycle")
    ap.add_argument("--warmup", type=int, default=8)
    ap.add_argument("--sleep-ms", type=float, default=60.0, help="the spin per phase")
    ap.add_argument("--drain-ms", type=float, default=1.0, help="stream: the GPU's largest lag "
                    "behind the host's end of a phase that counts as drained (its free flag)")
    ap.add_argument("--out", required=True, help="CSV, one row per timed iteration")
    a = ap.parse_args(argv)
    if a.cycles < 1 or a.block < 1 or a.warmup < 0 or a.sleep_ms <= 0 or a.drain_ms < 0:
        ap.error("--cycles and --block must be >= 1, --warmup >= 0, --sleep-ms > 0, "
                 "--drain-ms >= 0")
    if a.model not in torch_measure.torch_models.MODELS:
        print("spin_bias.py: --model %s: not a model of tools/torch_models.py" % a.model,
              file=sys.stderr)
        sys.exit(2)
    return a


def main(argv=None):
    a = parse_args(argv)
    dev = torch.device(a.device)
    cuda = dev.type == "cuda"
    torch.backends.cudnn.benchmark = True  # as torch_measure and host_calibrate
    info = torch_measure.print_versions(dev)
    torch.manual_seed(0)
    parts = torch_measure.build_parts(dict(model=a.model, batch=a.batch), dev)
    for _ in range(a.warmup):
        parts["step"]()
    torch_measure.sync(dev)
    forward = host_calibrate.make_forward(parts["model"], parts["x"], parts["loss"], None, dev)
    spin, spin_ms = host_calibrate.spin_for(cuda, a.sleep_ms, 0)
    nospin = NoSpin()
    # one warm-up iteration per block: phase_rows runs its first under the
    # sync-debug mode, and each block starts after a synchronize
    runs = {
        "spin": lambda n: host_calibrate.phase_rows(forward, parts["opt"], spin, cuda, 1, n),
        "sync": lambda n: host_calibrate.phase_rows(forward, parts["opt"], nospin, cuda, 1, n),
        "stream": lambda n: stream_rows(forward, parts["opt"], cuda, n, a.drain_ms),
    }
    ms = {m: {p: [] for p in PHASES} for m in MODES}
    tmp = a.out + ".tmp"
    with open(tmp, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["cycle", "mode", "iteration", "fwd_ms", "bwd_ms", "step_ms", "fwd_free",
                    "bwd_free", "step_free", "fwd_lag_ms", "bwd_lag_ms", "step_lag_ms", "model",
                    "batch", "gpu", "torch"])
        for cyc in range(1, a.cycles + 1):
            shift = (cyc - 1) % len(MODES)
            for mode in MODES[shift:] + MODES[:shift]:
                for i, r in enumerate(runs[mode](a.block)):
                    for p in PHASES:
                        ms[mode][p].append(r[p]["ms"])
                    w.writerow([cyc, mode, i, "%.3f" % r["f"]["ms"], "%.3f" % r["b"]["ms"],
                                "%.3f" % r["s"]["ms"], r["f"]["free"], r["b"]["free"],
                                r["s"]["free"]] + [lag_cell(r[p]) for p in PHASES] +
                               [a.model, a.batch, info["gpu"], info["torch"]])
            f.flush()
    os.replace(tmp, a.out)
    print("%s batch %d on %s: host ms per phase, median of %d iterations per mode "
          "(%d cycles of %d; spin %.0f ms)" % (a.model, a.batch, info["gpu"],
                                             a.cycles * a.block, a.cycles, a.block, spin_ms))
    base = {p: statistics.median(ms["stream"][p]) for p in PHASES}
    for mode in MODES:
        med = {p: statistics.median(ms[mode][p]) for p in PHASES}
        print("  %-6s forward %7.3f  backward %7.3f  step %6.3f  fwd+bwd %7.3f  (x%.3f stream's)"
              % (mode, med["f"], med["b"], med["s"], med["f"] + med["b"],
                 (med["f"] + med["b"]) / (base["f"] + base["b"])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
