#!/usr/bin/env python3
"""Measure real training iterations, and DDP's reducer at world size 1, with PyTorch.

The ground truth for ddpsim's single-GPU compute model and for the costs
DDP's reducer adds per bucket (issue #12), measured on whatever GPU this
runs on (a lent machine: bench/results/gpu-*/README.md records each run and
its command). The models are tools/torch_models.py's, the ones the model
files were exported from, so a measured run and `ddpsim --model NAME`
describe the same network.

Each run: `--warmup` iterations (cuDNN autotuning, DDP's bucket rebuild),
then two timings of `--iters` iterations each:
  gpu_ms   median gap between CUDA events recorded at the end of consecutive
           iterations, the host free to run ahead: the throughput a training
           loop sees (what published img/s and seq/s measure);
  sync_ms  median host time of one iteration with a device synchronise after
           it: adds the host's own costs where the GPU would wait for them.
An iteration is zero_grad(set_to_none), forward, loss, backward, optimizer
step (SGD with momentum for image models, Adam for the transformers: the
models' `optimizer`), on one fixed random batch.

DDP runs wrap the model in DistributedDataParallel over a one-rank process
group (NCCL on a GPU, gloo on CPU): the reducer still copies each gradient
into its bucket, divides, and calls one all-reduce per bucket, so the
difference to the plain run is the reducer's cost without any traffic.

Writes one CSV row per run (flushed as it goes, so a run cut short keeps its
rows) and, for the runs marked `profile`, a gzipped Chrome trace of two
iterations plus the profiler's kernel table.
"""

import argparse
import csv
import gzip
import os
import shutil
import statistics
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
import torch_models  # noqa: E402
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import host_sched  # noqa: E402


def first_tensor(out):
    if isinstance(out, torch.Tensor):
        return out
    if hasattr(out, "logits"):
        return out.logits
    return out[0]


def make_loss(kind, x):
    ce = torch.nn.CrossEntropyLoss()
    if kind == "classify":
        def loss(out):
            y = first_tensor(out)
            labels = torch.zeros(y.shape[:-1], dtype=torch.long, device=y.device)
            return ce(y.reshape(-1, y.shape[-1]).float(), labels.reshape(-1))
        return loss
    ids = x["input_ids"]

    def lm(out):
        y = first_tensor(out)[:, :-1]
        return ce(y.reshape(-1, y.shape[-1]).float(), ids[:, 1:].reshape(-1))
    return lm


def to_device(x, dev):
    if isinstance(x, dict):
        return {k: v.to(dev) for k, v in x.items()}
    return x.to(dev)


def build(run, dev):
    """One run's training iteration (zero_grad, forward, loss, backward, step)."""
    return build_parts(run, dev)["step"]


def build_parts(run, dev):
    """One run's model (DDP-wrapped where the run has `ddp_cap`), its batch,
    loss, optimizer and training iteration `step`, as a dict: host_inproc.py
    times the step and calibrates the host on the plain run's parts. The
    run's keys: model, batch, amp, half (model.half(): parameters, gradients,
    activations and Adam's state in fp16, no autocast: ddpsim's --dtype fp16,
    what apex amp O2 runs in forward and backward), channels_last, ddp_cap (MB),
    grad_view (gradient_as_bucket_view), broadcast_buffers (left to DDP's
    default, True, where absent)."""
    model, x, meta = torch_models.MODELS[run["model"]](batch=run["batch"])
    model = model.to(dev)
    if run.get("half"):
        model = model.half()
    x = to_device(x, dev)
    if run.get("channels_last"):  # NHWC, as DeepLearningExamples' AMP runs
        model = model.to(memory_format=torch.channels_last)
        x = x.to(memory_format=torch.channels_last)
    loss = make_loss(meta["loss"], x)
    if run.get("ddp_cap") is not None:
        from torch.nn.parallel import DistributedDataParallel as DDP
        # broadcast_buffers only where the run sets it: torch 2.15 warns that
        # the keyword is deprecated (forward_sync_buffers); the lent H200 runs 2.11
        extra = ({"broadcast_buffers": run["broadcast_buffers"]}
                 if "broadcast_buffers" in run else {})
        model = DDP(model, device_ids=[0] if dev.type == "cuda" else None,
                    bucket_cap_mb=run["ddp_cap"],
                    gradient_as_bucket_view=run.get("grad_view", False), **extra)
    params = model.parameters()
    if meta["optimizer"] == "sgd":
        opt = torch.optim.SGD(params, lr=0.01, momentum=0.9)
    else:
        opt = torch.optim.Adam(params, lr=1e-5)
    amp = run.get("amp")
    scaler = torch.amp.GradScaler(dev.type) if amp == "fp16" else None

    def step():
        opt.zero_grad(set_to_none=True)
        if amp:
            dtype = torch.float16 if amp == "fp16" else torch.bfloat16
            with torch.autocast(dev.type, dtype=dtype):
                out = model(**x) if isinstance(x, dict) else model(x)
                l = loss(out)
        else:
            out = model(**x) if isinstance(x, dict) else model(x)
            l = loss(out)
        if scaler:
            scaler.scale(l).backward()
            scaler.step(opt)
            scaler.update()
        else:
            l.backward()
            opt.step()
    return dict(model=model, x=x, loss=loss, opt=opt, step=step, meta=meta)


