#!/usr/bin/env python3
"""Record what real DistributedDataParallel runs, in order, per iteration.

Checks the order rules ddpsim's DDP schedule follows (docs/strategies.md,
"DDP's reducer on the GPU"; sim/train/ddp*.c) against real PyTorch on CPU
(gloo), with torch.profiler (record_shapes=True) and data_ptr checks:

  static_graph      the first backward's delay_all_reduce: the local-used map's
                    all-reduce (int32, one per parameter) before the buckets', the
                    copies into the buckets after the whole backward; later
                    iterations in the normal order
  view              gradient_as_bucket_view=True with optimizer.zero_grad()
                    (set_to_none=True): a copy into the bucket view each iteration,
                    .grad sharing the bucket's storage after backward
  view_keep         the same with zero_grad(set_to_none=False): no copy from
                    iteration 1, the gradient divided in place (or nothing)
  find_unused       find_unused_parameters=True: the map's all-reduce after the
                    last bucket's
  default           the plain rules (the division fused into the copy: mul_out)
  (every scenario's model has a BatchNorm: the buffers' broadcast before forward)
  one_buffer        not DDP itself: _broadcast_coalesced (what broadcast_buffers
                    runs) of one 16 MiB buffer against two 8 MiB ones: with one,
                    no cat (the flat tensor shares the buffer's storage) and the
                    copy back onto itself returns at once

Prints, per scenario and iteration, the reducer's work in the order it ran:
top-level ops of interest inside forward (F), backward (B) and zero_grad (Z),
with their input shapes and dtypes, and G for gloo's threads (where the
collective runs); "ready I" where parameter I's AccumulateGrad ran (DDP's
hook follows); "F module forward" where the wrapped model's forward ran; then
where each .grad lives after backward (its own storage or a bucket view).

Run (PyTorch in a virtual environment outside the repository, see
tools/README.md; world size 2 spawns two processes on 127.0.0.1 and prints
rank 0's view):

    /root/venv-torch/bin/python3 tools/ddp_order_probe.py [--world 1|2]
        [--scenarios default,static_graph,view,view_keep,find_unused,one_buffer]
        [--iters 3]

Not part of `make test`. Standard library + torch only.
"""

import argparse
import socket
import sys

try:
    import torch
    import torch.distributed as dist
    import torch.multiprocessing as mp
    from torch.nn.parallel import DistributedDataParallel as DDP
    from torch.profiler import ProfilerActivity, profile, record_function
except ImportError as e:  # pragma: no cover
    sys.stderr.write("ddp_order_probe.py: %s\nthis tool needs PyTorch; see tools/README.md\n" % e)
    sys.exit(2)

SCENARIOS = {
    "default": ({}, True),
    "static_graph": ({"static_graph": True}, True),
    "view": ({"gradient_as_bucket_view": True}, True),
    "view_keep": ({"gradient_as_bucket_view": True}, False),
    "find_unused": ({"find_unused_parameters": True}, True),
    "one_buffer": None,
}
# ops reported where they run in DDP's own code (its forward, the reducer's
# hooks and callbacks), not inside the model's forward or autograd nodes
KEEP_ATEN = {"aten::copy_", "aten::mul_", "aten::mul", "aten::div_", "aten::div",
             "aten::cat", "aten::add_", "aten::zero_", "aten::fill_",
             "aten::flatten_dense_tensors", "aten::unflatten_dense_tensors",
             "aten::_foreach_copy_", "aten::_foreach_div_", "aten::_foreach_mul_"}
PHASES = {"probe:zero_grad": "Z", "probe:forward": "F", "probe:loss": "L",
          "probe:backward": "B"}
MODULE = "probe:module_forward"  # the wrapped model's own forward, inside DDP's


