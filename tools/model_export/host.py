"""The host's work per layer (tools/export_model.py's host_* keys): what the function
and dispatch modes (tracing.py) count per Python call, aten dispatch, autograd node and
autocast cast, and the lines that write it."""

import torch

from .ops import AMP_FP32, AMP_HALF, _ops


# -- the host's work per layer (host_ops, host_dispatches, host_nodes, host_amp_casts,
#    host_amp_nodes) --
# ddpsim charges the host per dispatched op in forward and per autograd node in
# backward (sim/train/host.c). torch.profiler's top-level cpu_op events on the main
# thread are the ops called from Python (aten::linear, aten::view, ...); the ops they
# call (aten::t, aten::addmm, autocast's aten::to) nest inside them. The function mode
# below sees exactly the calls made from Python (a mode is off inside its own handler),
# so a call that reaches the dispatcher at least once is one top-level op; .size() and
# .dim() do not reach it. A no-op the profiler still records (aten::to to the same
# dtype) or an index the profiler shows as several ops (x[:, a:b] as aten::slice twice)
# counts once or not at all: GPT-2's forward counts 578 against its trace's 681.
# Counts are per iteration, not divided by the batch.
HOST_HEADER = (
    "host_ops = top-level ATen ops the layer's forward dispatches from Python (torch "
    "function calls that reach the dispatcher; views count); host_dispatches = the aten "
    "ops those calls dispatch, nested ones included (ddpsim charges the forward per "
    "dispatch where a file has them); host_views = the part of those dispatches that "
    "launches nothing on CUDA (views and aliases: view, t, transpose, permute, expand, "
    "_unsafe_view, detach; empty tensors), which ddpsim leaves uncharged (a host's forward "
    "is per kernel-launching dispatch: bench/host_pool.py); host_nodes = autograd nodes "
    "its backward runs, AccumulateGrad of its parameters included; host_view_nodes = the part of "
    "them that launch nothing (every aten op the node dispatches, the engine's sum over a "
    "broadcast dimension included, is a view or makes an empty tensor: a view's backward "
    "such as ViewBackward0 or TBackward0, clone's, add's without broadcasting, an expand's "
    "to its own size; not select's, slice's, split's or unbind's, which fill and copy or "
    "concatenate), which ddpsim leaves uncharged; host_view_nodes_amp = the same "
    "under CUDA autocast (a rerun with CUDA's cast lists on CPU autocast, bf16 as the half "
    "type: tools/model_export/autocast.py), which --amp leaves uncharged in their place: fewer "
    "where a node joins a half and an fp32 input, as an add of a linear's half output and a "
    "LayerNorm's fp32 one, since autograd casts the half input's gradient inside the node; "
    "host_amp_casts = the "
    "cast dispatches CUDA autocast adds in its forward (each half op's fp32 inputs, a "
    "parameter once per forward as autocast caches it; each fp32 op's half inputs); "
    "host_amp_nodes = the ToCopyBackward0 nodes those casts add (inputs that require "
    "grad); host_syncs = the aten ops in its forward that make the host wait for the GPU "
    "(_local_scalar_dense: .item(), bool(tensor); nonzero, masked_select, unique: outputs "
    "sized by their data) and its calls that copy a tensor to the host (.cpu(), .tolist(), "
    ".numpy()), written only where there are any (Hugging Face's mask check "
    "`padding_mask.all()`; ddpsim makes the layer's last dispatches wait for its kernels). "
    "Per iteration, whatever the batch.")


def host_dispatched(rec):
    return getattr(rec, "host_dispatch_count", 0)


def host_viewed(rec):
    return getattr(rec, "host_view_count", 0)


# The dispatches that launch nothing on CUDA: a view or alias of its input (the
# schema's is_view: view, t, transpose, permute, expand, slice, select, unsqueeze,
# split, ...), or one of these, which make a tensor without running a kernel
# (_unsafe_view: reshape's copy-free result; empty*: an allocation; as_strided_: a
# metadata change). On the 2026-11-28c H200 host they cost the host nothing that the
# spin measurement can see (bench/results/gpu-2026-11-28c-h200/notes-hostkinds.md):
# DeepLearningExamples' BERT dispatches 686 of them among 1188 forward ops, a ResNet
# 55 of 282, and its forward host per dispatch was half the ResNet's.
NO_KERNEL = _ops("_unsafe_view", "alias", "detach", "lift_fresh", "empty", "empty_like",
                 "empty_strided", "empty_permuted", "new_empty", "new_empty_strided", "t",
                 # in-place views and storage changes: metadata only (is_view is False
                 # for them, their return is the input written, not an alias)
                 "as_strided_", "t_", "transpose_", "squeeze_", "unsqueeze_", "swapdims_",
                 "swapaxes_", "resize_", "set_")