def sync(dev):
    if dev.type == "cuda":
        torch.cuda.synchronize()


def peak_alloc_gib(step, dev):
    """The most memory the caching allocator handed out during one warm iteration
    (torch.cuda.max_memory_allocated, GiB): ddpsim's peak memory counts what is live
    at the start of backward; this also holds workspaces, the allocator's rounding and
    whatever peaks elsewhere, so it bounds ddpsim's from above. nan on CPU."""
    if dev.type != "cuda":
        return float("nan")
    sync(dev)
    torch.cuda.reset_peak_memory_stats()
    step()
    sync(dev)
    return torch.cuda.max_memory_allocated() / 2**30


def time_run(step, dev, iters, sched=None):
    """Per-iteration GPU gaps, synchronised host times, and the host's own
    time per step() while the GPU runs behind it (host_ms close to gpu_ms
    means the host, not the GPU, sets the pace). With a list `sched`, each
    free-running iteration's host_sched deltas (its threads' CPU and
    run-queue time, steal, from one iteration's end to the next) are appended
    to it: reading /proc costs the host about 0.1-0.3 ms per iteration,
    inside the gaps it times."""
    gpu, enq = [], []
    if dev.type == "cuda":
        ends = [torch.cuda.Event(enable_timing=True) for _ in range(iters + 1)]
        sync(dev)
        step()
        ends[0].record()
        prev = host_sched.snapshot() if sched is not None else None
        for i in range(iters):
            t0 = time.perf_counter()
            step()
            enq.append((time.perf_counter() - t0) * 1e3)
            if sched is not None:  # one read per iteration: from the last one's end
                now = host_sched.snapshot()
                sched.append(host_sched.delta(prev, now))
                prev = now
            ends[i + 1].record()
        sync(dev)
        gpu = [ends[i].elapsed_time(ends[i + 1]) for i in range(iters)]
    host = []
    for _ in range(iters):
        t0 = time.perf_counter()
        step()
        sync(dev)
        host.append((time.perf_counter() - t0) * 1e3)
    return gpu, host, enq


def profile(step, dev, path):
    from torch.profiler import ProfilerActivity, profile as prof_ctx
    acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if dev.type == "cuda" else [])
    sync(dev)
    with prof_ctx(activities=acts, record_shapes=True) as prof:
        for _ in range(2):
            step()
        sync(dev)
    raw = path + ".json"
    prof.export_chrome_trace(raw)
    with open(raw, "rb") as src, gzip.open(path + ".json.gz", "wb") as dst:
        shutil.copyfileobj(src, dst)
    os.remove(raw)
    key = "self_cuda_time_total" if dev.type == "cuda" else "self_cpu_time_total"
    with open(path + ".txt", "w") as f:
        f.write(prof.key_averages().table(sort_by=key, row_limit=60))


