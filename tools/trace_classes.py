#!/usr/bin/env python3
"""GPU time per op class in a torch.profiler Chrome trace, beside ddpsim's prediction.

Reads a trace written by torch.profiler (record_shapes; bench/torch_measure.py's
`profile` runs) and attributes every GPU activity (kernel, memcpy, memset) to the
PyTorch CPU op that launched it: the kernel's `External id` names that op, and the
ops around it on the same host thread (by time containment) give its context:
the autograd node (`evaluate_function: MmBackward0`), the optimizer step
(`Optimizer.step#...`), GradScaler's ops. Each kernel lands in one class, named
as ddpsim's op classes (compute.h):

  conv, matmul, attention         GEMM-like (attention: 4-d batched products,
                                  scaled_dot_product_attention)
  lmhead                          a matmul whose layer has the vocabulary as its
                                  output features (> 30000; out_features, never
                                  the token count): the LM head (matmul)
  memory:elementwise              pointwise ops (add, mul, gelu, dropout, where, ...)
  memory:norm                     layer_norm, batch_norm (and their backward)
  memory:softmax                  softmax (attention's)
  loss                            log_softmax, nll_loss / cross entropy, and every other
                                  kernel on the logits (an op whose input's last dimension
                                  is the vocabulary, > 30000: a language model's shifted
                                  logits' copies, their cast to fp32): ddpsim's loss op
  memory:cast                     dtype conversions (aten::_to_copy, copy_ between
                                  dtypes): autocast's casts and their backward
  memory:copy                     other copies (contiguous, cat, index, embedding)
  memory:reduce                   sum, mean, norms (bias gradients, ...)
  optimizer                       everything inside Optimizer.step / zero_grad
  scaler                          GradScaler's unscale / inf check / update

Output: per class, GPU busy ms per iteration (the trace's total divided by
--iters, default 2: bench/torch_measure.py profiles two iterations), the part
launched by autograd's backward, the kernel count per iteration, and the share; with --schedule S.csv (a
`ddpsim --schedule` of the same run) ddpsim's per-class prediction beside it,
its layers grouped by their class in the model file and, for memory layers,
by name (ln/norm -> norm, drop/act/add -> elementwise, ...). --top N lists the
N ops (class, CPU op, input dtypes and shapes) with the most GPU time.
--attention-block (transformer traces) adds a row comparing the whole attention
block with ddpsim's attention class: ddpsim's attention layers (<parent>.core) hold
every op between the projections (the two batched products, scale, mask, softmax,
dropout, the heads' split and merge copies, autocast's casts), so its `attention`
row is that block, while the trace's `attention` row is only the products. The
block is every kernel of class attention plus every kernel launched by an op with a
4-d input (batch, heads, tokens, x: the scores, the heads' layouts, the mask).

Standard library only:
  python3 tools/trace_classes.py TRACE.json.gz [--schedule S.csv] [--model M.yaml] [--top 20]
"""

import argparse
import collections
import csv
import gzip
import json
import re
import sys

GEMM = ("aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm", "aten::addmv", "aten::mv",
        "aten::_scaled_mm", "aten::addbmm")
CONV = ("aten::cudnn_convolution", "aten::convolution_backward", "aten::_convolution",
        "aten::cudnn_convolution_transpose", "aten::convolution")
ATTN = ("aten::_scaled_dot_product", "aten::_flash_attention", "aten::_efficient_attention")
NORM = ("layer_norm", "batch_norm", "group_norm", "GammaBeta")
LOSS = ("log_softmax", "nll_loss", "cross_entropy")
SOFTMAX = ("softmax",)
CAST = ("aten::_to_copy",)
COPYLIKE = ("aten::copy_", "aten::cat", "aten::index", "aten::embedding", "aten::gather",
            "aten::scatter", "aten::clone", "aten::contiguous", "aten::embedding_dense_backward",
            "aten::index_put_", "aten::_index_put_impl_", "aten::fill_", "aten::zero_",
            "aten::zeros", "aten::ones", "aten::arange", "aten::max_pool2d_with_indices",
            "aten::max_pool2d_with_indices_backward", "aten::embedding_backward")
REDUCE = ("aten::sum", "aten::mean", "aten::norm", "aten::linalg_vector_norm", "aten::max",
          "aten::amax", "aten::min")
VOCAB_MIN = 30000
DTYPES = ("float", "c10::Half", "c10::BFloat16", "double")


