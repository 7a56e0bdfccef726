"""The bytes a layer's backward kernels move and the gradient accumulations where a
tensor's gradients meet (tools/export_model.py's bwd_bytes, amp_bwd_bytes,
bwd_accum_bytes, amp_bwd_accum_bytes)."""

import torch

from .attention import SOFTMAX_BWD, note_core_op
from .kernels import BWD_COPY, BWD_REDUCE, GEMM_OPS, bwd_elem_size
from .legacy_ew import note_legacy
from .ops import NO_TRAFFIC, _ops, per_sample, tensors


# -- The bytes a layer's backward kernels move (bwd_bytes, amp_bwd_bytes) and the gradient
# accumulations where a tensor's gradients meet (bwd_accum_bytes, amp_bwd_accum_bytes).
# Kept in their own functions. Every op an autograd node of the layer runs counts: its
# tensor inputs read and outputs written (views, no-ops, the reductions and copies above
# excluded: they are bwd_reduce_bytes / bwd_copy_bytes), a broadcast input's repeated
# elements once (distinct_numel). Parameters and their gradients are
# excluded (the simulator charges weights per parameter, not per sample). ReLU's
# threshold_backward reads the gradient and the saved output and writes the input's
# gradient (3 passes); the residual add's AddBackward0 runs no op (it hands the gradient on).
# Where a tensor feeds several ops, autograd's engine adds their gradients in the input
# buffer of the node that made the tensor (InputBuffer::add, torch/csrc/autograd/
# input_buffer.cpp: old + new, or add_ in place), after the node that delivered the second
# gradient returns (the trace shows ResNet's as aten::add_ under ConvolutionBackward0):
# those adds belong to the layer that made the tensor (bwd_accum_bytes), one kernel each.
# Parameter gradients that meet (tied weights) are per iteration and not counted.
BWD_FILL = _ops("fill_", "zero_", "zeros", "zeros_like", "new_zeros")
ACCUM_OPS = _ops("add", "add_")
# Backward ops whose CUDA kernel zero-fills the input gradient, then writes it, and takes
# only the shape of its `self` argument (max_pool2d_with_indices_backward_out_cuda: zero_
# then max_pool_backward_nchw; the trace shows both kernels).
POOL_BWD = _ops("max_pool2d_with_indices_backward", "max_pool3d_with_indices_backward")


def note_bwd_made(rec, func, out):
    """Backward, every op (first): the storages its ops wrote (gradients), so that one
    reusing the memory of a saved tensor already freed is not taken for it. True."""
    made = rec.__dict__.setdefault("bwd_made", set())
    packet = func._overloadpacket
    if func.is_view or packet in NO_TRAFFIC or packet.__name__.endswith("_"):
        return True  # a saved tensor unpacked (detach), a view, or written in place
    for t in tensors(out):
        made.add(t.untyped_storage().data_ptr())
    return True


def distinct_numel(t):
    """Elements of t a kernel fetches from memory: a broadcast (expanded) dimension,
    stride 0, repeats the same elements, which the kernel reads from cache. Mean's
    backward divides the (N, C, 1, 1) gradient expanded to (N, C, H, W): it reads N*C
    elements and writes N*C*H*W (a squeeze-and-excitation gate's global pool)."""
    n = 1
    for size, stride in zip(t.shape, t.stride()):
        if stride != 0:
            n *= size
    return n if t.numel() else 0


def bwd_tensors_bytes(rec, layer, objs, amp, size=None):
    """Bytes of objs' tensors as a backward op touches them (bwd_elem_size), or under
    autocast every floating one at `size` bytes where given."""
    pshapes = getattr(layer, "param_shapes", None)
    if pshapes is None:
        pshapes = layer.param_shapes = {tuple(rec.params[i][1].shape) for i in layer.params}
    total = 0
    for t in tensors(objs):
        if t.untyped_storage().data_ptr() in rec.state_store or tuple(t.shape) in pshapes:
            continue
        forced = size if amp and size and t.is_floating_point() else None
        total += distinct_numel(t) * (forced or bwd_elem_size(rec, layer, t, amp))
    return total


