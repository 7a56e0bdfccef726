"""Kernels beside a layer's own math (tools/export_model.py): GEMM operand alignment,
grouped convolutions, cat's index steps, the backward's reductions and layout copies,
the loss's copies, max-pool's geometry, layer norm's rows and an embedding's lookups;
the lines and header notes that write them."""

import torch

from .cli import ExportError
from .legacy_ew import legacy_kind, note_legacy
from .ops import CONV, _ops, aten, per_sample, storage_key, tensors


# -- Kernels beside a layer's own math (transformer models): a GEMM's operand alignment,
# and the reductions and layout copies its backward runs. Kept in their own functions.

GEMM_OPS = {aten.mm, aten.addmm, aten.bmm, aten.baddbmm}
# cuBLAS/CUTLASS load a GEMM operand with vector loads of up to 16 bytes (8 elements of a
# 2-byte type) only when its leading dimension, its contiguous extent and its start are
# multiples of that many elements; otherwise it runs the kernels with narrower loads
# (CUTLASS's AlignmentA/B/C template parameter; the trace shows
# cutlass_75_tensorop_bf16_s1688gemm_..._align1 for GPT-2's 50257-wide LM head).
GEMM_ALIGN_MAX = 8
# Backward ops that are memory-bound kernels of their own, not part of the layer's math:
# bias gradients (AddmmBackward0's grad.sum_to_size: one reduction over the tokens per
# Linear with a bias) and layout copies (reshape of a non-contiguous gradient: clone;
# split's backward: cat; slice/select backward: zeros then copy_).
BWD_REDUCE = _ops("sum")
BWD_COPY = _ops("clone", "cat", "copy_", "slice_backward", "select_backward")


def operand_align(t):
    """The largest power of two, at most GEMM_ALIGN_MAX elements, dividing t's leading
    dimension, its contiguous extent and its storage offset (a matrix or a batch of
    matrices; the batch stride too); GEMM_ALIGN_MAX when neither of its last two
    dimensions is contiguous (cuBLAS gets a copy then)."""
    if t.dim() < 2:
        return GEMM_ALIGN_MAX
    (r, c), (sr, sc) = t.shape[-2:], t.stride()[-2:]
    if sc == 1 or c == 1:
        vals = [sr, c]
    elif sr == 1 or r == 1:
        vals = [sc, r]
    else:
        return GEMM_ALIGN_MAX
    vals += [t.storage_offset()] + ([t.stride()[-3]] if t.dim() == 3 and t.shape[0] > 1 else [])
    a = GEMM_ALIGN_MAX
    while a > 1 and any(v % a for v in vals):
        a //= 2
    return a


def note_gemm_align(layer, func, args, out):
    """Forward: the smallest operand alignment of the layer's GEMMs (layer.gemm_align)."""
    if func._overloadpacket not in GEMM_OPS:
        return
    a = min(operand_align(t) for t in tensors((args, out)) if t.dim() >= 2)
    layer.gemm_align = min(getattr(layer, "gemm_align", GEMM_ALIGN_MAX), a)


def note_conv_groups(layer, func, args):
    """Forward: a grouped convolution's groups and stride (layer.conv_groups, conv_stride),
    which its kernels' measured times are looked up by (sim/train/grouped_conv.h)."""
    if func._overloadpacket not in CONV or len(args) < 9 or args[8] <= 1:
        return
    layer.conv_groups = int(args[8])
    layer.conv_stride = int(max(args[3]))


# torch.cat on CUDA (aten/src/ATen/native/cuda/Shape.cu, cat_out_cuda): where its inputs
# are not all contiguous (GPT-2's KV-cache update catting the transposed key and value views,
# split's backward catting a transposed gradient) parallel_cat<64, 64> runs the generic
# CatArrayBatchedCopy: every element's output offset and its input offset computed from
# sizes and strides (CatArrIndexToOffset: one integer division per dimension after the first)
# and one element moved at a time (sim/train/cat_copy.h prices it).
CAT_MAX_DIMS = 4


def cat_index_steps(func, args, out):
    """Integer divisions the generic CatArrayBatchedCopy runs for a cat (0 where another
    path runs: all inputs contiguous (the contiguous or vectorised kernels, at the
    roofline), one input, more than 4 dimensions): 2 x (dims - 1) per element moved."""
    if func._overloadpacket is not aten.cat or not isinstance(out, torch.Tensor):
        return 0
    ins = [t for t in args[0] if isinstance(t, torch.Tensor)]
    if len(ins) < 2 or out.dim() > CAT_MAX_DIMS or all(t.is_contiguous() for t in ins):
        return 0
    return sum(t.numel() for t in ins if t.numel() > 0) * 2 * (out.dim() - 1)