def load(path):
    op = gzip.open(path, "rt") if path.endswith(".gz") else open(path)
    with op as f:
        return json.load(f)["traceEvents"]


def ops_by_external_id(events):
    """The cpu_op events that carry input shapes, grouped by their External id (the id
    a kernel's launch shares with the aten op that launched it)."""
    ops = collections.defaultdict(list)
    for e in events:
        if e.get("cat") == "cpu_op" and "Input Dims" in e.get("args", {}):
            ops[e["args"].get("External id")].append(e)
    return ops


def ancestors_by_id(events):
    """External id -> the names of the ops containing it on its thread, outermost first."""
    by_tid = collections.defaultdict(list)
    for e in events:
        if e.get("ph") == "X" and e.get("cat") in ("cpu_op", "user_annotation"):
            by_tid[e["tid"]].append(e)
    chain_of = {}
    for evs in by_tid.values():
        evs.sort(key=lambda e: (e["ts"], -e["dur"]))
        stack = []
        for e in evs:
            while stack and stack[-1]["ts"] + stack[-1]["dur"] <= e["ts"]:
                stack.pop()
            stack.append(e)
            eid = e["args"].get("External id")
            if eid is not None:
                chain_of[eid] = [s for s in stack]
    return chain_of


GPU_CATS = ("kernel", "gpu_memcpy", "gpu_memset")


def gpu_activities(events, chain_of=None):
    """Each GPU activity (kernel, memcpy, memset) in the trace's order, with the chain of ops
    that launched it (ancestors_by_id, [] where none): what every per-kernel reader walks."""
    if chain_of is None:
        chain_of = ancestors_by_id(events)
    for e in events:
        if e.get("cat") in GPU_CATS:
            yield e, chain_of.get(e["args"].get("External id"), [])


def dims(e):
    return e["args"].get("Input Dims") or []


def types(e):
    return e["args"].get("Input type") or []


# where a forward GEMM op's weight (the operand whose last or first dimension is the
# layer's output features) sits in its Input Dims: (operand index, dimension index)
WEIGHT_OUT = {"aten::linear": (1, 0), "aten::matmul": (1, -1), "aten::mm": (1, -1),
              "aten::bmm": (1, -1), "aten::_scaled_mm": (1, -1), "aten::addmm": (2, -1),
              "aten::baddbmm": (2, -1), "aten::addbmm": (2, -1), "aten::addmv": (1, 0),
              "aten::mv": (0, 0)}


def autograd_node(chain):
    """The innermost autograd node op of chain that carries Input Dims (its incoming
    gradient first), or None: the node "X" under "autograd::engine::evaluate_function: X"."""
    nodes = [c["name"].split("evaluate_function: ")[-1] for c in chain
             if "evaluate_function:" in c["name"]]
    if not nodes:
        return None
    return next((c for c in chain if c["name"] == nodes[-1] and dims(c)), None)


def out_features(chain, gemm):
    """The output features of the layer whose GEMM `gemm` (an op of chain) is: in a
    backward, the last dimension of the autograd node's incoming gradient (the forward's
    output [tokens, N]); in the forward, the weight operand's N (WEIGHT_OUT). Never the
    token count M, which a long sequence or a big batch takes past VOCAB_MIN (32768
    tokens of a 768 -> 3072 addmm are not an LM head). 0 where the shapes are missing."""
    node = autograd_node(chain)
    if node is not None:
        g = dims(node)[0]
        return g[-1] if isinstance(g, list) and g and isinstance(g[-1], int) else 0
    at = WEIGHT_OUT.get(gemm["name"])
    d = dims(gemm)
    if at is None or len(d) <= at[0] or not isinstance(d[at[0]], list) or not d[at[0]]:
        return 0
    n = d[at[0]][at[1]]
    return n if isinstance(n, int) else 0


