#!/usr/bin/env python3
"""Capture DDP's bucket layouts, gradient-ready order and saved-activation
bytes from real PyTorch, as conformance data for ddpsim's DDP model.

For each model of tools/torch_models.py, on CPU with torch.distributed's
gloo backend at world size 1, wraps the model in DistributedDataParallel
with bucket_cap_mb unset, 1, 5, 25 and 100, each with the default rules,
find_unused_parameters=True and static_graph=True, runs 3 iterations
(forward, backward, no optimizer step: the layout does not depend on the
values) and reads the reducer's buckets (reducer._get_zeros_like_grad_buckets():
each bucket's parameters in bucket order; bucket 0 is all-reduced first)
after each iteration's forward, where a rebuild takes effect. Writes into
--out (default tests/data/conformance):

  buckets.csv      model,rule,bucket_cap_mb,phase,bucket,bytes,params
                   phase iter0: the layout DDP builds at construction and uses
                   in iteration 0; iter1: iteration 1's layout where it is still
                   iteration 0's and a rebuild follows (static_graph); rebuilt:
                   the layout after the one rebuild (from iteration 1 for the
                   default rules, 2 for static_graph; find_unused_parameters
                   never rebuilds). bytes = sum of the tensors' fp32 bytes;
                   params = registration indices in the bucket's order.
  grad_ready.csv   model,position,param: the order gradients became ready in
                   iteration 0's backward (post-accumulate-grad hooks, which
                   fire on the AccumulateGrad nodes DDP's reducer hooks).
  saved_bytes.csv  model,attention,batch,saved_bytes_total: bytes autograd
                   saves in one training forward (saved_tensors_hooks, unique
                   storages, parameters and buffers excluded, dropout as
                   aten.native_dropout with a bool mask as on CUDA; the loss
                   excluded), at the batch and input size tools/export_model.py
                   uses, eager and fused attention for the transformers (fused
                   without dropout, so that CPU takes its flash kernel, which
                   saves what CUDA's flash attention saves).

The bucket runs use small inputs (64x64 images, 32-token sequences): the
layouts depend only on parameter sizes and the order of the backward, not on
the input size. Standard library + torch only.
"""

import argparse
import datetime
import os
import socket
import sys

INSTALL = ("this tool needs PyTorch; install it into a virtual environment outside the "
           "repository:\n  python3 -m venv /root/venv-torch\n"
           "  /root/venv-torch/bin/pip install torch torchvision transformers")

try:
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP
except ImportError as e:  # pragma: no cover
    sys.stderr.write("capture_conformance.py: %s\n%s\n" % (e, INSTALL))
    sys.exit(2)

TOOLS = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(TOOLS)
sys.path.insert(0, TOOLS)
import export_model  # noqa: E402  (the exporter's recorder, for saved bytes)
import torch_models  # noqa: E402

CAPS = [None, 1, 5, 25, 100]
RULES = [("default", {}), ("find_unused", {"find_unused_parameters": True}),
         ("static_graph", {"static_graph": True})]
ITERS = 3
IMAGE_MODELS = ("resnet50", "resnet101", "resnext50_32x4d", "resnext101_32x8d",
                "resnext101_32x4d", "se_resnext101_32x4d", "mobilenet_v2", "vgg16")
SMALL = dict({m: {} for m in IMAGE_MODELS}, **{"bert-base": {"seq": 32}, "gpt2": {"seq": 32},
                                               "bert-base-squad": {"seq": 32},
                                               "bert-large-squad": {"seq": 32},
                                               "bert-base-squad-dle": {"seq": 32},
                                               "bert-large-squad-dle": {"seq": 32}})


def small_input(name, batch):
    if name in IMAGE_MODELS:
        model, _, meta = torch_models.MODELS[name](batch=batch)
        x = torch.randn(batch, 3, 64, 64, generator=torch.Generator().manual_seed(0))
        return model, x, meta
    return torch_models.MODELS[name](batch=batch, **SMALL[name])


def layout(ddp, index):
    out = []
    for b in ddp.reducer._get_zeros_like_grad_buckets():
        ps = [index[id(p)] for p in b.parameters()]
        out.append((sum(4 * p.numel() for p in b.parameters()), ps))
    return out


def run_config(name, rule, kw, cap, ready_out):
    torch.manual_seed(0)
    model, x, meta = small_input(name, 1)
    model.train()
    params = list(model.parameters())
    index = {id(p): i for i, p in enumerate(params)}
    args = dict(kw)
    if cap is not None:
        args["bucket_cap_mb"] = cap
    ddp = DDP(model, **args)
    layouts = []
    for it in range(ITERS):
        if ready_out is not None and it == 0:
            hs = [p.register_post_accumulate_grad_hook(lambda _p, i=i: ready_out.append(i))
                  for i, p in enumerate(params)]
        out = export_model.call(ddp, x)
        layouts.append(layout(ddp, index))
        export_model.loss_of(out, meta.get("loss", "classify")).backward()
        if ready_out is not None and it == 0:
            for h in hs:
                h.remove()
        for p in params:
            p.grad = None
    rows = [("iter0", layouts[0])]
    changed = [i for i in range(1, ITERS) if layouts[i] != layouts[i - 1]]
    if len(changed) > 1:
        raise RuntimeError("%s %s %s: buckets changed more than once" % (name, rule, cap))
    if changed:
        k = changed[0]
        for i in range(1, k):
            rows.append(("iter%d" % i, layouts[i]))
        rows.append(("rebuilt", layouts[k]))
    del ddp
    return rows, (changed[0] if changed else None)


