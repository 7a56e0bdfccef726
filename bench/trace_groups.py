"""GPU time per iteration by kernel group: a torch.profiler trace of a lent GPU's run
against the ddpsim schedule that predicts it, side by side.

    python3 bench/trace_groups.py PROFILE.json.gz SCHEDULE.csv models/M.yaml

PROFILE: a trace of bench/torch_measure.py --profile-dir (two iterations; times are
halved to one). SCHEDULE: `bin/ddpsim ... --world-size 1 --strategy single --schedule
SCHEDULE.csv` for the same model, batch and math. Groups: the optimizer, the attention
block (tools/trace_classes.py: the kernels launched under the attention module, from
QK^T to the output product), the linears' GEMMs (the LM head included), layer norms,
the loss, other elementwise kernels, and the rest (copies, casts, reductions). ddpsim's
matmul layers also hold their bias-gradient reductions, backward copies and casts, which
the trace puts under the rest; read the two rows together. Likewise a layer norm's
backward in ddpsim holds autograd's addition of its output's gradients where the output
feeds two ops (bwd_accum_bytes: BERT's, whose output feeds the next dense layer and the
residual), an add the trace puts under elementwise; and ddpsim's kernels each carry
kernel_overhead, which the trace's kernel times do not.
"""
import collections
import csv
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
import trace_classes as tc  # noqa: E402

GROUPS = ["linear GEMMs", "attn block", "elementwise", "layernorm", "copy/cast/reduce",
          "loss", "optimizer"]
SCHEDULE_GROUP = {"attention": "attn block", "matmul": "linear GEMMs",
                  "lmhead": "linear GEMMs", "memory:norm": "layernorm", "loss": "loss",
                  "optimizer": "optimizer", "memory:elementwise": "elementwise"}


def trace_group(cls, chain):
    if cls in ("optimizer", "scaler"):
        return "optimizer"
    if tc.in_attention_block(cls, chain):
        return "attn block"
    if cls in ("matmul", "lmhead"):
        return "linear GEMMs"
    return {"memory:norm": "layernorm", "loss": "loss",
            "memory:elementwise": "elementwise"}.get(cls, "copy/cast/reduce")


def main(trace, schedule, model):
    measured = collections.defaultdict(float)
    for e, chain in tc.gpu_activities(tc.load(trace)):
        measured[trace_group(tc.classify(chain), chain)] += e["dur"] / 2e3  # 2 iterations, us
    layer_class = tc.model_classes(model)
    predicted = collections.defaultdict(float)
    with open(schedule) as f:
        for r in csv.DictReader(line for line in f if not line.startswith("#")):
            if r["stream"] != "compute" or r["rank"] != "0":
                continue
            name = r["name"].split("/")[0]
            cls = tc.schedule_class(name, layer_class.get(name, ""))
            predicted[SCHEDULE_GROUP.get(cls, "copy/cast/reduce")] += float(r["dur_us"]) / 1e3
    print("%-18s %8s %8s %8s %7s" % ("group (ms/iter)", "trace", "ddpsim", "d-t", "d/t-1"))
    for g in GROUPS:
        t, d = measured[g], predicted[g]
        print("%-18s %8.2f %8.2f %+8.2f %+6.0f%%" % (g, t, d, d - t, 100 * (d / t - 1) if t else 0))
    t, d = sum(measured.values()), sum(predicted.values())
    print("%-18s %8.2f %8.2f %+8.2f %+6.1f%%" % ("total", t, d, d - t, 100 * (d / t - 1)))


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    main(*sys.argv[1:])