def classify(chain):
    """The class of a kernel launched inside `chain` (outermost first)."""
    names = [e["name"] for e in chain]
    if any(n.startswith("Optimizer.step") or n.startswith("Optimizer.zero_grad") for n in names):
        return "optimizer"
    if any("_amp_" in n or "GradScaler" in n for n in names):
        return "scaler"
    inner = names[-1] if names else ""
    # the outermost aten op below any autograd node / annotation: what the user called
    aten = [e for e in chain if e["name"].startswith("aten::")]
    outer = aten[0]["name"] if aten else inner
    if any(n.startswith(ATTN) for n in names):
        return "attention"
    if any(n in CONV for n in names):
        return "conv"
    node = next((n for n in names if "evaluate_function:" in n), "")
    if any(k in n.lower() for n in names for k in NORM):
        return "memory:norm"
    if any(k in n for n in names for k in LOSS) or "LogSoftmax" in node or "NllLoss" in node:
        return "loss"
    if any(k in n for n in names for k in SOFTMAX) or "Softmax" in node:
        return "memory:softmax"
    gemm = next((e for e in aten if e["name"] in GEMM or e["name"] in ("aten::matmul",
                                                                        "aten::linear")), None)
    if gemm is not None and any(e["name"] in GEMM for e in aten):
        shapes = dims(gemm)
        if gemm["name"] == "aten::matmul" and shapes and len(shapes[0]) == 4:
            return "attention"
        if "Bmm" in node or "UnsafeViewBackward" in node or gemm["name"] in ("aten::bmm",
                                                                               "aten::baddbmm"):
            return "attention"
        if out_features(chain, gemm) > VOCAB_MIN:
            return "lmhead"
        return "matmul"
    if any(t in DTYPES and isinstance(s, list) and len(s) >= 2 and isinstance(s[-1], int) and
           s[-1] > VOCAB_MIN for e in aten for s, t in zip(dims(e), types(e))):
        return "loss"  # a tensor on the logits (sizes and stride lists are not tensors)
    if outer in CAST or "ToCopyBackward" in node or (
            inner == "aten::copy_" and len(set(t for t in types(chain[-1]) if t in DTYPES)) > 1):
        return "memory:cast"
    if outer in COPYLIKE or inner in COPYLIKE or "Embedding" in node:
        return "memory:copy"
    if outer in REDUCE or inner in REDUCE:
        return "memory:reduce"
    return "memory:elementwise"


def in_attention_block(cls, chain):
    """A kernel of the attention block (--attention-block): the batched products, or any
    kernel an op with a 4-d input launched (transformers have no other 4-d tensors)."""
    if cls == "attention":
        return True
    return any(isinstance(d, list) and len(d) == 4
               for e in chain if e["name"].startswith("aten::") for d in dims(e))


CONV_OPS = ("aten::convolution", "aten::convolution_backward")
CUDNN_TRANSPOSES = ("nchwToNhwc", "nhwcToNchw")


def conv_ops(events):
    """Every convolution op of a trace with its GPU activities, for the convolution fits
    (bench/conv_call_fit.py, bench/conv_tile_fit.py): {External id: op}, in the order of
    each op's first activity, one op per aten::convolution (the forward) or
    aten::convolution_backward (the backward: dgrad and wgrad, as its output mask says)
    whose activities classify as "conv". Each op is a dict:
      pass     "fwd" or "bwd"
      x, w     the input's (N, C, H, W) and the weight's (Cout, Cin / groups, kh, kw)
               dims (Input Dims; the backward's are its 2nd and 3rd inputs)
      out      the output's (Ho, Wo): the forward's from stride and padding (Concrete
               Inputs 3, 4), the backward's its grad_output's
      groups   Concrete Inputs 8 (forward) or 9 (backward)
      mask     the backward's output mask (Concrete Inputs 10: input, weight, bias
               gradients), None for the forward
      flops    2 N Cout Ho Wo (Cin / groups) kh kw, the backward's once per gradient of
               input or weight it computes (ddpsim's FLOPs, tools/export_model.py)
      kernels  its GPU activities in the trace's order (kernels, memsets: cuDNN's
               helpers), cuDNN's NCHW<->NHWC transposes left out (ddpsim charges
               them apart)."""
    ops = {}
    for e, chain in gpu_activities(events):
        op = next((c for c in chain if c["name"] in CONV_OPS), None)
        if op is None or classify(chain) != "conv":
            continue
        if any(t in e["name"] for t in CUDNN_TRANSPOSES):
            continue
        eid = op["args"]["External id"]
        if eid not in ops:
            ci, d = op["args"]["Concrete Inputs"], op["args"]["Input Dims"]
            if op["name"] == "aten::convolution":
                x, w = d[0], d[1]
                stride, pad, groups = json.loads(ci[3]), json.loads(ci[4]), int(ci[8])
                ho = (x[2] + 2 * pad[0] - w[2]) // stride[0] + 1
                wo = (x[3] + 2 * pad[1] - w[3]) // stride[1] + 1
                f = 2.0 * x[0] * w[0] * ho * wo * w[1] * w[2] * w[3]
                pss, mask = "fwd", None
            else:
                go, x, w = d[0], d[1], d[2]
                ho, wo = go[2], go[3]
                groups, mask = int(ci[9]), json.loads(ci[10].lower())
                f = 2.0 * go[0] * go[1] * ho * wo * w[1] * w[2] * w[3] * (mask[0] + mask[1])
                pss = "bwd"
            ops[eid] = {"pass": pss, "x": x, "w": w, "out": (ho, wo), "groups": groups,
                        "mask": mask, "flops": f, "kernels": []}
        ops[eid]["kernels"].append(e)
    return ops