def note_cat(rec, layer, pass_, func, args, kwargs, out):
    """A generic cat's bytes (read + written, real dtypes) and index divisions, per pass
    (layer.cat_copy)."""
    steps = cat_index_steps(func, args, out)
    if layer is None or steps == 0:
        return
    acc = layer.__dict__.setdefault("cat_copy", {}).setdefault(pass_, [0, 0])
    acc[0] += rec.user_bytes((args, kwargs)) + rec.user_bytes(out)
    acc[1] += steps


def cat_lines(layer, batch):
    table = getattr(layer, "cat_copy", None)
    if not table:
        return []
    parts = ["%s: [%s]" % (p, ", ".join(str(per_sample(x, batch)) for x in table[p]))
             for p in ("fwd", "bwd") if p in table]
    return ["    cat_copy: {%s}" % ", ".join(parts)]


CAT_HEADER = (
    "cat_copy = per pass (fwd, bwd) [bytes read + written (real dtypes), index divisions] "
    "of the cats that run CUDA's generic CatArrayBatchedCopy (inputs not all contiguous, "
    "at most 4 dimensions: Shape.cu's parallel_cat<64, 64>): 2 x (dims - 1) divisions per "
    "element, its output offset and its input offset (Hugging Face's KV-cache update, "
    "split's backward on a transposed gradient); their bytes are in the pass's other "
    "counters too.")


def copy_bytes(rec, func, args, kwargs, out):
    """Bytes a copy-like op moves on CUDA: its inputs read and outputs written; slice and
    select backward write their zeroed output, then copy the gradient into a slice of it
    (read it, write as much)."""
    packet = func._overloadpacket
    moved = rec.user_bytes((args, kwargs)) + rec.user_bytes(out)
    if packet in _ops("slice_backward", "select_backward"):
        moved += rec.user_bytes((args, kwargs))
    return moved


def bwd_elem_size(rec, layer, t, amp):
    """Bytes per element of a tensor a backward op touches: its own, or under autocast a
    saved forward tensor's autocast size and a gradient's the layer's forward output's
    (autograd casts a gradient to its tensor's dtype)."""
    if not amp or not t.is_floating_point():
        return t.element_size()
    key = storage_key(t)
    if key is not None and key in rec.saved and key[0] not in rec.__dict__.get("bwd_made", ()):
        return rec.amp_size(t)
    return getattr(layer, "amp_out_size", 4)


def note_bwd_kernels(rec, layer, func, args, kwargs, out):
    """Backward: bytes read + written by the layer's reductions and layout copies."""
    packet = func._overloadpacket
    note_cat(rec, layer, "bwd", func, args, kwargs, out)
    if packet in BWD_REDUCE:
        layer.bwd_reduce_bytes = getattr(layer, "bwd_reduce_bytes", 0) + \
            rec.user_bytes((args, kwargs)) + rec.user_bytes(out)
        rows = row_reduction(args, out)
        if rows:
            # the element size it reads under autocast: the summed gradient's (a
            # matmul's bias: its half output's; an add of fp32 embeddings: fp32)
            grad = next(t for t in tensors(args) if t.is_floating_point())
            rows += (bwd_elem_size(rec, layer, grad, True),)
            layer.bwd_row_reductions = getattr(layer, "bwd_row_reductions", []) + [rows]
    elif packet in BWD_COPY:
        moved = copy_bytes(rec, func, args, kwargs, out)
        layer.bwd_copy_bytes = getattr(layer, "bwd_copy_bytes", 0) + moved
        # a clone or copy_ is one kernel; slice and select backward are a fill and
        # a copy (left at the roofline); cat its own kernel
        if packet in _ops("clone", "copy_"):
            note_legacy(layer, "copy", func, args, kwargs, out, moved)


def row_reduction(args, out):
    """(rows, outputs) of a sum over an input's leading dimensions, keeping its trailing
    ones, on a dense input (a bias gradient: the output gradient's rows summed); None
    for any other reduction. CUDA runs it as one reduce_kernel over rows (compute.h)."""
    ins = [t for t in tensors(args) if t.is_floating_point()]
    outs = list(tensors(out))
    if len(ins) != 1 or len(outs) != 1 or not ins[0].is_contiguous():
        return None
    t, o = ins[0], outs[0]
    dims = sorted(d % t.dim() for d in (args[1] if len(args) > 1 and args[1] else []))
    keep = tuple(t.shape[len(dims):])
    kept = tuple(d for d in o.shape[len(dims):]) if len(args) > 2 and args[2] else tuple(o.shape)
    if not dims or dims != list(range(len(dims))) or kept != keep or o.numel() < 2:
        return None  # (autograd's sum_to keeps the summed dimensions: keepdim)
    return t.numel() // o.numel(), o.numel()


