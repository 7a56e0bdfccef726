"""An unfused attention core's kernels, products apart (tools/export_model.py's
attn_products and attn_rest)."""

from .flops import op_flops
from .kernels import GEMM_OPS
from .legacy_ew import legacy_kind
from .ops import _ops, per_sample


# -- An attention core's kernels, products apart (attn_products, attn_rest). Kept in their
# own functions. An unfused attention (the eager path: matmul, scale, mask, softmax, dropout,
# matmul) runs each op as a kernel of its own whose times add: the two batched products at
# the GEMM rate, the others at the memory's. So the core's ops are tallied in two parts per
# pass: its GEMMs (bmm, baddbmm, mm, addmm: forward QK^T and PV, backward two per product,
# MmBackward's grad x other^T and self^T x grad) with their FLOPs and bytes, and every other
# op that moves bytes on PyTorch's vectorised path (the non-vectorised ones are legacy_ew's;
# the backward's reductions and layout copies are bwd_reduce_bytes / bwd_copy_bytes). Per
# pass: kernels (per iteration, whatever the batch), then per sample FLOPs (products only),
# bytes in real dtypes and bytes in autocast's (amp_fwd_bytes' and amp_bwd_bytes' rules).
ATTN_PASSES = ("fwd", "bwd")


# Softmax's backward on CUDA is two kernels (aten/src/ATen/native/cuda/SoftMax.cu,
# softmax_backward_cuda_out: `Tensor tmp = grad * output;` then host_softmax_backward reads
# tmp and output and writes the input's gradient): one aten op that moves its tensors twice
# over, plus tmp written once. The trace shows both (GPT-2's attention: aten::mul and
# softmax_warp_backward under _softmax_backward_data, the same time each).
SOFTMAX_BWD = _ops("_softmax_backward_data")


def note_core_op(layer, pass_, func, args, kwargs, out, moved, amp_moved):
    """One op of a layer's pass (forward: every op; backward: its autograd nodes' ops)
    that moved `moved` bytes (`amp_moved` under autocast), into the layer's products or
    rest tally; written only on attention cores (attn_lines). Softmax's backward counts
    two kernels (SOFTMAX_BWD)."""
    if layer is None or moved <= 0:
        return
    if func._overloadpacket in GEMM_OPS:
        acc = layer.__dict__.setdefault("attn_products", {}).setdefault(pass_, [0, 0, 0, 0])
        acc[0] += 1
        acc[1] += op_flops(func, args, kwargs, out)
        acc[2] += moved
        acc[3] += amp_moved
    elif legacy_kind(func, args, kwargs, out) is None:
        acc = layer.__dict__.setdefault("attn_rest", {}).setdefault(pass_, [0, 0, 0])
        acc[0] += 2 if func._overloadpacket in SOFTMAX_BWD else 1
        acc[1] += moved
        acc[2] += amp_moved


def attn_lines(layer, cls, batch):
    """attn_products and attn_rest, on an attention layer whose forward runs GEMMs (an
    eager core; a fused one, scaled_dot_product_attention, has none: the simulator keeps
    its one-kernel rule there)."""
    prods = getattr(layer, "attn_products", {})
    if cls != "attention" or not prods.get("fwd"):
        return []
    rest = getattr(layer, "attn_rest", {})
    out = []
    for key, table, n in (("attn_products", prods, 4), ("attn_rest", rest, 3)):
        parts = []
        for p in ATTN_PASSES:
            v = table.get(p, [0] * n)
            parts.append("%s: [%s]" % (p, ", ".join(
                [str(v[0])] + [str(per_sample(x, batch)) for x in v[1:]])))
        out.append("    %s: {%s}" % (key, ", ".join(parts)))
    return out


ATTN_HEADER = (
    "attn_products = an unfused attention core's GEMMs (the batched products: forward QK^T "
    "and PV, backward two per product), per pass (fwd, bwd) [kernels, FLOPs, bytes, "
    "amp bytes]; attn_rest = its other kernels on PyTorch's vectorised path (scale, mask, "
    "softmax, dropout and their backward; legacy_ew's kernels, the backward's reductions and "
    "copies excluded: they have their own keys) [kernels, bytes, amp bytes]; kernels per "
    "iteration, the rest per sample; bytes read + written in real dtypes and in autocast's "
    "(as amp_fwd_bytes and amp_bwd_bytes count them, but the backward's GEMMs in half, as "
    "their forward saved autocast's half casts, and softmax's backward gradients in its "
    "output's dtype); softmax's backward as CUDA's two kernels (grad * output, then the "
    "softmax kernel: SoftMax.cu), in bwd_bytes too.")
