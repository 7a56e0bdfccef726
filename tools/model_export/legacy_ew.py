"""Elementwise kernels off PyTorch's vectorised path (tools/export_model.py's legacy_ew,
nhwc_legacy_ew and amp_cast_ew): how an op's operands classify, the per-pass tallies,
and the lines and header notes that write them (the note on loss_legacy_ew too, which
kernels.py counts)."""

import torch

from .ops import aten, per_sample, tensors


# -- Elementwise kernels off PyTorch's vectorised path (legacy_ew, nhwc_legacy_ew). Kept in
# their own functions. A CUDA elementwise op (gpu_kernel, ATen/native/cuda/CUDALoops.cuh;
# a copy too) runs vectorized_elementwise_kernel only when its TensorIterator is contiguous:
# every tensor operand dense, in one layout, none broadcast. Otherwise it runs
# elementwise_kernel, which computes each operand's offset per element (OffsetCalculator)
# and loads one element at a time. The H200 trace of SE-ResNeXt-101
# (bench/results/gpu-2026-11-26b-h200) shows those kernels where the squeeze-and-excitation
# gate broadcasts its (N, C, 1, 1) scale (addcmul, mul, the global pool's backward div) and,
# in channels-last, where autograd adds an NCHW gradient to an NHWC one; sim/train/
# legacy_ew.c charges them per operand-element. Two kinds, by how the loads coalesce:
#   strided     an operand broadcast or not dense, or dense operands in other layouts whose
#               unit-stride dimension is the output's (BERT's head transposes: the head
#               dimension stays innermost): consecutive threads read consecutive elements;
#   transposed  a dense operand whose unit-stride dimension is not the output's (NCHW into
#               NHWC): consecutive threads read elements a plane apart.
# Recorded per pass (fwd: the layer's ops; bwd: its autograd nodes' ops; accum: the
# additions where its tensors' gradients meet; copy: the clones and copy_s among its
# backward's layout copies, bwd_copy_bytes), only for ops whose bytes the pass counts,
# as [bytes, strided operand-elements, transposed operand-elements]: the bytes as the pass's
# other counters give them (fp32 sizes in backward), an operand-element one element of one
# tensor operand (inputs and output; a 0-dim tensor is a wrapped scalar, not an operand).
# nhwc_legacy_ew: the same from a second run with the model and input in channels-last
# (4-d inputs only); the tensors' strides there follow PyTorch's layout propagation, which
# CPU and CUDA share (TensorIterator), so the CPU run finds what the GPU runs.
LEGACY_PASSES = ("fwd", "bwd", "accum", "copy")


def _dense_order(t):
    """Strides of t's non-unit dimensions, or None when t is not one dense block."""
    dims = [(st, n) for n, st in zip(t.shape, t.stride()) if n != 1]
    expected = 1
    for st, n in sorted(dims):
        if st != expected:
            return None
        expected *= n
    return tuple(st for st, _ in dims)


def _unit_dim(t):
    """The dimension of t with stride 1 (size > 1), counted from the last (broadcasting
    aligns shapes on their last dimension), or None."""
    return next((d - t.dim() for d, (n, st) in enumerate(zip(t.shape, t.stride()))
                 if n > 1 and st == 1), None)


def legacy_kind(func, args, kwargs, out):
    """None when the op runs the vectorised kernel (or is not elementwise), else
    ("strided" | "transposed", operand-elements). copy_, not tagged pointwise, is one
    too: its iterator has the destination as output and the source as its one input."""
    if func._overloadpacket is aten.copy_:
        o, ins = args[0], [args[1]] if args[1].dim() > 0 else []
        if o.numel() <= 1:
            return None
    else:
        if func.is_view or torch.Tag.pointwise not in func.tags:
            return None
        outs = list(tensors(out))
        if len(outs) != 1 or outs[0].numel() <= 1:
            return None
        o = outs[0]
        ins = [t for t in tensors((args, {k: v for k, v in kwargs.items() if k != "out"}))
               if t.dim() > 0]
    if not ins:
        return None
    opelems = o.numel() * (len(ins) + 1)
    everyone = ins + [o]
    # a broadcast repeats elements (fewer of them, or a stride 0); leading or inner
    # dimensions of size 1 alone ((S, D) into (1, S, D)) change nothing for the iterator
    if any(t.numel() != o.numel() or _dense_order(t) is None for t in everyone):
        return "strided", opelems
    if len({_dense_order(t) for t in everyone}) == 1:
        return None
    if any(_unit_dim(t) != _unit_dim(o) for t in ins):
        return "transposed", opelems
    return "strided", opelems


def amp_mixes_dtypes(rec, func, args, kwargs, out):
    """Whether a forward op's floating tensor operands (0-dim ones are wrapped scalars, not
    operands; the output included) have element sizes that differ under CUDA autocast, as
    rec's autocast run gives them (GPT-2's attention mask: half scores plus an fp32 mask,
    out fp32). Its CUDA kernel then fails needs_dynamic_casting (gpu_kernel_impl,
    ATen/native/cuda/CUDALoops.cuh) and loads and stores every element through a switch on
    its dtype (legacy_ew.h's cast kind). Integer and bool operands (where's condition) are
    their functor's own types: no cast."""
    packet = func._overloadpacket
    ins = [t for t in tensors((args, {k: v for k, v in kwargs.items() if k != "out"}))
           if t.is_floating_point() and t.dim() > 0]
    outs = [t for t in tensors(out) if t.is_floating_point()]
    sizes = {rec.read_size(packet, t) for t in ins} | {rec.amp_size(t) for t in outs}
    return len(sizes) > 1