def host_view_dispatch(func):
    """Whether an aten op launches no kernel on CUDA (NO_KERNEL above)."""
    return func.is_view or func._overloadpacket in NO_KERNEL


def host_count_dispatch(rec, func=None, sync=False):
    """Every aten op the dispatch mode sees in forward (nested ones too), and
    among them those that launch no kernel (a sync is never one)."""
    if rec.phase == "fwd":
        rec.host_dispatch_count = host_dispatched(rec) + 1
        if func is not None and not sync and host_view_dispatch(func):
            rec.host_view_count = host_viewed(rec) + 1


# The forward's host-device syncs (host_syncs). On CUDA these wait for every kernel queued
# before them: a scalar or a data-sized output read back to the host (the dispatch mode
# sees them on CPU too: `bool(padding_mask.all())` dispatches all, then
# _local_scalar_dense), and the copies to the host, which on CPU return the tensor itself
# without a dispatch, so the function mode counts those calls.
SYNC_OPS = _ops("_local_scalar_dense", "nonzero", "masked_select", "_unique", "_unique2",
                "unique_dim", "unique_consecutive")
# Indexing with a bool mask (x[mask], x[mask] = v) runs nonzero inside CUDA's kernel, which
# on CPU the dispatch mode does not see.
MASK_INDEX_OPS = _ops("index", "index_put", "index_put_", "_index_put_impl_")
# Not .to(device): on CPU every tensor's device is the CPU, so `x.to(device=y.device)`
# (Hugging Face moves its mask so) would look like a copy to the host.
HOST_COPY_CALLS = {"cpu", "tolist", "numpy"}


def host_sync_dispatch(func, args):
    """Whether an aten op makes the host wait for the GPU on CUDA."""
    packet = func._overloadpacket
    if packet in SYNC_OPS:
        return True
    if packet in MASK_INDEX_OPS and len(args) > 1 and isinstance(args[1], (list, tuple)):
        return any(isinstance(t, torch.Tensor) and t.dtype in (torch.bool, torch.uint8)
                   for t in args[1])
    return False


def host_count_sync(rec):
    """One host-device sync of the forward, held with the dispatches until the
    call's layer is known (host_count_op)."""
    if rec.phase == "fwd":
        rec.host_pending_syncs = getattr(rec, "host_pending_syncs", 0) + 1


def host_copy_call(func):
    """Whether a torch function call copies a tensor to the host (Tensor.cpu,
    .tolist, .numpy): a sync on CUDA, and on CPU a call that dispatches
    nothing."""
    return getattr(func, "__name__", None) in HOST_COPY_CALLS and \
        getattr(func, "__qualname__", "").startswith(("Tensor.", "TensorBase."))


def host_count_op(rec, layer, dispatches, views=0):
    """One top-level call from Python that dispatched `dispatches` aten ops
    (host_count_dispatches), `views` of them launching no kernel. A call no
    layer holds yet (a view in a composite module before its first op) goes to
    the next layer that runs one."""
    if not dispatches:
        return
    pending = getattr(rec, "host_pending_ops", 0) + 1
    host_count_dispatches(rec, dispatches)
    rec.host_pending_views = getattr(rec, "host_pending_views", 0) + views
    if layer is None:
        rec.host_pending_ops = pending
        return
    layer.host_ops = getattr(layer, "host_ops", 0) + pending
    layer.host_dispatches = getattr(layer, "host_dispatches", 0) + rec.host_pending_dispatches
    layer.host_views = getattr(layer, "host_views", 0) + rec.host_pending_views
    layer.host_syncs = getattr(layer, "host_syncs", 0) + getattr(rec, "host_pending_syncs", 0)
    rec.host_pending_ops = 0
    rec.host_pending_views = 0
    rec.host_pending_dispatches = 0
    rec.host_pending_syncs = 0