def runs_for(plan):
    r50 = dict(model="resnet50")
    bert = dict(model="bert-base")
    runs = [
        dict(r50, name="resnet50-fp32-b32", batch=32, profile=True),
        dict(r50, name="resnet50-fp32-b128", batch=128),
        dict(r50, name="resnet50-amp-b128", batch=128, amp="fp16", profile=True),
        dict(r50, name="resnet50-amp-b256", batch=256, amp="fp16"),
    ]
    for cap in (1, 5, 25, 100):
        runs.append(dict(r50, name="resnet50-fp32-b32-ddp%d" % cap, batch=32, ddp_cap=cap,
                         profile=cap in (1, 25)))
    runs.append(dict(r50, name="resnet50-fp32-b32-ddp25-view", batch=32, ddp_cap=25,
                     grad_view=True))
    runs += [
        dict(bert, name="bert-base-fp32-b32", batch=32, profile=True),
        dict(bert, name="bert-base-amp-b32", batch=32, amp="fp16"),
    ]
    for cap in (1, 25, 100):
        runs.append(dict(bert, name="bert-base-fp32-b32-ddp%d" % cap, batch=32, ddp_cap=cap,
                         profile=cap in (1, 25)))
    runs += [
        dict(model="bert-base-squad", name="bert-base-squad-fp32-b24", batch=24),
        dict(model="bert-base-squad", name="bert-base-squad-tf32-b24", batch=24, tf32_matmul=True),
        dict(model="gpt2", name="gpt2-fp32-b8", batch=8, profile=True),
        dict(model="gpt2", name="gpt2-bf16-b8", batch=8, amp="bf16"),
    ]
    runs += [
        dict(r50, name="resnet50-amp-b128-nhwc", batch=128, amp="fp16", channels_last=True,
             profile=True),
        dict(r50, name="resnet50-amp-b256-nhwc", batch=256, amp="fp16", channels_last=True),
        dict(bert, name="bert-base-amp-b32-p", batch=32, amp="fp16", profile=True),
        dict(model="gpt2", name="gpt2-bf16-b8-p", batch=8, amp="bf16", profile=True),
    ]
    # the other models of PyTorch's DDP benchmark (validation/training.csv has
    # V100 rows): ResNeXt's grouped convolutions are 27-34 % slower there than
    # ddpsim's convolution rate
    runs += [dict(model=m, name="%s-fp32-b32" % m, batch=32, profile=True)
             for m in ("resnext50_32x4d", "resnet101", "resnext101_32x8d", "resnext101_32x4d")]
    # DeepLearningExamples' ResNeXt-101 AMP rows run channels-last
    runs.append(dict(model="resnext101_32x4d", name="resnext101_32x4d-amp-b128-nhwc", batch=128,
                     amp="fp16", channels_last=True, profile=True))
    # and its SE-ResNeXt-101 (the squeeze-and-excitation gates' kernels)
    runs.append(dict(model="se_resnext101_32x4d", name="se_resnext101_32x4d-fp32-b32", batch=32,
                     profile=True))
    runs.append(dict(model="se_resnext101_32x4d", name="se_resnext101_32x4d-amp-b128-nhwc",
                     batch=128, amp="fp16", channels_last=True, profile=True))
    # the DDP caps again, longest first, then the plain run: a second order
    for cap in (100, 25, 5, 1):
        runs.append(dict(r50, name="resnet50-fp32-b32-ddp%d-r" % cap, batch=32, ddp_cap=cap))
    runs.append(dict(r50, name="resnet50-fp32-b32-r", batch=32))
    if plan in ("bert-large", "bert-large-dle"):
        # DeepLearningExamples' BERT-large SQuAD rows (notes-dlebert.md): Hugging Face's
        # model, or (bert-large-dle) DLE's own modeling.py as the published rows ran it
        m = "bert-large-squad" + ("-dle" if plan == "bert-large-dle" else "")
        big = dict(model=m, batch=32)
        return [dict(big, name="%s-tf32-b32" % m, tf32_matmul=True),
                dict(big, name="%s-half-b32" % m, half=True),
                dict(big, name="%s-amp-b32" % m, amp="fp16")]
    if plan == "smoke":  # a CPU check of every code path at toy sizes
        keep = ("resnet50-fp32-b32", "resnet50-fp32-b32-ddp1", "resnet50-amp-b128-nhwc")
        runs = [dict(r, batch=2) for r in runs if r["name"] in keep]
    return runs


def per_iter_rows(path, name, gpu, enq, sched):
    """Append one run's timed iterations to `path` (header when new)."""
    new = not os.path.exists(path)
    with open(path, "a", newline="") as f:
        w = csv.writer(f)
        if new:
            w.writerow(["name", "iter", "gpu_ms", "enq_ms"] + list(host_sched.COLUMNS))
        for i, d in enumerate(sched):
            w.writerow([name, i, "%.3f" % gpu[i] if gpu else "", "%.3f" % enq[i]] + host_sched.cells(d))


