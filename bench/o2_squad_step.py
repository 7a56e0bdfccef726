"""One apex-O2-style BERT SQuAD training step as DeepLearningExamples' run_squad.py runs it,
timed and profiled kernel class by kernel class: what would settle where the O2 FP16 rows'
missing time goes (validation/notes-lambda-scaling.md, "Where the O2 FP16 time goes").

    python3 bench/o2_squad_step.py [--model base|large] [--batch 320] [--iters 5]
        [--device cuda] [--out DIR]

The model is tools/torch_models.py's DleBertForQuestionAnswering (what
models/bert-{base,large}-squad-dle.yaml are exported from), this project's own code, written
from the op sequence of DLE's modeling.py
(LambdaLabsML/DeepLearningExamples lambda/benchmark c1781a37,
PyTorch/LanguageModeling/BERT/modeling.py): sequence-first (seq, batch, hidden) after one
transpose of the embeddings; Q, K, V linears; torch.bmm on strided views (Q as
(b h, s, d) with the batch stride of a head, K permuted to (b h, d, s): no copies); the
scores divided by sqrt(d), plus the extended mask (1 - m) * -10000 of shape (b, 1, 1, s) in
the model's dtype (a broadcast add: PyTorch's non-vectorised elementwise_kernel); softmax;
dropout; bmm with V; the context transposed back and made contiguous; dense, dropout,
residual add, LayerNorm; dense with tanh GELU; dense, dropout, add, LayerNorm; after the
encoder a transpose back made contiguous, the pooler (first token, dense, tanh: computed and
discarded) and the 2-wide QA head; two cross-entropies averaged. The model is cast with
.half() (apex O2 with keep_batchnorm_fp32=False casts every module, LayerNorm too, and patches
no function). The step after backward does what apex O2's does on the GPU, with plain torch
ops where apex has fused multi-tensor kernels: fresh fp32 master gradients (the fp16
gradients unscaled into them), an overflow check read with .item(), the gradient norm read
with .item() (GradientClipper), Adam on fp32 master weights and state via
torch.optim.Adam(fused=True) (apex FusedAdam's bytes), the master weights copied back into
the fp16 model, gradients set to None. The batch comes from a TensorDataset through a
DataLoader in the main process, as run_squad.py's, and is copied with .to(device).

Prints the step's wall time (median of --iters after 2 warm-up steps; each step ends in
loss.item() as run_squad.py's), the host time spent in the DataLoader, and, from one
profiled step, GPU time per kernel class (ms) with the kernel count: linear GEMMs, attention
bmm, softmax fwd/bwd, dropout fwd/bwd, the mask add (elementwise_kernel on the scores),
other non-vectorised elementwise, vectorised elementwise, layer norm fwd/bwd, reductions,
copies, the optimizer's kernels. Compare with ddpsim's per-class table in the notes (same
batch, same GPU). CPU dry run: --device cpu --batch 2 --iters 1 --layers 1 (the code path only).
"""
import argparse
import collections
import math
import os
import statistics
import sys
import time

import torch
from torch import nn

SEQ, FEATURES = 384, 88641
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
from torch_models import BERT_BASE, BERT_LARGE, DleBertForQuestionAnswering  # noqa: E402

SIZES = {"base": BERT_BASE, "large": BERT_LARGE}


class O2Step:
    """apex O2's step on the GPU, in plain torch ops (see the module docstring)."""

    def __init__(self, model):
        # run_squad.py leaves the pooler out of the optimizer (its output is discarded);
        # DleBertForQuestionAnswering holds the pooler's weights as buffers
        self.model = [p for n, p in model.named_parameters() if ".pooler." not in n]
        self.master = [p.detach().float().clone().requires_grad_(True) for p in self.model]
        self.opt = torch.optim.Adam(self.master, lr=0.0, fused=self.master[0].is_cuda)
        self.scale = 2.0 ** 16

    def __call__(self):
        for p, m in zip(self.model, self.master):
            m.grad = p.grad.float().mul_(1.0 / self.scale)  # unscale into a new fp32 grad
        overflow = torch.stack([g.grad.abs().max() for g in self.master]).max()
        if not math.isfinite(overflow.item()):  # amp's overflow flag, read on the host
            self.scale /= 2
        norm = torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(m.grad)
                                                     for m in self.master]))
        if norm.item() > 1.0:  # GradientClipper's .item()
            torch._foreach_mul_([m.grad for m in self.master], 1.0 / norm.item())
        self.opt.step()
        with torch.no_grad():
            torch._foreach_copy_(self.model, self.master)  # master weights to the model
        for p in self.model:
            p.grad = None
        for m in self.master:
            m.grad = None