def model_of():
    """Conv + BatchNorm (two float buffers, one int64) + three Linear layers:
    10 parameter tensors, registration order = forward order; the 1024x1024 weight
    (4 MiB) alone fills a 1 MiB-capped bucket, so there are several buckets."""
    torch.manual_seed(0)
    return torch.nn.Sequential(
        torch.nn.Conv2d(3, 4, 3, padding=1), torch.nn.BatchNorm2d(4), torch.nn.ReLU(),
        torch.nn.AdaptiveAvgPool2d(4), torch.nn.Flatten(),
        torch.nn.Linear(64, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 1024),
        torch.nn.ReLU(), torch.nn.Linear(1024, 10))


def reported(name):
    return (name in KEEP_ATEN or name.startswith("gloo:") or name.startswith("c10d::")
            or "reducer" in name or name.startswith("probe:ready"))


def one_buffer(out):
    """_broadcast_coalesced of one 16 MiB float buffer, then of two 8 MiB
    ones (a bucket each, as DDP's _sync_buffers sends a dtype's buffers):
    whether the flat tensor is the buffer itself, and the cat and copy_
    times of the second of two runs (the first warms up)."""
    one = [torch.randn(4 << 20)]
    two = [torch.randn(2 << 20), torch.randn(2 << 20)]
    flat = torch._utils._flatten_dense_tensors(one)
    out.append("== one_buffer (_broadcast_coalesced, 250 MiB buckets as DDP's)")
    out.append("  one 16 MiB buffer: its flat tensor shares its storage: %s"
               % (flat.data_ptr() == one[0].data_ptr()))
    for name, ts in (("one 16 MiB buffer", one), ("two 8 MiB buffers", two)):
        for _ in range(2):
            with profile(activities=[ProfilerActivity.CPU]) as prof:
                dist._broadcast_coalesced(dist.group.WORLD, ts, 250 << 20, 0)
        times = ["%s %.0f us" % (e.name, e.cpu_time_total) for e in prof.events()
                 if e.name in ("aten::cat", "aten::copy_")
                 and (e.cpu_parent is None or e.cpu_parent.name != "aten::cat")]
        out.append("  %s: %s" % (name, ", ".join(times) or "no cat, no copy_"))


def run_scenario(rank, world, scenario, iters, out):
    if scenario == "one_buffer":
        one_buffer(out)
        return
    kw, set_to_none = SCENARIOS[scenario]
    model = model_of()
    ddp = DDP(model, bucket_cap_mb=1, **kw)
    opt = torch.optim.SGD(model.parameters(), lr=0.0)  # lr 0: the weights stay put
    x = torch.randn(2, 3, 8, 8, generator=torch.Generator().manual_seed(rank))
    params = list(model.parameters())
    # post-accumulate-grad hooks run inside AccumulateGrad, just before DDP's
    # reducer hook (a post hook of the same node): "ready i" marks each hook
    def ready(i):
        with record_function("probe:ready %d" % i):
            pass
    hs = [p.register_post_accumulate_grad_hook(lambda p, i=i: ready(i))
          for i, p in enumerate(params)]
    spans = []
    hs.append(model.register_forward_pre_hook(
        lambda m, a: spans.append(record_function(MODULE).__enter__())))
    hs.append(model.register_forward_hook(lambda m, a, o: spans.pop().__exit__(None, None, None)))
    lines = []
    for it in range(iters):
        with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
            with record_function("probe:zero_grad"):
                opt.zero_grad(set_to_none=set_to_none)
            with record_function("probe:forward"):
                y = ddp(x)
            with record_function("probe:loss"):
                loss = y.square().mean()
            with record_function("probe:backward"):
                loss.backward()
        opt.step()
        lines.append("iteration %d" % it)
        lines += timeline(prof)
        lines.append("  after backward: " + grad_homes(params))
    for h in hs:
        h.remove()
    out.append("== %s (world %d, %s, zero_grad(set_to_none=%s), bucket_cap_mb=1)" % (
        scenario, world, ", ".join("%s=%s" % kv for kv in kw.items()) or "default rules",
        set_to_none))
    out += lines
    del ddp


