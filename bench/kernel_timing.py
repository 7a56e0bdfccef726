#!/usr/bin/env python3
"""Timing and profiling helpers for the kernel benchmarks (bench/gpu_kernels.py,
bench/conv_wide_queued.py): how one call of a kernel is timed and what it ran.

  machine   cpu_model, nvidia_smi_clocks, gpu_info, sm_clock_now: the CPU, the
            GPU's name, SMs, L2 and SM clocks every row carries;
  timing    timed (CUDA-event intervals of calls back to back; host time on a
            CPU) and timed_queued (the calls queued behind a spin kernel, so a
            call shorter than the host's dispatch is timed at its GPU time);
  kernels   profiled_kernels (torch.profiler: each launch's name and device
            time; on a CPU the top-level aten ops stand in), kernels_of,
            kernel_times, call_kernels (launches per call, cuDNN's layout
            transposes apart), kernel_short (a kernel's name and leading
            template arguments) and kernel_timing_start (the profiler's first
            session spent on a throwaway op, and the SM clock the spin needs).

A module, not a script: the benchmarks import it from bench/ (their own
directory is first on sys.path).
"""

import platform
import re
import statistics
import subprocess
import time

import torch


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def calib_gpu_line(name):
    """A calibration file's `gpu:` line (traces/calib_file.h) naming the GPU
    as CUDA does, a YAML double-quoted scalar: ddpsim checks it against the
    topology's GPU (sim/cli/run_load.c)."""
    return 'gpu: "%s"' % name.replace("\\", "\\\\").replace('"', '\\"')


def nvidia_smi_clocks():
    """SM and memory clocks as nvidia-smi reads them (MHz), {} where it cannot."""
    fields = ("clocks.max.sm", "clocks.sm", "clocks.max.mem", "clocks.mem")
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=" + ",".join(fields),
                              "--format=csv,noheader,nounits"],
                             capture_output=True, text=True, timeout=20).stdout
    except (OSError, subprocess.SubprocessError):
        return {}
    vals = [v.strip() for v in out.splitlines()[0].split(",")] if out.strip() else []
    return {k: v for k, v in zip(fields, vals) if v and v[0].isdigit()}


def gpu_info(dev):
    """The GPU's name, SMs, L2 and SM clocks: what a rate per SM cycle needs."""
    if dev.type != "cuda":
        return dict(gpu="cpu", gpu_sms="", gpu_l2_mb="", sm_clock_max_mhz="")
    props = torch.cuda.get_device_properties(dev)
    clocks = nvidia_smi_clocks()
    khz = getattr(props, "clock_rate", 0)  # not in every release (CUDA 13 dropped clockRate)
    return dict(gpu=props.name, gpu_sms=props.multi_processor_count,
                gpu_l2_mb="%.0f" % (getattr(props, "L2_cache_size", 0) / 2 ** 20),
                sm_clock_max_mhz=clocks.get("clocks.max.sm", "%.0f" % (khz / 1e3) if khz else ""))


def sm_clock_now(dev):
    """The SM clock right now (MHz) through NVML, '' where torch cannot read it."""
    if dev.type != "cuda":
        return ""
    try:
        return torch.cuda.clock_rate(dev)
    except Exception:  # no pynvml, no permission: the column stays empty
        return ""


def timed(fn, dev, warmup, iters):
    """Median ms of fn() over iters, each bracketed by CUDA events (host time
    with a synchronise on CPU)."""
    for _ in range(warmup):
        fn()
    out = []
    if dev.type == "cuda":
        torch.cuda.synchronize()
        ev = [torch.cuda.Event(enable_timing=True) for _ in range(iters + 1)]
        ev[0].record()
        for i in range(iters):
            fn()
            ev[i + 1].record()
        torch.cuda.synchronize()
        out = [ev[i].elapsed_time(ev[i + 1]) for i in range(iters)]
    else:
        for _ in range(iters):
            t0 = time.perf_counter()
            fn()
            out.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(out)


