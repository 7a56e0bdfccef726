"""The copies, casts and reductions of a torch.profiler trace, kernel family by kernel
family, beside the bytes and kernels ddpsim's model file charges for the same work.

    python3 bench/copy_cast_families.py PROFILE.json.gz models/M.yaml BATCH [--amp fp16|bf16]

PROFILE: a two-iteration trace of bench/torch_measure.py --profile-dir (times halved to
one iteration). The kernels are those bench/trace_groups.py puts in its copy/cast/reduce
group (tools/trace_classes.py), plus the casts it counts elsewhere (a cast under an
attention or loss op), each in one family:

  upcast      a copy_ from a half type (fp16, bf16) to fp32: CUDA runs it on the
              dynamic-casting path (CUDALoops.cuh gpu_kernel_impl: LoadWithCast,
              launch_unrolled_kernel), autocast's casts for its fp32 ops and the
              ToCopyBackward0 of every fp32 -> half cast, weights' included
  downcast    a copy_ from fp32 to a half type: Copy.cu's gpu_kernel_nocast (vectorised)
  reduce      aten::sum in backward (bias gradients: reduce_kernel over rows)
  cat         aten::cat (CatArrayBatchedCopy)
  accumulate  aten::add_ (autograd's gradient accumulation)
  other       the rest (embedding backward, fills, memsets, same-dtype copies)

Per family: ms per iteration, kernels, bytes (read + written, from the op's input
shapes and dtypes), GB/s and SM cycles per element (elements of the output, at the
GPU's boost clock, --sms and --mhz; H200 defaults). Then ddpsim's model-file counts for
the same work at BATCH: the activation casts (amp_cast_bytes, split into the upcasts
amp_upcast_bytes names and the rest; their backward the reverse), the engine's casts
(amp_grad_cast_bytes), the weights' casts (fp32 -> half forward, the gradient's
half -> fp32 backward, one kernel per tensor), bwd_reduce_bytes, bwd_copy_bytes and
loss_copy_bytes, in the run's dtypes as compute_layer.c scales them.
Standard library only.
"""
import argparse
import collections
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import trace_classes as tc  # noqa: E402
import trace_groups as tg  # noqa: E402

SIZE = {"float": 4, "c10::Half": 2, "c10::BFloat16": 2, "double": 8, "long int": 8,
        "int": 4, "bool": 1, "unsigned char": 1}
HALF = ("c10::Half", "c10::BFloat16")
FAMILIES = ["upcast", "downcast", "reduce", "cat", "accumulate", "other"]


def numel(shape):
    n = 1
    for d in shape:
        n *= d
    return n


def family(chain):
    """The family of a kernel launched inside chain, and the op that gives its shapes."""
    aten = [e for e in chain if e["name"].startswith("aten::")]
    if not aten:
        return None, None
    inner = aten[-1]
    ty = tc.types(inner)
    if inner["name"] == "aten::copy_" and len(ty) >= 2 and ty[0] != ty[1]:
        if ty[0] == "float" and ty[1] in HALF:
            return "upcast", inner
        if ty[0] in HALF and ty[1] == "float":
            return "downcast", inner
    bwd = any("evaluate_function:" in e["name"] for e in chain)
    if inner["name"] == "aten::sum" and bwd:
        return "reduce", inner
    if inner["name"] == "aten::cat":
        return "cat", inner
    if inner["name"] == "aten::add_":
        return "accumulate", inner
    return "other", inner


def op_bytes(fam, op):
    """Bytes read + written and output elements of one op's kernel, from its shapes."""
    d, ty = tc.dims(op), tc.types(op)
    if fam in ("upcast", "downcast"):
        n = numel(d[0])
        return n * (SIZE[ty[0]] + SIZE[ty[1]]), n
    if fam == "reduce":
        n = numel(d[0])
        return n * SIZE.get(ty[0], 4), n  # the output (a row) is small
    if fam == "cat":
        n = sum(numel(s) for s in d[0]) if d and isinstance(d[0], list) else 0
        return 2 * n * 2, n  # the inputs' dtype is not recorded for a TensorList: 2 bytes
    if fam == "accumulate":
        n = numel(d[0]) if d else 0
        return 3 * n * SIZE.get(ty[0], 4) if ty else 0, n
    return 0, 0