def one_rank_group(dev):
    """The one-rank process group DDP runs over (NCCL on a GPU, gloo on the
    CPU); returns torch.distributed, to destroy it at the end."""
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29533")
    import torch.distributed as dist
    dist.init_process_group("nccl" if dev.type == "cuda" else "gloo", rank=0, world_size=1)
    return dist


def versions(dev):
    """What the CSV and the log record of the software and the GPU."""
    return {"torch": torch.__version__, "cuda": torch.version.cuda,
            "cudnn": torch.backends.cudnn.version(),
            "nccl": ".".join(map(str, torch.cuda.nccl.version())) if dev.type == "cuda" else "",
            "gpu": torch.cuda.get_device_name(0) if dev.type == "cuda" else "cpu",
            "cudnn_allow_tf32": torch.backends.cudnn.allow_tf32,
            "matmul_allow_tf32": torch.backends.cuda.matmul.allow_tf32}


def print_versions(dev):
    """versions(dev), printed as the log's first line ("# key=value ..."), and returned."""
    info = versions(dev)
    print("# " + " ".join("%s=%s" % kv for kv in info.items()), flush=True)
    return info


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True, help="CSV of one row per run")
    ap.add_argument("--profile-dir", help="where profiled runs write their traces")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--warmup", type=int, default=8)
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--plan", default="full", choices=("full", "smoke", "bert-large", "bert-large-dle"))
    ap.add_argument("--only", help="comma-separated run names")
    ap.add_argument("--profile-all", action="store_true",
                    help="profile every run (with --profile-dir), not only the plan's marked ones")
    ap.add_argument("--per-iter", help="CSV of every timed iteration: its GPU gap and host enqueue "
                    "(ms) and bench/host_sched.py's CPU, run-queue and steal time (the host's slow "
                    "iterations, which the medians hide)")
    a = ap.parse_args()

    dev = torch.device(a.device)
    torch.backends.cudnn.benchmark = True  # as DeepLearningExamples and torchvision's references
    default_tf32 = torch.backends.cuda.matmul.allow_tf32
    dist = one_rank_group(dev)
    info = print_versions(dev)

    only = set(a.only.split(",")) if a.only else None
    cols = ["name", "model", "batch", "amp", "tf32_matmul", "ddp_cap_mb", "grad_as_bucket_view",
            "channels_last",
            "gpu_ms_median", "gpu_ms_min", "sync_ms_median", "host_ms_median", "samples_per_s", "gpu", "torch",
            "cudnn", "nccl", "peak_alloc_gib"]
    with open(a.out, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(cols)
        for run in runs_for(a.plan):
            if only and run["name"] not in only:
                continue
            t0 = time.perf_counter()
            torch.backends.cuda.matmul.allow_tf32 = bool(run.get("tf32_matmul", default_tf32))
            step = build(run, dev)
            for _ in range(a.warmup):
                step()
            peak = peak_alloc_gib(step, dev)
            sched = [] if a.per_iter else None
            gpu, host, enq = time_run(step, dev, a.iters, sched)
            if a.per_iter:
                per_iter_rows(a.per_iter, run["name"], gpu, enq, sched)
            gmed = statistics.median(gpu) if gpu else float("nan")
            hmed = statistics.median(host)
            per_iter = gmed if gpu else hmed
            w.writerow([run["name"], run["model"], run["batch"],
                        run.get("amp", "half" if run.get("half") else ""),
                        int(torch.backends.cuda.matmul.allow_tf32), run.get("ddp_cap", ""),
                        int(run.get("grad_view", False)), int(run.get("channels_last", False)),
                        "%.3f" % gmed, "%.3f" % (min(gpu) if gpu else float("nan")), "%.3f" % hmed,
                        "%.3f" % (statistics.median(enq) if enq else float("nan")),
                        "%.1f" % (run["batch"] * 1e3 / per_iter), info["gpu"], info["torch"],
                        info["cudnn"], info["nccl"], "%.3f" % peak])
            f.flush()
            if (run.get("profile") or a.profile_all) and a.profile_dir:
                os.makedirs(a.profile_dir, exist_ok=True)
                profile(step, dev, os.path.join(a.profile_dir, run["name"]))
            print("%-32s gpu %8.3f ms  sync %8.3f ms  (%.1f s)" %
                  (run["name"], gmed, hmed, time.perf_counter() - t0), flush=True)
            del step
            if dev.type == "cuda":
                torch.cuda.empty_cache()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