def saved_bytes(name, attention):
    model, x, meta = torch_models.MODELS[name](batch=2, attention=attention)
    rec, _, _ = export_model.record(model, x, meta.get("loss", "classify"))
    return sum(l.act_bytes for l in rec.layers)


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=os.path.join(REPO, "tests", "data", "conformance"))
    ap.add_argument("--models", default=",".join(torch_models.MODELS),
                    help="comma-separated subset of %s (default all, in that order: the "
                    "committed files' rows)" % ",".join(torch_models.MODELS))
    ap.add_argument("--no-saved", action="store_true", help="skip saved_bytes.csv")
    ap.add_argument("--no-buckets", action="store_true",
                    help="skip buckets.csv and grad_ready.csv")
    ap.add_argument("--date", help="date for the header (default today, UTC)")
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args(argv[1:])
    torch.set_num_threads(args.threads)
    models = args.models.split(",")
    unknown = [m for m in models if m not in torch_models.MODELS]
    if unknown:
        ap.error("--models: %s not in tools/torch_models.py MODELS (%s)"
                 % (",".join(unknown), ",".join(torch_models.MODELS)))
    os.makedirs(args.out, exist_ok=True)
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    if not args.no_buckets:
        dist.init_process_group("gloo", rank=0, world_size=1,
                                init_method="tcp://127.0.0.1:%d" % port)
    date = args.date or datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d")
    head = ["# %s; gloo world size 1 on CPU; written by tools/capture_conformance.py "
            "--models %s on %s" % (export_model.versions(), ",".join(models), date)]
    brows, rrows, notes = [], [], []
    for name in ([] if args.no_buckets else models):
        for rule, kw in RULES:
            for cap in CAPS:
                ready = [] if (rule == "default" and cap is None) else None
                rows, k = run_config(name, rule, kw, cap, ready)
                notes.append("%s %s %s: rebuilt from iteration %s" % (name, rule, cap, k))
                sys.stderr.write(notes[-1] + "\n")
                for phase, lay in rows:
                    for b, (nb, ps) in enumerate(lay):
                        brows.append("%s,%s,%s,%s,%d,%d,%s" % (
                            name, rule, "unset" if cap is None else cap, phase, b, nb,
                            " ".join(str(p) for p in ps)))
                if ready is not None:
                    rrows += ["%s,%d,%d" % (name, i, p) for i, p in enumerate(ready)]
    if not args.no_buckets:
        dist.destroy_process_group()

    def write(fname, lines):
        path = os.path.join(args.out, fname)
        with open(path + ".tmp", "w", encoding="utf-8") as f:
            f.write("\n".join(lines) + "\n")
        os.replace(path + ".tmp", path)

    if not args.no_buckets:
        write("buckets.csv", head + [
            "# one row per bucket; bucket 0 is all-reduced first; bytes fp32; params = "
            "registration indices in bucket order; phase iter0 = layout at construction "
            "(iteration 0), rebuilt = after the rebuild (default: from iteration 1; "
            "static_graph: from iteration 2, iteration 1 still iter0's; find_unused: never); "
            "inputs 64x64 images, 32-token sequences (layouts do not depend on them)",
            "model,rule,bucket_cap_mb,phase,bucket,bytes,params"] + brows)
        write("grad_ready.csv", head + [
            "# order of gradient accumulation in iteration 0's backward under DDP (default "
            "rules, cap unset); param = registration index",
            "model,position,param"] + rrows)
    if not args.no_saved:
        srows = []
        for name in models:
            for att in (("eager", "fused") if name in ("bert-base", "gpt2") else ("eager",)):
                total = saved_bytes(name, att)
                srows.append("%s,%s,%d,%d" % (name, att, 2, total))
                sys.stderr.write("saved %s %s: %d bytes at batch 2\n" % (name, att, total))
        write("saved_bytes.csv", head + [
            "# bytes autograd saves in one training forward at the batch given (full "
            "224x224 images, 128-token BERT-base, 384-token BERT-base and BERT-large SQuAD, "
            "1024-token GPT-2 "
            "sequences): unique storages, "
            "parameters, buffers and the loss excluded, dropout masks bool as on CUDA; "
            "fused attention without dropout (CPU's flash kernel, saving what CUDA's does)",
            "model,attention,batch,saved_bytes_total"] + srows)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