def trace_families(path, sms, hz):
    per = collections.defaultdict(lambda: [0.0, 0.0, 0.0, 0.0])  # ms, kernels, bytes, elems
    seen = set()
    for e, chain in tc.gpu_activities(tc.load(path)):
        cls = tc.classify(chain)
        if cls in ("optimizer", "scaler"):
            continue
        fam, op = family(chain)
        group = tg.trace_group(cls, chain)
        if fam is None or (fam not in ("upcast", "downcast") and group != "copy/cast/reduce"):
            continue  # the other groups' own kernels
        p = per[(fam, group)]
        p[0] += e["dur"] / 2e3
        p[1] += 0.5
        key = (op["args"].get("External id"), op["ts"])
        if key not in seen and e.get("cat") == "kernel":  # one op's bytes once
            seen.add(key)
            b, n = op_bytes(fam, op)
            p[2] += b / 2
            p[3] += n / 2
    print("trace: %s" % path)
    print("%-11s %-17s %8s %8s %9s %7s %8s" % ("family", "trace group", "ms/iter", "kernels",
                                                "MB", "GB/s", "cyc/elem"))
    order = {f: i for i, f in enumerate(FAMILIES)}
    for (f, g), (ms, k, b, n) in sorted(per.items(), key=lambda kv: (order[kv[0][0]],
                                                                     kv[0][1])):
        gbs = b / (ms * 1e6) if ms and b else 0
        cyc = ms * 1e-3 * sms * hz / n if n else 0
        print("%-11s %-17s %8.3f %8.1f %9.1f %7.0f %8.3f" % (f, g, ms, k, b / 1e6, gbs, cyc))
    for g in sorted(set(g for _, g in per)):
        print("%-29s %8.3f" % ("total " + g, sum(v[0] for (_, h), v in per.items() if h == g)))


def model_layers(path):
    """Layer name -> {key: int} of the model file's scalar keys, and parameter shapes."""
    layers, cur, root = collections.OrderedDict(), None, {}
    with open(path) as f:
        for line in f:
            m = re.match(r"  - name: (\S+)", line)
            if m:
                cur = layers.setdefault(m.group(1), {"params": []})
                continue
            m = re.match(r"(\w+): (\d+)$", line)
            if m:
                root[m.group(1)] = int(m.group(2))
                continue
            m = re.match(r"    (\w+): (-?\d+)$", line)
            if m and cur is not None:
                cur[m.group(1)] = int(m.group(2))
            m = re.match(r"      - \{name: \S+, numel: (\d+)", line)
            if m and cur is not None:
                cur["params"].append(int(m.group(1)))
    return layers, root


def model_families(path, batch, amp):
    layers, root = model_layers(path)
    act = 0.5 if amp else 1.0  # compute_impl.h's ds__compute_act_scale: activation dtype over fp32
    rows = collections.OrderedDict((k, [0.0, 0]) for k in (
        "act casts fwd: up", "act casts fwd: down", "act casts bwd: up",
        "act casts bwd: down", "grad casts (down)", "weight casts fwd (down)",
        "weight grad casts (up)", "bwd_reduce", "bwd_copy", "loss_copy"))
    for name, l in layers.items():
        if amp:
            cast = l.get("amp_cast_bytes", 0) * batch
            up = l.get("amp_upcast_bytes", 0) * batch
            rows["act casts fwd: up"][0] += up
            rows["act casts fwd: down"][0] += cast - up
            if l.get("host_amp_nodes", 0) > 0:  # the casts' backward (an input needing grad)
                rows["act casts bwd: up"][0] += cast - up
                rows["act casts bwd: down"][0] += up
            rows["grad casts (down)"][0] += l.get("amp_grad_cast_bytes", 0) * batch
            if l.get("class") in ("matmul", "conv") or l.get("host_amp_casts", 0) and \
                    l["params"] and l.get("class") != "memory":
                for n in l["params"]:
                    rows["weight casts fwd (down)"][0] += 6 * n
                    rows["weight casts fwd (down)"][1] += 1
                    rows["weight grad casts (up)"][0] += 6 * n
                    rows["weight grad casts (up)"][1] += 1
        for key in ("bwd_reduce", "bwd_copy"):
            v = l.get(key + "_bytes", 0)
            if v:
                rows[key][0] += v * batch * act
                rows[key][1] += 1
    rows["loss_copy"][0] = root.get("loss_copy_bytes", 0) * batch * act
    print("model: %s at batch %d%s" % (path, batch, " (amp)" if amp else ""))
    print("%-26s %10s %8s" % ("ddpsim's work", "MB", "kernels"))
    for k, (b, n) in rows.items():
        print("%-26s %10.1f %8s" % (k, b / 1e6, n or "-"))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("trace")
    ap.add_argument("model")
    ap.add_argument("batch", type=int)
    ap.add_argument("--amp", choices=("fp16", "bf16"))
    ap.add_argument("--sms", type=int, default=132)
    ap.add_argument("--mhz", type=float, default=1980)
    a = ap.parse_args()
    trace_families(a.trace, a.sms, a.mhz * 1e6)
    print()
    model_families(a.model, a.batch, a.amp)


if __name__ == "__main__":
    main()