def note_cast_ew(layer, func, args, kwargs, out, amp_moved):
    """A forward op that mixes dtypes under autocast (amp_mixes_dtypes) on PyTorch's
    contiguous path (legacy_kind None: dense operands in one layout, none broadcast): CUDA
    runs it as unrolled_elementwise_kernel with cast loads and stores (gpu_kernel_impl,
    ATen/native/cuda/CUDALoops.cuh: contiguous but needs_dynamic_casting), not the
    vectorised kernel. layer.amp_cast_ew += [its autocast bytes, operand-elements]."""
    if func.is_view or torch.Tag.pointwise not in func.tags or amp_moved <= 0:
        return
    if legacy_kind(func, args, kwargs, out) is not None:
        return
    outs = list(tensors(out))
    ins = [t for t in tensors((args, {k: v for k, v in kwargs.items() if k != "out"}))
           if t.dim() > 0]
    if len(outs) != 1 or not ins or outs[0].numel() <= 1:
        return
    acc = layer.__dict__.setdefault("cast_ew", [0, 0])
    acc[0] += amp_moved
    acc[1] += outs[0].numel() * (len(ins) + 1)


CAST_EW_HEADER = (
    "amp_cast_ew = [bytes with autocast's dtypes, operand-elements] of the forward's "
    "elementwise ops whose operands are dense and alike but differ in dtype under CUDA "
    "autocast (GPT-2's residual add of the half attention output and the fp32 stream): "
    "CUDA's unrolled_elementwise_kernel with cast loads, not the vectorised kernel; their "
    "bytes are part of amp_fwd_bytes. Attention cores left out (attn_rest prices them).")


def cast_ew_lines(layer, batch):
    """Not on attention cores: ddpsim prices their ops from attn_rest."""
    v = getattr(layer, "cast_ew", None)
    if not v or not v[0] or getattr(layer, "cls", None) == "attention":
        return []
    return ["    amp_cast_ew: [%d, %d]" % (per_sample(v[0], batch), per_sample(v[1], batch))]


def note_legacy(layer, pass_, func, args, kwargs, out, nbytes_, amp_mixed=False):
    """amp_mixed: the op mixes dtypes under autocast (amp_mixes_dtypes; forward ops only):
    a strided one's operand-elements count as cast ones too."""
    kind = legacy_kind(func, args, kwargs, out)
    if kind is None or layer is None or nbytes_ <= 0:
        return
    acc = layer.__dict__.setdefault("legacy", {}).setdefault(pass_, [0, 0, 0, 0])
    acc[0] += nbytes_
    acc[1 if kind[0] == "strided" else 2] += kind[1]
    if amp_mixed and kind[0] == "strided":
        acc[3] += kind[1]


def legacy_lines(layer, batch):
    out = []
    for key, table in (("legacy_ew", getattr(layer, "legacy", None)),
                       ("nhwc_legacy_ew", getattr(layer, "nhwc_legacy", None))):
        parts = []
        for p in LEGACY_PASSES:
            v = [per_sample(x, batch) for x in (table or {}).get(p, ())]
            if len(v) == 4 and not v[3]:  # no cast operand-elements: the three-number form
                v = v[:3]
            if any(v):
                parts.append("%s: [%s]" % (p, ", ".join(str(x) for x in v)))
        if parts:
            out.append("    %s: {%s}" % (key, ", ".join(parts)))
    return out


LOSS_LEGACY_HEADER = (
    "loss_legacy_ew = of loss_copy_bytes, the copies on PyTorch's non-vectorised "
    "elementwise_kernel (as legacy_ew: [bytes, strided operand-elements, transposed "
    "operand-elements] per sample; the logits' slice made contiguous and slice_backward's "
    "copy into its zeroed gradient).")


LEGACY_HEADER = (
    "legacy_ew = per pass (fwd, bwd, accum: autograd's additions where the gradients of a "
    "tensor the layer made meet, copy: the clones and copy_s of bwd_copy_bytes), [bytes, "
    "strided operand-elements, transposed operand-elements] of the elementwise ops "
    "(copies included) that run PyTorch's "
    "non-vectorised elementwise_kernel on CUDA: strided = an operand broadcast or not dense, "
    "or dense operands in other layouts with the output's unit-stride dimension; transposed "
    "= a dense operand whose unit-stride dimension is not the output's; an operand-element "
    "is one element of one tensor operand, output included; bytes as the pass's other "
    "counters give them (fp32 in backward), ops whose bytes the pass does not count left "
    "out. nhwc_legacy_ew = the same in a channels-last run (4-d inputs); a layer only that "
    "run has (a layout copy the first run does not make) is left out.")
LEGACY_CAST_HEADER = (
    "a fourth number in a legacy_ew list = of its strided operand-elements, those of forward "
    "ops whose floating operands differ in dtype under CUDA autocast (half scores plus an "
    "fp32 attention mask): CUDA's dynamic-casting elementwise_kernel there.")


MODEL_CAST_HEADER = (
    "amp_cast_bytes, host_amp_casts and host_amp_nodes count too the model's own casts that "
    "are no-ops in this fp32 run but cast under autocast (GPT-2's attn_weights.type("
    "value.dtype) after the fp32 softmax: fp32 to the value's half), and the ops after one "
    "read its target dtype (the attention's dropout reads and writes half).")


def has_legacy_cast(layer):
    return any(len(v) == 4 and v[3] for t in (getattr(layer, "legacy", None),
                                              getattr(layer, "nhwc_legacy", None))
               for v in (t or {}).values())