def note_loss_copy(rec, func, args, kwargs, out):
    """The loss, forward and backward (before any layer's node): bytes of its layout copies
    (a language model's logits[:, :-1] reshaped to rows: a clone; its backward: slice
    backward), rec.loss_copy_bytes."""
    if func._overloadpacket in BWD_COPY:
        moved = copy_bytes(rec, func, args, kwargs, out)
        rec.loss_copy_bytes = getattr(rec, "loss_copy_bytes", 0) + moved
        note_loss_legacy(rec, func, args, kwargs, out, moved)


def note_loss_legacy(rec, func, args, kwargs, out, moved):
    """The loss's copies that run PyTorch's non-vectorised elementwise_kernel (legacy_kind:
    an operand not dense), rec.loss_legacy = [bytes, strided, transposed operand-elements]:
    a language model's logits[:, :-1] made contiguous (clone of a slice that is not one
    dense block) and its backward, slice_backward (SliceBackward0, FunctionsManual.cpp:
    grad_input = zeros(input_sizes), then grad_input.slice(...).copy_(grad)): the zero
    fill is vectorised, the copy_ into the slice is the kernel, as legacy_kind takes
    copy_ (the slice, rebuilt on the meta device, as its output)."""
    packet = func._overloadpacket
    if packet in _ops("slice_backward", "select_backward"):
        grad, sizes = args[0], args[1]
        view = torch.empty(sizes, dtype=grad.dtype, device="meta")
        view = aten.slice.Tensor(view, *args[2:]) if packet is aten.slice_backward else \
            aten.select.int(view, *args[2:])
        kind = legacy_kind(aten.copy_.default, (view, grad), {}, view)
        moved = 2 * rec.user_bytes(grad)  # the copy: the gradient read, as much written
    else:
        kind = legacy_kind(func, args, kwargs, out)
    if kind is None or moved <= 0:
        return
    acc = rec.__dict__.setdefault("loss_legacy", [0, 0, 0])
    acc[0] += moved
    acc[1 if kind[0] == "strided" else 2] += kind[1]


def loss_lines(rec, batch):
    """The model file's root keys of the loss, per sample in real dtypes, each where
    nonzero: loss_copy_bytes, its own layout copies; loss_act_bytes, what autograd saved
    for its backward outside every layer (a classifier's log_softmax rows)."""
    out = []
    for key, total in (("loss_copy_bytes", getattr(rec, "loss_copy_bytes", 0)),
                       ("loss_act_bytes", rec.saved_outside)):
        v = per_sample(total, batch)
        if v:
            out.append("%s: %d" % (key, v))
    legacy = [per_sample(x, batch) for x in getattr(rec, "loss_legacy", ())]
    if any(legacy):
        out.append("loss_legacy_ew: [%s]" % ", ".join(str(x) for x in legacy))
    return out