def classify(name):
    n = name.lower()
    if "elementwise_kernel<128" in n and "vectorized" not in n and "unrolled" not in n:
        return "non-vectorised elementwise"
    for key, cls in (("softmax_warp_backward", "softmax bwd"), ("softmax_warp_forward", "softmax fwd"),
                     ("softmax", "softmax other"), ("dropout", "dropout fwd"),
                     ("layer_norm", "layer norm"), ("gammabeta", "layer norm"),
                     ("multi_tensor", "optimizer"), ("adam", "optimizer"),
                     ("reduce_kernel", "reductions"), ("catarray", "copies"),
                     ("memcpy", "copies"), ("memset", "memset"), ("gemm", "GEMM"),
                     ("nvjet", "GEMM"), ("cutlass", "GEMM"), ("xmma", "GEMM"),
                     ("gelu", "gelu"), ("vectorized_elementwise", "vectorised elementwise"),
                     ("unrolled_elementwise", "unrolled elementwise")):
        if key in n:
            return cls
    return "other"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", choices=sorted(SIZES), default="base")
    ap.add_argument("--batch", type=int, default=320)
    ap.add_argument("--iters", type=int, default=5)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--layers", type=int, help="fewer encoder layers (a CPU dry run)")
    ap.add_argument("--out", default=os.environ.get("OUT", "."))
    a = ap.parse_args()
    dev = torch.device(a.device)
    torch.manual_seed(0)
    sizes = dict(SIZES[a.model], **({"layers": a.layers} if a.layers else {}))
    model = DleBertForQuestionAnswering(**sizes).to(dev).half().train()
    step = O2Step(model)
    n = max(FEATURES if dev.type == "cuda" else 4 * a.batch, a.batch * (a.iters + 4))
    data = torch.utils.data.TensorDataset(
        torch.randint(0, 30522, (n, SEQ)), torch.ones(n, SEQ, dtype=torch.long),
        torch.zeros(n, SEQ, dtype=torch.long), torch.randint(0, SEQ, (n,)),
        torch.randint(0, SEQ, (n,)))
    loader = iter(torch.utils.data.DataLoader(
        data, sampler=torch.utils.data.RandomSampler(data), batch_size=a.batch))
    sync = torch.cuda.synchronize if dev.type == "cuda" else (lambda: None)
    host_dl = []

    def one():
        t = time.perf_counter()
        ids, mask, types, sp, ep = (x.to(dev) for x in next(loader))
        host_dl.append(time.perf_counter() - t)
        start, end = model(ids, types, mask)
        sp.clamp_(0, start.size(1))
        ep.clamp_(0, start.size(1))
        lf = nn.CrossEntropyLoss(ignore_index=start.size(1))
        loss = (lf(start, sp) + lf(end, ep)) / 2
        (loss * step.scale).backward()
        step()
        return loss.item()

    for _ in range(2):
        one()
    sync()
    wall = []
    for _ in range(a.iters):
        t = time.perf_counter()
        one()
        wall.append(time.perf_counter() - t)
    acts = [torch.profiler.ProfilerActivity.CPU]
    if dev.type == "cuda":
        acts.append(torch.profiler.ProfilerActivity.CUDA)
    with torch.profiler.profile(activities=acts) as prof:
        one()
        sync()
    per = collections.defaultdict(lambda: [0.0, 0])
    for e in prof.events():
        if dev.type == "cuda" and e.device_type == torch.autograd.DeviceType.CUDA:
            per[classify(e.name)][0] += e.device_time / 1e3
            per[classify(e.name)][1] += 1
    lines = ["model %s batch %d on %s (torch %s)" % (
        a.model, a.batch, torch.cuda.get_device_name(dev) if dev.type == "cuda" else "cpu",
        torch.__version__),
        "step wall ms: median %.2f (%s)" % (1e3 * statistics.median(wall),
                                             " ".join("%.2f" % (1e3 * w) for w in wall)),
        "DataLoader + .to() host ms: median %.2f" % (1e3 * statistics.median(host_dl))]
    for cls, (ms, k) in sorted(per.items(), key=lambda kv: -kv[1][0]):
        lines.append("  %-28s %9.3f ms %6d kernels" % (cls, ms, k))
    lines.append("  %-28s %9.3f ms" % ("GPU total", sum(v[0] for v in per.values())))
    text = "\n".join(lines)
    print(text)
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "o2_squad_%s_b%d.txt" % (a.model, a.batch)), "w") as f:
        f.write(text + "\n")
    if dev.type == "cuda":
        prof.export_chrome_trace(os.path.join(a.out, "o2_squad_%s_b%d.json" % (a.model, a.batch)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