def timeline(prof):
    """The reported events in start order, one line each: PHASE NAME SHAPES
    (DTYPES); PHASE as PHASES, G for gloo's own threads (the collective's
    run); the model's own forward as the one line "F module forward"."""
    dtypes = {}
    try:  # dtypes from the kineto events (FunctionEvent keeps shapes only)
        res = prof.profiler.kineto_results
        t0 = res.trace_start_ns()
        for k in res.events():
            dtypes[(k.name(), round((k.start_ns() - t0) / 1000))] = k.dtypes()
    except Exception:  # noqa: BLE001 (another profiler API: shapes only)
        pass
    rows = []
    evs = sorted(prof.events(), key=lambda e: e.time_range.start)
    for e in evs:
        if e.name == MODULE:
            rows.append("  F module forward")
        if not reported(e.name):
            continue
        phase, skip, parent = "G", False, e.cpu_parent
        while parent is not None:
            n = parent.name
            if n in PHASES:
                phase = PHASES[n]
                break
            if n == MODULE or reported(n) and not n.startswith("probe:ready") \
                    or n.startswith("autograd::engine::evaluate_function:") \
                    and "AccumulateGrad" not in n \
                    or n.startswith("aten::") and n not in KEEP_ATEN:
                skip = True  # the model's own work, or inside a reported op
                break
            parent = parent.cpu_parent
        if skip or phase == "L" or phase == "G" and not e.name.startswith("gloo:"):
            continue
        text = e.name
        if e.name.startswith("probe:ready"):
            text = "ready " + e.name.split()[1]
        shapes = ["x".join(str(d) for d in s) for s in (e.input_shapes or []) if s]
        if shapes:
            text += " " + ";".join(shapes)
        dt = dtypes.get((e.name, round(e.time_range.start)))
        if dt and shapes:
            text += " (" + ",".join(d for d in dt if d) + ")"
        rows.append("  %s %s" % (phase, text))
    return rows


def grad_homes(params):
    """Where each .grad lives: 'own' (its own storage) or 'bucketS+OFF' (a
    view into a storage shared with other gradients, S = that storage's order of
    first appearance)."""
    stor = {}
    out = []
    for i, p in enumerate(params):
        g = p.grad
        if g is None:
            out.append("%d:None" % i)
            continue
        st = g.untyped_storage()
        if st.nbytes() == g.numel() * g.element_size():
            out.append("%d:own" % i)
        else:
            s = stor.setdefault(st.data_ptr(), len(stor))
            out.append("%d:bucket%d+%d" % (i, s, g.storage_offset()))
    return " ".join(out)


def worker(rank, world, port, scenarios, iters):
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=world,
                            init_method="tcp://127.0.0.1:%d" % port)
    out = []
    for s in scenarios:
        run_scenario(rank, world, s, iters, out)
    dist.destroy_process_group()
    if rank == 0:
        print("# torch %s; gloo world size %d on CPU; tools/ddp_order_probe.py" % (
            torch.__version__, world))
        print("# parameters: " + " ".join("%d=%s%s" % (i, n, list(p.shape)) for i, (n, p) in
                                          enumerate(model_of().named_parameters())))
        print("\n".join(out))


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--world", type=int, choices=(1, 2), default=1)
    ap.add_argument("--scenarios", default=",".join(SCENARIOS))
    ap.add_argument("--iters", type=int, default=3)
    args = ap.parse_args(argv[1:])
    scenarios = args.scenarios.split(",")
    bad = [s for s in scenarios if s not in SCENARIOS]
    if bad:
        ap.error("--scenarios: %s not among %s" % (",".join(bad), ",".join(SCENARIOS)))
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    if args.world == 1:
        worker(0, 1, port, scenarios, args.iters)
    else:
        mp.spawn(worker, args=(args.world, port, scenarios, args.iters), nprocs=args.world)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