def host_count_dispatches(rec, dispatches):
    """The aten ops one top-level call dispatched, nested ones included (linear
    on a 3-d input: t, view, addmm, _unsafe_view; conv2d: convolution). The
    host's forward cost per op is nearly the same per dispatch in every model
    (bench/host_kinds.py), while top-level ops decompose into 1 to 5 of them."""
    rec.host_pending_dispatches = getattr(rec, "host_pending_dispatches", 0) + dispatches


def host_count_casts(rec, packet, ins, layer):
    """The casts autocast dispatches for one op (AMP_* policies above) and the
    ToCopyBackward0 nodes they add: a half op casts each fp32 input, a parameter
    once per forward (autocast's cache of casts of leaf tensors); an fp32 op
    casts each half input."""
    cached = rec.__dict__.setdefault("host_cast_params", set())
    casts = []
    if packet in AMP_HALF:
        for t in ins:
            ptr = t.untyped_storage().data_ptr()
            if ptr in rec.state_store:
                if ptr in rec.param_store and ptr not in cached:
                    cached.add(ptr)
                    casts.append(t)
            elif rec.held_size(t) > 2:
                casts.append(t)
    elif packet in AMP_FP32:
        casts = [t for t in ins if t.untyped_storage().data_ptr() not in rec.state_store
                 and rec.held_size(t) < 4]
    layer.host_amp_casts = getattr(layer, "host_amp_casts", 0) + len(casts)
    layer.host_amp_nodes = (getattr(layer, "host_amp_nodes", 0) +
                            sum(1 for t in casts if t.requires_grad))


# The model's own casts (Tensor.type, .to, .float) that this fp32 run skips: a cast to the
# dtype a tensor already has returns it, dispatching nothing (aten::to's to_will_alias),
# while under autocast the same line casts. GPT-2's eager attention
# (transformers/models/gpt2/modeling_gpt2.py, eager_attention_forward) writes
# `attn_weights = attn_weights.type(value.dtype)` after the softmax: here fp32 to fp32;
# under autocast the softmax's fp32 output to the value's half, one _to_copy kernel
# (the H200 GPT-2 bf16 trace: aten::copy_ float -> c10::BFloat16 under _to_copy, then
# native_dropout on c10::BFloat16), and dropout and what follows read half. The target
# dtype is the one the model passes: a tensor's (.to(other)), or a dtype read from a
# tensor's .dtype by the call just before (value.dtype: that tensor's autocast size), or
# a literal dtype (.float(), .to(torch.float32)): its size.
CAST_CALLS = (torch.Tensor.type, torch.Tensor.to, torch.Tensor.float)
# Factories given a dtype read from a tensor just before make a tensor of that tensor's
# autocast dtype: Hugging Face's KV cache starts as `torch.tensor([], dtype=
# key_states.dtype)` (transformers/cache_utils.py, DynamicLayer.lazy_initialization),
# half under autocast, so the `cat` that appends the keys and values stays half (the
# trace: no cast before the attention's products), where an fp32 empty tensor would
# promote it to fp32.
FACTORY_CALLS = (torch.tensor, torch.empty, torch.zeros, torch.ones, torch.full)


def is_dtype_read(func):
    return getattr(func, "__self__", None) is torch._C.TensorBase.dtype


