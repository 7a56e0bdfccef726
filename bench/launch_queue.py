#!/usr/bin/env python3
"""How many launches the CUDA driver queues behind a busy GPU before the
host blocks: the depth that makes bench/host_calibrate.py's spin method fail
for a phase that launches more (SE-ResNeXt-101's backward, about 1358 a fp32
b32 iteration, bench/results/gpu-2026-11-27-h200/notes-host.md).

A spin kernel (torch.cuda._sleep) of --sleep-ms holds the GPU; then --count
tiny kernels (an in-place add on a one-element tensor), each timed on the
host. The first launch that takes longer than --block-ms waited for a queue
slot: its index is the depth (kernels already queued; the spin and an event
count too). --memset adds a cudaMemsetAsync per kernel (a zero_ of the
same tensor's copy) to see whether those take slots as well.

    python3 bench/launch_queue.py --out launch_queue.csv
"""

import argparse
import csv
import time

import torch


def probe(count, sleep_ms, block_ms, memset, khz):
    x = torch.zeros(1, device="cuda")
    y = torch.zeros(1, device="cuda")
    torch.cuda.synchronize()
    torch.cuda._sleep(int(sleep_ms * khz))
    spun = torch.cuda.Event()
    spun.record()
    times = []
    for _ in range(count):
        t0 = time.perf_counter()
        x.add_(1.0)
        if memset:
            y.zero_()
        times.append((time.perf_counter() - t0) * 1e3)
    still = not spun.query()
    torch.cuda.synchronize()
    first = next((i for i, t in enumerate(times) if t > block_ms), None)
    return times, first, still


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--count", type=int, default=3000)
    ap.add_argument("--sleep-ms", type=float, default=300.0)
    ap.add_argument("--block-ms", type=float, default=1.0,
                    help="a launch slower than this waited for the queue")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", required=True, help="CSV: one row per probe")
    a = ap.parse_args()
    if not torch.cuda.is_available():
        print("no CUDA device: nothing to probe")
        with open(a.out, "w") as f:
            f.write("memset,repeat,first_blocked,blocked_ms,median_launch_us,spin_outlasted\n")
        return
    khz = torch.cuda.get_device_properties(0).clock_rate or 2_000_000
    with open(a.out, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["memset", "repeat", "first_blocked", "blocked_ms", "median_launch_us",
                    "spin_outlasted"])
        for memset in (0, 1):
            for r in range(a.repeats):
                times, first, still = probe(a.count, a.sleep_ms, a.block_ms, memset, khz)
                ok = sorted(times[:first] if first else times)
                med = ok[len(ok) // 2] * 1e3 if ok else float("nan")
                w.writerow([memset, r, "" if first is None else first,
                            "%.3f" % (times[first] if first is not None else 0.0), "%.2f" % med,
                            int(still)])
                print("memset %d repeat %d: first blocked launch %s (%.1f ms), median launch "
                      "%.2f us before it, spin still running at the end: %d"
                      % (memset, r, first, times[first] if first is not None else 0.0, med,
                         still), flush=True)


if __name__ == "__main__":
    main()