def bwd_op_bytes(rec, layer, func, args, kwargs, out, amp):
    """Bytes one backward op's kernels read and write (0 for views and no-ops)."""
    packet = func._overloadpacket
    if func.is_view or packet in NO_TRAFFIC or packet in BWD_REDUCE or packet in BWD_COPY:
        return 0
    written = bwd_tensors_bytes(rec, layer, out, amp)
    if packet in BWD_FILL:
        return written
    if packet in POOL_BWD:  # grad_output and indices read; the fill and the kernel write
        return bwd_tensors_bytes(rec, layer, (args[0], args[-1]), amp) + 2 * written
    if packet in GEMM_OPS:
        # under autocast a product's backward runs in the half type: its forward saved
        # the half inputs autocast cast for it, and its output's gradient is half
        return bwd_tensors_bytes(rec, layer, (args, kwargs, out), amp, 2)
    read = bwd_tensors_bytes(rec, layer, (args, kwargs), amp)
    if packet in SOFTMAX_BWD:
        # (grad_output, output, dim, input_dtype): grad_output is the gradient of the
        # saved output and has its dtype (fp32 under autocast, AMP_FP32_OUT); tmp =
        # grad_output * output too; then the kernel reads tmp and output again
        size = bwd_elem_size(rec, layer, args[1], amp)
        grad = bwd_tensors_bytes(rec, layer, args[1], amp, size)
        return 5 * grad + written
    return read + written


def note_amp_out(rec, layer, out):
    """Forward: the autocast size of the layer's latest output (its gradients' size)."""
    outs = [t for t in tensors(out) if t.is_floating_point()]
    if layer is not None and outs:
        layer.amp_out_size = rec.held_size(outs[0])


def note_bwd_bytes(rec, layer, func, args, kwargs, out):
    """Backward, inside one of the layer's nodes: its kernels' bytes."""
    moved = bwd_op_bytes(rec, layer, func, args, kwargs, out, False)
    layer.bwd_bytes = getattr(layer, "bwd_bytes", 0) + moved
    note_legacy(layer, "bwd", func, args, kwargs, out, moved)
    amp_moved = bwd_op_bytes(rec, layer, func, args, kwargs, out, True)
    layer.amp_bwd_bytes = getattr(layer, "amp_bwd_bytes", 0) + amp_moved
    note_core_op(layer, "bwd", func, args, kwargs, out, moved, amp_moved)


def note_node_outputs(rec, node, grad_inputs):
    """A node's post-hook (before the engine adds its outputs to the next nodes' input
    buffers): which layer made the tensor each output gradient is for."""
    rec.accum_to = {}
    for g, (nf, _) in zip(grad_inputs, node.next_functions):
        layer = rec.node_layer.get(nf)
        if isinstance(g, torch.Tensor) and layer is not None:
            rec.accum_to[g.untyped_storage().data_ptr()] = layer


def note_accum(rec, func, args, kwargs, out):
    """Between a node's post-hook and the next node: the engine's gradient accumulation.
    Returns whether the op was one."""
    to = getattr(rec, "accum_to", None)
    if not to or func._overloadpacket not in ACCUM_OPS:
        return False
    layer = next((to[t.untyped_storage().data_ptr()] for t in tensors(args)
                  if t.untyped_storage().data_ptr() in to), None)
    if layer is None:
        return False
    for key, amp in (("bwd_accum_bytes", False), ("amp_bwd_accum_bytes", True)):
        moved = bwd_tensors_bytes(rec, layer, (args, kwargs), amp) + \
            bwd_tensors_bytes(rec, layer, out, amp)
        setattr(layer, key, getattr(layer, key, 0) + moved)
        if not amp:
            note_legacy(layer, "accum", func, args, kwargs, out, moved)
    return True


def bwd_bytes_lines(layer, cls, batch):
    """bwd_bytes and amp_bwd_bytes for memory layers (0 included: the residual add's
    backward runs no kernel); the accumulations for any layer, where nonzero."""
    out = []
    if cls == "memory":
        for key in ("bwd_bytes", "amp_bwd_bytes"):
            out.append("    %s: %d" % (key, per_sample(getattr(layer, key, 0), batch)))
    for key in ("bwd_accum_bytes", "amp_bwd_accum_bytes"):
        v = per_sample(getattr(layer, key, 0), batch)
        if v:
            out.append("    %s: %d" % (key, v))
    return out


BWD_BYTES_HEADER = (
    "bwd_bytes = bytes read + written by the ops a memory layer's autograd nodes run in "
    "backward (tensor inputs and outputs, real dtypes, a broadcast input's repeated "
    "elements once; views, no-ops, the reductions and "
    "copies above and parameters' gradients excluded; max-pool's backward: the output "
    "gradient and indices read, the input gradient zero-filled and written); "
    "amp_bwd_bytes = the same with autocast's dtypes (a saved tensor's, a gradient the "
    "layer's output's); bwd_accum_bytes / amp_bwd_accum_bytes = autograd's additions "
    "where the gradients of a tensor the layer made meet (read two, write one), a kernel "
    "each.")