def trace_classes(events):
    per = collections.defaultdict(lambda: [0.0, 0, 0.0])  # ms, kernels, of which backward
    top = collections.defaultdict(float)
    block = [0.0, 0, 0.0]  # the attention block (--attention-block)
    for e, chain in gpu_activities(events):
        cls = classify(chain)
        per[cls][0] += e["dur"] / 1e3
        per[cls][1] += 1
        bwd = any("evaluate_function:" in c["name"] for c in chain)
        if bwd:
            per[cls][2] += e["dur"] / 1e3
        if cls not in ("optimizer", "scaler") and in_attention_block(cls, chain):
            block[0] += e["dur"] / 1e3
            block[1] += 1
            block[2] += e["dur"] / 1e3 if bwd else 0
        if chain:
            aten = [c for c in chain if c["name"].startswith("aten::")] or chain
            key = (cls, aten[0]["name"], str(types(aten[0])[:3]), str(dims(aten[0])[:3]))
        else:
            key = (cls, e["name"][:50], "", "")
        top[key] += e["dur"] / 1e3
    per_block = {"attention block": block}
    return per, top, per_block


def schedule_class(name, layer_class):
    if name == "optimizer":
        return "optimizer"
    if name == "loss":
        return "loss"
    if layer_class == "batch_norm":
        return "memory:norm"
    if layer_class in ("conv", "matmul", "attention"):
        if layer_class == "matmul" and ("lm_head" in name or name.endswith("decoder")):
            return "lmhead"
        return layer_class
    n = name.lower()
    if "ln" in n or "norm" in n or "bn" in n:
        return "memory:norm"
    if "wte" in n or "wpe" in n or "embed" in n or "pool" in n or "arange" in n:
        return "memory:copy"
    return "memory:elementwise"


def model_classes(path):
    """Layer name -> class, from a model file (no YAML library: its layers' lines);
    a layer owning a NAME.running_mean buffer is a BatchNorm (as model_names.c reads it)."""
    cls, name = {}, None
    with open(path) as f:
        for line in f:
            m = re.match(r"\s*- \{name: (\S+)\.running_mean,", line)
            if m:
                cls[m.group(1)] = "batch_norm"
                continue
            m = re.match(r"\s*- name: (\S+)", line)
            if m:
                name = m.group(1)
            m = re.match(r"\s*class: (\S+)", line)
            if m and name:
                cls[name] = m.group(1)
    return cls


def schedule_compute_rows(path):
    """Rank 0's compute-stream rows of a ddpsim --schedule (or --trace) CSV, its
    '#' header lines skipped."""
    with open(path) as f:
        return [r for r in csv.DictReader(line for line in f if not line.startswith("#"))
                if r["stream"] == "compute" and r["rank"] == "0"]


def add_schedule_pair_args(ap):
    """An argparse parser's arguments for the trace of a run, its model file and the run's
    two ddpsim schedules, at kernel_overhead 0 (s0) and at --overhead-us (s4): the inputs
    of schedule_overheads (bench/cnn_classes.py, bench/overhead_count.py)."""
    for name in ("trace", "model", "s0", "s4"):
        ap.add_argument(name)
    ap.add_argument("--overhead-us", type=float, default=4.0)


def schedule_overheads(s0, s4, overhead_us, who):
    """The compute rows of one run's schedule at kernel_overhead overhead_us (s4),
    each with the overheads ddpsim charges it: its time less the same row's in the
    schedule at 0 (s0), over overhead_us. Exits, naming who, if the two are not
    the same schedule."""
    rows0, rows4 = schedule_compute_rows(s0), schedule_compute_rows(s4)
    if [r["name"] for r in rows0] != [r["name"] for r in rows4]:
        sys.exit("%s: %s and %s are not the same schedule" % (who, s0, s4))
    return [(r4, (float(r4["dur_us"]) - float(r0["dur_us"])) / overhead_us)
            for r0, r4 in zip(rows0, rows4)]