def amp_cast_call(rec, layer, func, args, kwargs, out, dtype_read):
    """Forward, a torch function call: where it is a cast the fp32 run skipped (out is its
    input) and autocast's sizes differ, the storage reads at the target size from now on
    (rec.amp_recast; saves pending now hold the uncast tensor: rec.recast_barrier), and
    layer counts the cast kernel (amp_cast_bytes, read + write; amp_upcast_bytes where it
    widens) and its dispatch and ToCopyBackward0 node (host_amp_casts, host_amp_nodes).
    dtype_read: (dtype, autocast size) of a .dtype read by the call just before, or None."""
    if func in FACTORY_CALLS:
        if dtype_read is not None and kwargs.get("dtype") == dtype_read[0] and \
                isinstance(out, torch.Tensor) and out.is_floating_point():
            rec.amp_elem[out.untyped_storage().data_ptr()] = dtype_read[1]
        return
    if func not in CAST_CALLS or not args or not isinstance(args[0], torch.Tensor):
        return
    t = args[0]
    if out is not t or not t.is_floating_point():
        return  # a cast this run dispatches too (_to_copy): amp_op counts it
    rest = list(args[1:]) + list(kwargs.values())
    other = next((a for a in rest if isinstance(a, torch.Tensor)), None)
    dtype = next((a for a in rest if isinstance(a, torch.dtype)), None)
    if func is torch.Tensor.float:
        target = 4
    elif other is not None:
        target = rec.held_size(other)
    elif dtype is None:
        return
    elif dtype_read is not None and dtype_read[0] == dtype:
        target = dtype_read[1]
    else:
        target = dtype.itemsize
    size = rec.held_size(t)
    if target == size:
        return
    ptr = t.untyped_storage().data_ptr()
    rec.amp_recast[ptr] = target
    rec.recast_barrier[ptr] = len(rec.amp_pending)
    if layer is None:
        return
    moved = t.numel() * (size + target)
    layer.amp_cast_bytes += moved
    if target > size:
        layer.amp_upcast_bytes += moved
    layer.host_amp_casts = getattr(layer, "host_amp_casts", 0) + 1
    layer.host_amp_nodes = getattr(layer, "host_amp_nodes", 0) + (1 if t.requires_grad else 0)
    layer.amp_model_casts = getattr(layer, "amp_model_casts", 0) + 1


# The backward's nodes that launch nothing: a node is a view node when every aten op it
# dispatches launches no kernel (host_view_dispatch; none at all for clone's backward,
# which returns its gradient, or expand's where nothing was broadcast). The backward of
# a view reshapes its gradient (ViewBackward0, TBackward0, PermuteBackward0, ...); that of
# select, slice, split, unbind or as_strided does not: it fills a zero tensor and copies
# the gradient into it, or concatenates (FunctionsManual.cpp), and an expand that
# broadcast sums (sum_to_size): those launch kernels, and the host pays them as any node
# (bench/results/gpu-2026-11-28c-h200/notes-hostkinds.md). Classified by what runs, on the
# export's CPU run, which dispatches the same ops for these nodes as CUDA does.
def host_node_dispatch(rec, func):
    """An aten op dispatched inside a node of the backward (between its pre-hook and its
    hook): whether the node launched a kernel."""
    if rec.bwd_node_open and not host_view_dispatch(func):
        rec.bwd_node_launched = True


def host_node_begin(rec, layer, node):
    """A node of layer's backward starts (its pre-hook): counted, its window open; a
    cast's ToCopyBackward0 counted apart too (host_cast_nodes: record_amp's check)."""
    layer.host_nodes = getattr(layer, "host_nodes", 0) + 1
    if type(node).__name__ == "ToCopyBackward0":
        layer.host_cast_nodes = getattr(layer, "host_cast_nodes", 0) + 1
    rec.bwd_node_open, rec.bwd_node_launched = True, False


def host_node_end(rec, layer):
    if rec.bwd_node_open and not rec.bwd_node_launched:
        layer.host_view_nodes = getattr(layer, "host_view_nodes", 0) + 1
    rec.bwd_node_open = False


def host_lines(rec, l):
    # AccumulateGrad: one node per parameter tensor, run in the backward (not tagged)
    nodes = getattr(l, "host_nodes", 0) + len(l.params)
    return ["    host_ops: %d" % getattr(l, "host_ops", 0),
            "    host_dispatches: %d" % getattr(l, "host_dispatches", 0),
            "    host_views: %d" % getattr(l, "host_views", 0),
            "    host_nodes: %d" % nodes,
            "    host_view_nodes: %d" % getattr(l, "host_view_nodes", 0),
            "    host_view_nodes_amp: %d" % getattr(l, "host_view_nodes_amp", 0),
            "    host_amp_casts: %d" % getattr(l, "host_amp_casts", 0),
            "    host_amp_nodes: %d" % getattr(l, "host_amp_nodes", 0)] + \
        (["    host_syncs: %d" % l.host_syncs] if getattr(l, "host_syncs", 0) else [])