def kernel_lines(layer, batch):
    """The model file's keys for the above: gemm_align where the layer runs a GEMM,
    bwd_reduce_bytes and bwd_copy_bytes (per sample, real dtypes) where nonzero."""
    out = []
    if hasattr(layer, "gemm_align"):
        out.append("    gemm_align: %d" % layer.gemm_align)
    if hasattr(layer, "conv_groups"):
        out.append("    groups: %d" % layer.conv_groups)
        out.append("    stride: %d" % layer.conv_stride)
    for key in ("bwd_reduce_bytes", "bwd_copy_bytes"):
        v = per_sample(getattr(layer, key, 0), batch)
        if v:
            out.append("    %s: %d" % (key, v))
    rows = [(r, n, a) for r, n, a in getattr(layer, "bwd_row_reductions", []) if r % batch == 0]
    if rows:
        out.append("    bwd_row_reductions: [%s]" % ", ".join(
            "[%d, %d]" % (r // batch, n) if a == 2 else "[%d, %d, %d]" % (r // batch, n, a)
            for r, n, a in rows))
    return out


# -- Max-pool's geometry (pool_kernel, pool_stride, pool_padding, pool_input), on the layers
# that run aten's max_pool2d_with_indices: its CUDA kernels (aten/src/ATen/native/cuda/
# DilatedMaxPool2d.cu) run at a rate per SM clock set by their loops over the windows, not by
# their bytes, so the simulator needs the windows (sim/train/compute.h). Written only for
# dilation 1 and floor mode (the models' pools); any other pool keeps the roofline.
MAX_POOL = _ops("max_pool2d_with_indices")


def _pair(v, default):
    v = list(v) if isinstance(v, (list, tuple)) else [v]
    v = v or list(default)
    return [int(x) for x in (v * 2 if len(v) == 1 else v)]


def note_max_pool(layer, func, args, kwargs):
    """Forward: a 2-d max-pool's window, stride, padding and input [C, H, W] (layer.pool),
    from max_pool2d_with_indices(self, kernel_size, stride, padding, dilation, ceil_mode)."""
    if func._overloadpacket not in MAX_POOL:
        return
    names = ("kernel_size", "stride", "padding", "dilation", "ceil_mode")
    a = dict(zip(names, args[1:]), **kwargs)
    kernel = _pair(a["kernel_size"], [])
    stride = _pair(a.get("stride", []), kernel)
    padding = _pair(a.get("padding", 0), [0])
    dilation = _pair(a.get("dilation", 1), [1])
    x = args[0]
    if dilation != [1, 1] or a.get("ceil_mode", False) or x.dim() != 4 or \
            hasattr(layer, "pool"):
        layer.pool = None  # not modelled (or a second pool in one layer): the roofline
        return
    layer.pool = (kernel, stride, padding, list(x.shape[1:]))


# LayerNorm on CUDA (aten/src/ATen/native/cuda/layer_norm_kernel.cu): the forward is one
# kernel per row-block (launch_vectorized_layer_norm_kernel, or two where the row is not a
# multiple of 4 elements), the backward two (layer_norm_grad_input_kernel_vectorized, then
# LaunchGammaBetaBackwardCUDAKernel's column reduction, which re-reads dY and X). Which
# kernels and how fast follow the rows M and the normalized size N, so the file gives them
# (sim/train/norm.c prices the kernels from these).
LAYER_NORM = _ops("native_layer_norm")


def note_layer_norm(layer, func, args, quiet):
    """Forward: a layer's native_layer_norm(input, normalized_shape, ...) as
    layer.layer_norm = [rows, N] (rows over the whole batch); None where the layer runs any
    other op or a second layer norm (its kernels are then not the layer's only ones)."""
    if quiet or getattr(layer, "layer_norm", 0) is None:
        return
    if func._overloadpacket not in LAYER_NORM or hasattr(layer, "layer_norm"):
        layer.layer_norm = None
        return
    n = 1
    for d in args[1]:
        n *= int(d)
    layer.layer_norm = [args[0].numel() // n, n] if n > 0 else None


def layer_norm_lines(layer, batch):
    """The model file's layer_norm key, on a layer whose one op is a layer norm."""
    ln = getattr(layer, "layer_norm", None)
    if not ln or ln[0] % batch:
        return []
    return ["    layer_norm: [%d, %d]" % (ln[0] // batch, ln[1])]


LAYER_NORM_HEADER = (
    "layer_norm = [rows per sample, N] of a layer whose one op is native_layer_norm "
    "(N: the normalized elements of a row): the simulator derives PyTorch's CUDA kernels "
    "from them (the forward's, the backward's input gradient and its gamma/beta column "
    "reduction, which re-reads dY and X; layer_norm_kernel.cu).")


# Embedding (aten/src/ATen/native/Embedding.cpp embedding: weight.index_select(0, indices);
# cuda/Embedding.cu embedding_dense_backward_cuda: a zero-filled table and one kernel up to
# 3072 ids, a sort and segment sums above): the forward reads the rows it looks up, not the
# table. The file gives the lookups and the row length (sim/train/compute_layer.c).
EMBEDDING = _ops("embedding")


def note_embedding(layer, func, args, quiet):
    """Forward: a layer's embedding(weight, indices, padding_idx, scale_grad_by_freq,
    sparse) as layer.embedding = [ids, D, ids' shape]; None where the layer runs any
    other op, a second embedding, or a sparse or frequency-scaled one (other backward
    kernels)."""
    if quiet or getattr(layer, "embedding", 0) is None:
        return
    if func._overloadpacket not in EMBEDDING or hasattr(layer, "embedding") or \
            any(bool(a) for a in args[3:5]):
        layer.embedding = None
        return
    layer.embedding = [args[1].numel(), int(args[0].shape[-1]), tuple(args[1].shape)]


def shared_embedding(layer, batch):
    """Whether the layer is an embedding of ids the batch shares (ids shaped [1, ...] at a
    recorded batch of 2 or more, as Hugging Face's BERT and GPT-2 make position ids): its
    one op's tensors are then all the batch's (the ids, the [1, seq, D] rows it writes,
    their gradient, which the broadcast add's backward sums over the batch first), and the
    file gives its bytes per step (bytes_per: step)."""
    e = getattr(layer, "embedding", None)
    return bool(e) and batch > 1 and len(e[2]) >= 2 and e[2][0] == 1


def embedding_lines(layer, batch):
    """The model file's embedding key, on a layer whose one op is an embedding: ids shaped
    [batch, ...] are per sample ([lookups per sample, D]); ids shaped [1, ...] (position
    ids a batch shares, as Hugging Face's BERT and GPT-2 make them) are per step ([0, D,
    lookups per step]), the same at any batch, and so are the layer's bytes (bytes_per:
    step)."""
    e = getattr(layer, "embedding", None)
    if not e:
        return []
    ids, d, shape = e
    if batch == 1:
        # [1, seq] is then per sample and shared alike: the recorded run cannot tell
        raise ExportError("layer %s: an embedding needs a recorded batch of 2 or more "
                          "(--batch) to tell per-sample ids from ids the batch shares"
                          % layer.name)
    if len(shape) >= 2 and shape[0] == batch:
        return ["    embedding: [%d, %d]" % (ids // batch, d)]
    if shared_embedding(layer, batch):
        return ["    embedding: [0, %d, %d]" % (d, ids), "    bytes_per: step"]
    raise ExportError("layer %s: embedding ids shaped %s at batch %d: expected [batch, ...] "
                      "(per sample) or [1, ...] (shared by the batch)"
                      % (layer.name, list(shape), batch))


EMBEDDING_HEADER = (
    "embedding = [lookups per sample, D] of a layer whose one op is aten::embedding (D: a "
    "row's elements), or [0, D, lookups per step] where the batch shares its ids ([1, seq] "
    "position ids): the simulator charges the rows it reads (index_select) and, in "
    "backward, embedding_dense_backward's path for the step's ids (a zero-filled table "
    "and one kernel up to 3072 ids; a sort, segment sums and a scatter above), not "
    "whole-table passes.")

STEP_BYTES_HEADER = (
    "bytes_per: step on such an embedding of shared ids: its own bytes (fwd_bytes, "
    "op_fwd_bytes, act_bytes, the amp_ bytes, bwd_bytes) are per step, not per sample, "
    "the same at any batch: every tensor its forward and backward move is the batch's "
    "(the ids read, the [1, seq, D] rows written; their gradient, which the broadcast "
    "add's backward has summed over the batch, and the ids read). Only that add, a layer "
    "of its own, grows with the batch.")


def pool_lines(layer):
    """The model file's max-pool keys, on a layer with one 2-d max-pool only."""
    pool = getattr(layer, "pool", None)
    if not pool:
        return []
    return ["    %s: [%s]" % (k, ", ".join(str(d) for d in v))
            for k, v in zip(("pool_kernel", "pool_stride", "pool_padding", "pool_input"), pool)]


POOL_HEADER = (
    "pool_kernel, pool_stride, pool_padding = a 2-d max-pool's window, stride and padding "
    "[h, w], pool_input = its input [C, H, W] per sample (dilation 1, floor mode): its "
    "CUDA kernels' cost follows the windows they loop over.")


KERNEL_HEADER = (
    "gemm_align = the largest power of two (at most 8) of elements dividing every GEMM "
    "operand's leading dimension, contiguous extent and offset in the layer's forward "
    "(a half-precision GEMM below 8 runs cuBLAS's narrow-load kernels); groups, stride = "
    "a grouped convolution's (groups > 1 only); bwd_reduce_bytes, "
    "bwd_copy_bytes = bytes read + written by the reductions (bias gradients) and layout "
    "copies (clone, cat, copy_, slice/select backward: zero fill, then the copy) the layer's "
    "autograd nodes run in backward, real dtypes; loss_copy_bytes = the same for the loss's "
    "own copies, forward and backward (a language model's shifted logits); "
    "bwd_row_reductions = [rows per sample, outputs] of each of those reductions that sums a "
    "dense input's leading dimensions (a bias gradient), one reduce_kernel each, and a third "
    "number where its input is not half under autocast: its bytes per element there (4: an "
    "fp32 gradient, as an add of fp32 embeddings makes).")