def timed_queued(fn, dev, warmup, iters, clock_hz):
    """Median ms of fn() over iters, the calls queued behind a spin kernel so
    the CUDA-event intervals are the GPU's time, not the host's dispatch (a
    small elementwise kernel takes less than the ~15 us Python needs to launch
    it). Also says whether the GPU was still busy when the host had queued the
    last call ('1': the intervals are the GPU's; '0': the host set the pace)."""
    if dev.type != "cuda" or not hasattr(torch.cuda, "_sleep"):
        return timed(fn, dev, warmup, iters), ""
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for i in range(warmup):
        if i == 1:  # the host's pace from the calls after the first (cudnn.benchmark's
            torch.cuda.synchronize()  # search runs in the first: seconds, not a pace)
            t0 = time.perf_counter()
        fn()
    host_s = (time.perf_counter() - t0) / max(warmup - 1, 1)
    torch.cuda.synchronize()
    ev = [torch.cuda.Event(enable_timing=True) for _ in range(iters + 1)]
    # twice the host's time to queue everything, at least 1 ms, at most 0.5 s
    # (a slower clock than clock_hz only makes the spin longer)
    torch.cuda._sleep(int(clock_hz * min(0.5, max(1e-3, 2 * (iters + 1) * (host_s + 10e-6)))))
    ev[0].record()
    for i in range(iters):
        fn()
        ev[i + 1].record()
    ahead = not torch.cuda.current_stream().query()
    torch.cuda.synchronize()
    return statistics.median(ev[i].elapsed_time(ev[i + 1]) for i in range(iters)), \
        "1" if ahead else "0"


KERNEL_NAME = re.compile(r"(?:[\w:]+::)?(\w+)\s*<\s*([\d,\s]*)")


def kernel_short(name):
    """'void at::native::vectorized_elementwise_kernel<4, at::native::...>(...)'
    -> ('vectorized_elementwise_kernel', '4'): the kernel and its leading
    numeric template arguments (vector width; threads and items per thread)."""
    m = KERNEL_NAME.search(name)
    if not m:
        return name.split("(")[0].split()[-1] if name.split() else name, ""
    args = [t.strip() for t in m.group(2).split(",")]
    return m.group(1), "/".join(t for t in args if t.isdigit())


def profiled_kernels(fn, dev, calls=3):
    """The kernels `calls` calls of fn() run, read from torch.profiler: (name,
    device us) per kernel launch, in order. On a CPU the top-level aten ops
    stand in for kernels (the dry run's check of this path)."""
    from torch.autograd import DeviceType
    from torch.profiler import ProfilerActivity, profile
    cuda = dev.type == "cuda"
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    if cuda:
        torch.cuda.synchronize()
    with profile(activities=activities) as prof:
        for _ in range(calls):
            fn()
        if cuda:
            torch.cuda.synchronize()
    for e in prof.events():
        keep = e.device_type == DeviceType.CUDA if cuda else \
            e.name.startswith("aten::") and e.cpu_parent is None
        if keep:
            yield e.name, e.time_range.end - e.time_range.start


def kernels_of(fn, dev, calls=3):
    """The kernels one call of fn() runs: (names in order, device us per call)."""
    names, us = [], 0.0
    for name, t in profiled_kernels(fn, dev, calls):
        if name not in names:
            names.append(name)
        us += t
    return names, us / calls


def kernel_times(fn, dev, calls=3):
    """Each kernel one call of fn() runs, in order, with its device us per call."""
    us = {}
    for name, t in profiled_kernels(fn, dev, calls):
        us[name] = us.get(name, 0.0) + t / calls
    return list(us.items())


# cuDNN's layout transposes around its NHWC tensor-core kernels on NCHW tensors
# (ddpsim charges them apart, as memory-bound kernels: compute.h), by kernel name
TRANSPOSE_KERNELS = ("nchwToNhwc", "nhwcToNchw")


def call_kernels(fn, dev, calls=3):
    """The launches one call of fn() makes (torch.profiler, `calls` calls):
    (launches per call, names in order of first launch with their launches
    per call, device us per call, of which cuDNN's layout transposes: us and
    launches per call)."""
    names, us, xus, xn, n = {}, 0.0, 0.0, 0, 0
    for name, t in profiled_kernels(fn, dev, calls):
        names[name] = names.get(name, 0) + 1
        us += t
        n += 1
        if any(x in name for x in TRANSPOSE_KERNELS):
            xus += t
            xn += 1
    return n / calls, [(k, v / calls) for k, v in names.items()], us / calls, xus / calls, \
        xn / calls


def kernel_timing_start(dev, info):
    """For the kinds that time kernels one by one: (on CUDA?, the L2's bytes,
    the SM clock in Hz, 2 GHz where the machine gives none), after starting
    the profiler once: the first profiler session of a process starts CUPTI
    (seconds) and may miss kernels, so it is spent on a throwaway op."""
    cuda = dev.type == "cuda"
    l2 = torch.cuda.get_device_properties(dev).L2_cache_size if cuda else 0
    try:
        clock_hz = float(info["sm_clock_max_mhz"]) * 1e6
    except ValueError:
        clock_hz = 2e9
    warm = torch.ones(1024, device=dev)
    kernels_of(lambda: warm.add_(1), dev, calls=1)
    return cuda, l2, clock_hz
