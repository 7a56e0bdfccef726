#!/usr/bin/env python3
"""Where a host-bound iteration's wall time went, from the kernel's own
counters (Linux /proc; standard library only): per-iteration deltas that tell
a slow host mode's cause apart (bench/results/gpu-2026-11-27-h200/notes-host.md).

  cpu_ms    on-CPU time of all the process's threads (CLOCK_PROCESS_CPUTIME_ID:
            exact, where schedstat's field 1 moves only at ticks for a running
            thread): the main thread's forward and step, the autograd thread's
            backward, CUDA's own threads;
  wait_ms   time those threads were runnable but waited for a CPU (schedstat
            field 2: run-queue delay inside this machine);
  steal_ms  the whole machine's steal time (/proc/stat, USER_HZ ticks): a vCPU
            the hypervisor gave to someone else (the guest counts it as on-CPU
            time, so it shows in cpu_ms too);
  cpus      the CPUs the threads last ran on ('+'-joined, /proc/.../stat field 39).

A slow iteration whose cpu_ms grew with its wall time and no steal ran on a
slower core (clock, a busy SMT sibling, cache or NUMA); one whose wait_ms or
steal_ms grew was kept off the CPU. Fields are 0 where /proc lacks them."""

import os
import time

HZ = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _read(path):
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return ""


def snapshot():
    """(cpu_ns, wait_ns, steal_ticks, cpus) of this process now."""
    wait = 0
    cpus = set()
    base = "/proc/self/task"
    try:
        tids = os.listdir(base)
    except OSError:
        tids = []
    for tid in tids:
        fields = _read("%s/%s/schedstat" % (base, tid)).split()
        if len(fields) >= 2:
            wait += int(fields[1])
        stat = _read("%s/%s/stat" % (base, tid))
        rest = stat.rsplit(")", 1)[-1].split()
        if len(rest) > 36:  # field 39 of stat, counted after the comm's ')'
            cpus.add(int(rest[36]))
    steal = 0
    for line in _read("/proc/stat").splitlines():
        if line.startswith("cpu "):
            parts = line.split()
            steal = int(parts[8]) if len(parts) > 8 else 0
            break
    return time.process_time_ns(), wait, steal, cpus


def delta(a, b):
    """What happened between snapshots a and b, in ms (steal over all CPUs)."""
    return {"cpu_ms": (b[0] - a[0]) / 1e6, "wait_ms": (b[1] - a[1]) / 1e6,
            "steal_ms": (b[2] - a[2]) * 1e3 / HZ,
            "cpus": "+".join(str(c) for c in sorted(b[3]))}


COLUMNS = ("cpu_ms", "wait_ms", "steal_ms", "cpus")


def cells(d):
    return ["%.3f" % d["cpu_ms"], "%.3f" % d["wait_ms"], "%.1f" % d["steal_ms"], d["cpus"]]