def schedule_per_class(path, layer_cls):
    per = collections.defaultdict(lambda: [0.0, 0, 0.0])  # ms, ops, of which backward
    for r in schedule_compute_rows(path):
        name = r["name"].split("/")[0]
        # cuDNN's layout transposes (X.transpose): the trace counts them in
        # the convolution's op, so they join X's class
        if name.endswith(".transpose"):
            name = name[:-len(".transpose")]
        # a BatchNorm's num_batches_tracked.add_(1) (X.num_batches_tracked): the trace
        # classes its int64 add_ as elementwise, outside the batch-norm op
        if name.endswith(".num_batches_tracked"):
            cls = "memory:elementwise"
        else:
            cls = schedule_class(name, layer_cls.get(name, layer_cls.get(r["name"], "")))
        per[cls][0] += float(r["dur_us"]) / 1e3
        per[cls][1] += 1
        if r["kind"] == "bwd":
            per[cls][2] += float(r["dur_us"]) / 1e3
    return per


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("trace")
    ap.add_argument("--iters", type=int, default=2, help="iterations in the trace (2)")
    ap.add_argument("--schedule", help="ddpsim --schedule CSV of the same run")
    ap.add_argument("--model", help="its model file (layer classes; default from the schedule)")
    ap.add_argument("--top", type=int, default=0, help="list the N ops with most GPU time")
    ap.add_argument("--attention-block", action="store_true",
                    help="add the whole attention block beside ddpsim's attention class")
    a = ap.parse_args()
    per, top, per_block = trace_classes(load(a.trace))
    pred = None
    if a.schedule:
        model = a.model
        if not model:
            with open(a.schedule) as f:
                for line in f:
                    m = re.search(r"model=(\S+)", line)
                    if m:
                        model = m.group(1)
                        break
        pred = schedule_per_class(a.schedule, model_classes(model) if model else {})
    classes = sorted(set(per) | set(pred or {}))
    print("%-20s %9s %8s %8s %6s" % ("class", "trace_ms", "bwd_ms", "kernels", "share") +
          ("  %9s %8s %6s %7s" % ("ddpsim_ms", "bwd_ms", "ops", "ratio") if pred else ""))
    total = sum(v[0] for v in per.values()) / a.iters
    ptotal = sum(v[0] for v in pred.values()) if pred else 0
    for c in classes:
        ms, n, bwd = per.get(c, (0.0, 0, 0.0))
        line = "%-20s %9.3f %8.3f %8.1f %5.1f%%" % (c, ms / a.iters, bwd / a.iters, n / a.iters,
                                                     100 * ms / a.iters / total if total else 0)
        if pred:
            pms, pn, pbwd = pred.get(c, (0.0, 0, 0.0))
            line += "  %9.3f %8.3f %6d %7s" % (pms, pbwd, pn,
                                               "%.2f" % (ms / a.iters / pms) if pms else "-")
        print(line)
    print("%-20s %9.3f" % ("total", total) +
          ("  %37s %9.3f %23.2f" % ("", ptotal, total / ptotal) if pred else ""))
    if a.attention_block:
        ms, n, bwd = per_block["attention block"]
        line = "%-20s %9.3f %8.3f %8.1f %5.1f%%" % ("attention block", ms / a.iters,
                                                     bwd / a.iters, n / a.iters,
                                                     100 * ms / a.iters / total if total else 0)
        if pred:
            pms, pbwd, pn = pred.get("attention", (0.0, 0, 0.0))[0], \
                pred.get("attention", (0.0, 0, 0.0))[2], pred.get("attention", (0.0, 0, 0.0))[1]
            line += "  %9.3f %8.3f %6d %7s" % (pms, pbwd, pn,
                                               "%.2f" % (ms / a.iters / pms) if pms else "-")
        print(line)
    if a.top:
        print("\ntop ops (ms per iteration): class, op, input types, input shapes")
        for (c, name, ty, sh), ms in sorted(top.items(), key=lambda kv: -kv[1])[:a.top]:
            print("%8.3f  %-18s %-28s %s %s" % (ms / a.iters, c, name, ty, sh))
    return 0


if __name__ == "__main__":
    sys.exit(main())
