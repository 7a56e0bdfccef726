#!/usr/bin/env python3
"""Max-pool's SM-cycle constants (sim/train/compute_pool.c POOL_*_CYCLES_PER_*) from
bench/gpu_maxpool.py's output: for each layout and direction, over the rows of at least
--min-us (40) us, each kernel's SM cycles per element, (kernel_us - kernel_overhead) x SMs x
clock / elements (outputs forward, inputs backward), against its (element, window) pairs per
element, fitted by ordinary least squares to a line: its intercept is the cycles per element,
its slope the cycles per pair. ddpsim charges cycles / (SMs x clock) + kernel_overhead
(compute_pool.c ds_compute_max_pool_ns), so the fit takes the topology's kernel_overhead
(--overhead-us, default 4: the shipped topologies') out of each kernel time first; with
--overhead-us 0 it prints the constants fitted before that convention (2.42 + 0.207, 2.45 +
0.208, 2.29 + 0.256, 1.05 + 0.578). Prints each row's charge beside its time. Standard
library only:

  python3 bench/maxpool_fit.py bench/results/gpu-2026-11-26c-h200/maxpool.txt --sms 132 \\
    --clock-mhz 1980
"""

import argparse
import re


def side(size, k, s, p):
    """Outputs along one side, and the input elements of all windows summed (padding out)."""
    n = (size + 2 * p - k) // s + 1
    pairs = 0
    for o in range(n):
        lo, hi = o * s - p, o * s - p + k
        pairs += min(hi, size) - max(lo, 0)
    return n, pairs


ROW = re.compile(r"b(\d+) c(\d+) h(\d+) k(\d+) s(\d+) p(\d+) (\w+) (nchw|nhwc) out\d+ "
                 r"fwd_us ([\d.]+) bwd_us ([\d.]+)")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("maxpool", help="bench/gpu_maxpool.py's output")
    ap.add_argument("--sms", type=int, required=True)
    ap.add_argument("--clock-mhz", type=float, required=True)
    ap.add_argument("--min-us", type=float, default=40.0)
    ap.add_argument("--overhead-us", type=float, default=4.0,
                    help="kernel_overhead, taken out of each kernel time (default 4)")
    a = ap.parse_args()
    cycles_per_us = a.sms * a.clock_mhz
    sets = {}
    with open(a.maxpool) as f:
        for line in f:
            m = ROW.match(line.strip())
            if not m:
                continue
            b, c, h, k, s, p = (int(x) for x in m.groups()[:6])
            layout, fwd_us, bwd_us = m.group(8), float(m.group(9)), float(m.group(10))
            n, pairs = side(h, k, s, p)
            outs, inputs, pair = b * c * n * n, b * c * h * h, b * c * pairs * pairs
            for d, elems, us in (("fwd", outs, fwd_us), ("bwd", inputs, bwd_us)):
                if us >= a.min_us:
                    name = line.split(" out")[0]
                    sets.setdefault((layout, d), []).append((name, elems, pair, us))
    print("kernel_overhead %.1f us taken out of each kernel time; rows of at least %g us" % (
        a.overhead_us, a.min_us))
    for (layout, d), rows in sorted(sets.items()):
        # cycles per element = x + y * pairs per element, ordinary least squares
        pts = [(q / e, (us - a.overhead_us) * cycles_per_us / e) for _, e, q, us in rows]
        mq = sum(q for q, _ in pts) / len(pts)
        mc = sum(c for _, c in pts) / len(pts)
        y = sum((q - mq) * (c - mc) for q, c in pts) / sum((q - mq) ** 2 for q, _ in pts)
        x = mc - y * mq
        worst = max(abs((x * e + y * q) / cycles_per_us + a.overhead_us - us) / us
                    for _, e, q, us in rows)
        print("%s %s: %d rows, %.3f cycles per %s + %.3f per pair; worst row %.1f %%" % (
            layout, d, len(rows), x, "output" if d == "fwd" else "input", y, 100 * worst))
        for name, e, q, us in rows:
            print("    %-36s %8.2f us, charged %8.2f" % (
                name, us, (x * e + y * q) / cycles_per_us + a.overhead_us))


if __name__ == "__main__":
    main()
