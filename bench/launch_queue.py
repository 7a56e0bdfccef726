#!/usr/bin/env python3
"""How many launches the CUDA driver queues behind a busy GPU before the
host blocks: the depth that makes bench/host_calibrate.py's spin method fail
for a phase that launches more (SE-ResNeXt-101's backward, about 1358 a fp32
b32 iteration, bench/results/gpu-2026-11-27-h200/notes-host.md).

A spin kernel (torch.cuda._sleep) of --sleep-ms holds the GPU; then --count
tiny kernels (an in-place add on a one-element tensor), each timed on the
host. The first step that takes longer than --block-ms (default a tenth of
the spin: a step that waits for a queue slot waits out the rest of the spin,
where a host stall of a millisecond or two is not a queue) waited for a
slot; `first_blocked` is its step and `launches_before` the launches queued
before it (the spin and an event count too). Each setting runs twice: the
kernel alone (one launch a step), and the kernel followed by a real
cudaMemsetAsync of 4 bytes (through ctypes, on the libcudart torch has
loaded; two launches a step), to see whether memsets take slots as well.

    python3 bench/launch_queue.py --out launch_queue.csv
"""

import argparse
import ctypes
import csv
import time

import torch


def cudart():
    """The CUDA runtime torch has loaded (dlopen by soname finds the copy already in
    the process), or None."""
    for name in ("libcudart.so.13", "libcudart.so.12", "libcudart.so"):
        try:
            lib = ctypes.CDLL(name)
        except OSError:
            continue
        lib.cudaMemsetAsync.restype = ctypes.c_int
        lib.cudaMemsetAsync.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_size_t,
                                        ctypes.c_void_p]
        return lib
    return None


def probe(count, sleep_ms, block_ms, rt, khz):
    """rt: the runtime for a cudaMemsetAsync after each kernel, or None (kernels only)."""
    x = torch.zeros(1, device="cuda")
    y = torch.zeros(1, device="cuda")
    stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
    torch.cuda.synchronize()
    torch.cuda._sleep(int(sleep_ms * khz))
    spun = torch.cuda.Event()
    spun.record()
    times = []
    for _ in range(count):
        t0 = time.perf_counter()
        x.add_(1.0)
        if rt is not None:
            rc = rt.cudaMemsetAsync(ctypes.c_void_p(y.data_ptr()), 0, 4, stream)
            if rc != 0:
                raise RuntimeError("cudaMemsetAsync returned %d" % rc)
        times.append((time.perf_counter() - t0) * 1e3)
    still = not spun.query()
    torch.cuda.synchronize()
    first = next((i for i, t in enumerate(times) if t > block_ms), None)
    return times, first, still


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--count", type=int, default=3000)
    ap.add_argument("--sleep-ms", type=float, default=300.0)
    ap.add_argument("--block-ms", type=float,
                    help="a step slower than this waited for the queue (default: a tenth "
                         "of --sleep-ms)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", required=True, help="CSV: one row per probe")
    a = ap.parse_args()
    if not torch.cuda.is_available():
        print("no CUDA device: nothing to probe")
        with open(a.out, "w") as f:
            f.write("memset,repeat,launches_per_step,first_blocked,launches_before,blocked_ms,"
                    "median_launch_us,spin_outlasted\n")
        return
    block_ms = a.block_ms if a.block_ms is not None else a.sleep_ms / 10
    khz = getattr(torch.cuda.get_device_properties(0), "clock_rate", 0) or 2_000_000
    rt = cudart()
    if rt is None:
        print("no libcudart could be opened: the memset rows are skipped", flush=True)
    with open(a.out, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["memset", "repeat", "launches_per_step", "first_blocked", "launches_before",
                    "blocked_ms", "median_launch_us", "spin_outlasted"])
        for memset in (0, 1):
            if memset and rt is None:
                continue
            per_step = 1 + memset
            for r in range(a.repeats):
                times, first, still = probe(a.count, a.sleep_ms, block_ms,
                                            rt if memset else None, khz)
                ok = sorted(times if first is None else times[:first])
                med = ok[len(ok) // 2] * 1e3 if ok else float("nan")
                before = "" if first is None else first * per_step
                w.writerow([memset, r, per_step, "" if first is None else first, before,
                            "%.3f" % (times[first] if first is not None else 0.0), "%.2f" % med,
                            int(still)])
                print("memset %d repeat %d: first blocked step %s (%s launches queued before "
                      "it, %.1f ms), median step %.2f us before it, spin still running at the "
                      "end: %d" % (memset, r, first, before,
                                   times[first] if first is not None else 0.0, med, still),
                      flush=True)


if __name__ == "__main__":
    main()
