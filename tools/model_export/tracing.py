"""The recorded run of tools/export_model.py: the dispatch and function modes that
attribute every aten op and Python call to the running layer and hand it to the
counters, the factory that builds the model, the one forward and backward, the
channels-last rerun for nhwc_legacy_ew and the rerun under CUDA's autocast lists for
host_view_nodes_amp."""

import contextlib
import difflib
import importlib
import importlib.util
import inspect
import os
import sys

import torch
import torch.nn.functional as F
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils.flop_counter import FlopCounterMode

from .attention import note_core_op
from .autocast import Fp32Products, cuda_autocast_on_cpu
from .bwd_bytes import note_accum, note_amp_out, note_bwd_bytes, note_bwd_made, note_node_outputs
from .cli import ExportError, factory_file
from .flops import op_flops
from .host import (amp_cast_call, host_copy_call, host_count_dispatch,
                   host_count_op, host_count_sync, host_dispatched, host_node_begin,
                   host_node_dispatch, host_node_end, host_sync_dispatch, host_viewed,
                   is_dtype_read)
from .kernels import (note_bwd_kernels, note_cat, note_conv_groups, note_gemm_align,
                      note_embedding, note_layer_norm, note_loss_copy, note_max_pool)
from .legacy_ew import amp_mixes_dtypes, note_cast_ew, note_legacy
from .ops import NO_TRAFFIC, tensors
from .recorder import Recorder


class Dispatch(TorchDispatchMode):
    def __init__(self, rec):
        super().__init__()
        self.rec = rec

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        rec = self.rec
        rec.resolve_saved(func, args, kwargs)
        out = func(*args, **kwargs)
        packet = func._overloadpacket
        sync = host_sync_dispatch(func, args)
        host_count_dispatch(rec, func, sync)
        if rec.phase == "bwd":
            host_node_dispatch(rec, func)
        if sync:
            host_count_sync(rec)
        if rec.phase == "fwd" and rec.stack:
            quiet = func.is_view or packet in NO_TRAFFIC
            top = rec.stack[-1]
            if not top.leaf and quiet and rec.group is None:
                rec.amp_op(func, args, kwargs, out, None)
                return out
            layer = rec.current(None if quiet else packet.__name__.rstrip("_"))
            before = (layer.op_bytes, layer.amp_bytes) if layer is not None else (0, 0)
            rec.amp_op(func, args, kwargs, out, layer)
            note_amp_out(rec, layer, out)
            if layer is None:
                return out
            note_core_op(layer, "fwd", func, args, kwargs, out, layer.op_bytes - before[0],
                         layer.amp_bytes - before[1])
            layer.ops.add(packet)
            note_cat(rec, layer, "fwd", func, args, kwargs, out)
            if not quiet:
                mixed = amp_mixes_dtypes(rec, func, args, kwargs, out)
                note_legacy(layer, "fwd", func, args, kwargs, out,
                            rec.user_bytes((args, kwargs)) + rec.user_bytes(out), mixed)
                if mixed:
                    note_cast_ew(layer, func, args, kwargs, out, layer.amp_bytes - before[1])
            layer.fwd_flops += op_flops(func, args, kwargs, out)
            note_gemm_align(layer, func, args, out)
            note_conv_groups(layer, func, args)
            note_max_pool(layer, func, args, kwargs)
            note_layer_norm(layer, func, args, quiet)
            note_embedding(layer, func, args, quiet)
            if not top.leaf:
                if not quiet:
                    layer.fwd_bytes += rec.user_bytes((args, kwargs, out))
                for t in tensors((args, kwargs)):
                    i = rec.param_store.get(t.untyped_storage().data_ptr())
                    if i is not None:
                        rec.attach(layer, i)
        elif rec.phase == "bwd" and note_bwd_made(rec, func, out) and \
                note_accum(rec, func, args, kwargs, out):
            pass
        elif rec.phase == "bwd" and rec.bwd_layer is not None:
            rec.bwd_layer.bwd_flops += op_flops(func, args, kwargs, out)
            note_bwd_kernels(rec, rec.bwd_layer, func, args, kwargs, out)
            note_bwd_bytes(rec, rec.bwd_layer, func, args, kwargs, out)
        elif rec.phase in ("loss", "bwd"):
            note_loss_copy(rec, func, args, kwargs, out)
        return out


class Functions(TorchFunctionMode):
    """Runs dropout as aten.native_dropout (a bool mask, as on CUDA) and
    tags each autograd node the forward makes with the layer that made it."""

    def __init__(self, rec):
        super().__init__()
        self.rec = rec

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        rec = self.rec
        before, before_views = host_dispatched(rec), host_viewed(rec)
        dtype_read, rec.dtype_read = getattr(rec, "dtype_read", None), None
        if func is F.dropout and rec.phase == "fwd":
            a = inspect.signature(F.dropout).bind(*args, **kwargs)
            a.apply_defaults()
            x, p, training, inplace = (a.arguments[k] for k in ("input", "p", "training", "inplace"))
            if training and p > 0:
                out = torch.ops.aten.native_dropout(x, p, True)[0]
                if inplace:
                    raise ExportError("in-place dropout is not supported")
            else:
                out = x
        elif func is F.scaled_dot_product_attention and rec.phase == "fwd":
            # CPU takes the math path (saving the SxS matrices) whenever dropout
            # is on; without dropout it takes its flash kernel, which saves what
            # CUDA's flash attention saves (q, k, v, out, logsumexp; CUDA keeps
            # no dropout mask, only an RNG seed). Same FLOPs.
            # (query, key, value, attn_mask=None, dropout_p=0.0, ...): a builtin
            args, kwargs = list(args), dict(kwargs)
            if len(args) > 4 and args[4] > 0:
                args[4] = 0.0
                rec.sdpa_no_dropout = True
            if kwargs.get("dropout_p", 0.0) > 0:
                kwargs["dropout_p"] = 0.0
                rec.sdpa_no_dropout = True
            out = func(*args, **kwargs)
        else:
            out = func(*args, **kwargs)
        if rec.phase == "fwd" and rec.stack:
            dispatched = host_dispatched(rec) - before
            if host_copy_call(func):
                # on CUDA the copy to the host dispatches _to_copy (on CPU
                # nothing): one dispatch, so that its sync lands on this
                # layer and a layer never syncs more often than it dispatches
                host_count_sync(rec)
                dispatched = max(dispatched, 1)
            layer = rec.current(None)
            host_count_op(rec, layer, dispatched, host_viewed(rec) - before_views)
            amp_cast_call(rec, layer, func, args, kwargs, out, dtype_read)
            if is_dtype_read(func) and args and isinstance(args[0], torch.Tensor):
                rec.dtype_read = (out, rec.held_size(args[0]))
            if layer is not None:
                self.tag(out, layer)
        return out

    def tag(self, out, layer):
        todo = [t.grad_fn for t in tensors(out) if t.grad_fn is not None]
        seen = self.rec.node_layer
        while todo:
            n = todo.pop()
            if n is None or n in seen or type(n).__name__ == "AccumulateGrad":
                continue
            seen[n] = layer
            todo.extend(nf for nf, _ in n.next_functions)


def loss_of(out, kind):
    logits = next(t for t in tensors(out) if t.is_floating_point())
    g = torch.Generator().manual_seed(1)
    if kind == "lm":
        logits = logits[:, :-1, :]
    flat = logits.reshape(-1, logits.shape[-1])
    target = torch.randint(0, flat.shape[-1], (flat.shape[0],), generator=g)
    return F.cross_entropy(flat, target)


def call(model, x):
    if isinstance(x, dict):
        return model(**x)
    if isinstance(x, (tuple, list)):
        return model(*x)
    return model(x)


def load_factory(spec):
    f = factory_file(spec)
    try:
        if f:
            path, fn = f
            mod_spec = importlib.util.spec_from_file_location("export_factory", path)
            if mod_spec is None:
                raise ExportError("%s: cannot load it as Python" % path)
            mod = importlib.util.module_from_spec(mod_spec)
            sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
            mod_spec.loader.exec_module(mod)
        else:
            modname, _, fn = spec.partition(":")
            if not fn:
                raise ExportError("factory %r: expected module:function or file.py[:function]"
                                  % spec)
            mod = importlib.import_module(modname)
    except ExportError:
        raise
    except (ImportError, OSError, SyntaxError) as e:  # the user's file or module
        raise ExportError("factory %r: cannot load it: %s: %s" % (spec, type(e).__name__, e))
    if not callable(getattr(mod, fn, None)):
        raise ExportError("factory %r: no function %s" % (spec, fn))
    return getattr(mod, fn)


def build(factory, batch, attention):
    params = inspect.signature(factory).parameters
    kw = {}
    if "batch" in params:
        kw["batch"] = batch
    if "attention" in params:
        kw["attention"] = attention
    got = factory(**kw)
    meta = {}
    shape = "a model, or (model, example_input) or (model, example_input, meta)"
    if isinstance(got, torch.nn.Module):
        model, x = got, None
    elif isinstance(got, (tuple, list)) and len(got) in (2, 3):
        model, x, meta = (tuple(got) + ({},))[:3]
    else:
        raise ExportError("the factory returned %s; expected %s" % (type(got).__name__, shape))
    if not isinstance(model, torch.nn.Module):
        raise ExportError("the factory's model is a %s, not a torch.nn.Module; expected %s"
                          % (type(model).__name__, shape))
    if not isinstance(meta, dict):
        raise ExportError("the factory's meta is a %s, not a dict" % type(meta).__name__)
    default_input = x is None
    if default_input:
        x = torch.randn(batch, 3, 224, 224, generator=torch.Generator().manual_seed(0))
    return model, x, dict(meta), default_input


def record(model, x, loss_kind, amp=False):
    """One forward and backward; returns the Recorder and FlopCounterMode's totals.
    amp: the forward and the loss under CUDA's autocast lists (autocast.py), the
    backward after it, as a training step runs them."""
    model.train()
    rec = Recorder(model)
    for m in model.modules():
        rec.handles.append(m.register_forward_pre_hook(rec.pre_hook, with_kwargs=True))
        rec.handles.append(m.register_forward_hook(rec.post_hook, with_kwargs=True))
    for i, (_, p) in enumerate(rec.params):
        rec.handles.append(p.register_post_accumulate_grad_hook(
            lambda _p, i=i: rec.ready.append(i)))
    counter = FlopCounterMode(display=False)
    # under amp the half products run in fp32 below every mode (Fp32Products: their
    # values are never read, and bf16's are ~20x slower on CPUs without bf16 instructions)
    with (Fp32Products() if amp else contextlib.nullcontext()), counter:
        with torch.autograd.graph.saved_tensors_hooks(rec.pack, lambda t: t), \
                (cuda_autocast_on_cpu() if amp else contextlib.nullcontext()):
            with Functions(rec), Dispatch(rec):
                rec.phase = "fwd"
                out = call(model, x)
                rec.phase = None
            fwd_total = counter.get_total_flops()
            with Dispatch(rec):
                rec.phase = "loss"
                loss = loss_of(out, loss_kind)
                rec.phase = None
        for node, layer in rec.node_layer.items():
            def pre(grad_outputs, node=node, layer=layer):
                rec.bwd_layer = layer
                rec.accum_to = None
                host_node_begin(rec, layer, node)

            def post(grad_inputs, grad_outputs, node=node, layer=layer):
                host_node_end(rec, layer)
                note_node_outputs(rec, node, grad_inputs)
            rec.handles.append(node.register_prehook(pre))
            rec.handles.append(node.register_hook(post))
        with Dispatch(rec):
            rec.phase = "bwd"
            loss.backward()
            rec.phase = None
    for h in rec.handles:
        h.remove()
    rec.out = out
    return rec, fwd_total, counter.get_total_flops() - fwd_total


def record_nhwc_legacy(rec, x, factory, args, meta):
    """For a model whose input x (the first run's) is a 4-d float tensor: runs a fresh
    build of it again in channels-last and copies each layer's legacy_ew counts into
    rec's layer of the same name and place (the forward orders aligned by name). A layer
    only that run has (VGG's flatten of an NHWC tensor copies it: a module-less op run
    the NCHW run does not have) has no layer to go to and is left out. Other models are
    not built again: channels-last changes nothing for them."""
    if not isinstance(x, torch.Tensor) or x.dim() != 4 or not x.is_floating_point():
        return
    model, x, _, _ = build(factory, args.batch, args.attention)
    model = model.to(memory_format=torch.channels_last)
    x = x.contiguous(memory_format=torch.channels_last)
    rec2, _, _ = record(model, x, meta.get("loss", "classify"))
    names, names2 = [l.name for l in rec.layers], [l.name for l in rec2.layers]
    match = difflib.SequenceMatcher(None, names, names2, autojunk=False)
    for i, j, n in match.get_matching_blocks():
        for k in range(n):
            rec.layers[i + k].nhwc_legacy = getattr(rec2.layers[j + k], "legacy", None)


def record_amp(rec, x, factory, args, meta):
    """Runs a fresh build of the model again with the forward under CUDA's autocast lists
    (autocast.py) and gives each of rec's layers host_view_nodes_amp: its backward's
    nodes that launch nothing under autocast (host_node_end), found in the rerun's layer
    of the same name and place (the forward orders aligned by name, as
    record_nhwc_legacy's). The rerun's nodes other than its casts' ToCopyBackward0 must be
    the first run's, layer by layer: ExportError where a layer's count differs or a layer
    has no twin."""
    model, _, _, _ = build(factory, args.batch, args.attention)
    rec2, _, _ = record(model, x, meta.get("loss", "classify"), amp=True)
    names, names2 = [l.name for l in rec.layers], [l.name for l in rec2.layers]
    match = difflib.SequenceMatcher(None, names, names2, autojunk=False)
    for i, j, n in match.get_matching_blocks():
        for k in range(n):
            a, b = rec.layers[i + k], rec2.layers[j + k]
            nodes, nodes2 = (getattr(l, "host_nodes", 0) - getattr(l, "host_cast_nodes", 0)
                             for l in (a, b))
            if nodes != nodes2:
                raise ExportError("layer %s: %d autograd nodes besides casts' ToCopyBackward0 "
                                  "under autocast, %d without: host_view_nodes_amp would not "
                                  "count the same nodes" % (a.name, nodes2, nodes))
            a.host_view_nodes_amp = getattr(b, "host_view_nodes", 0)
    missing = [l.name for l in rec.layers if not hasattr(l, "host_view_nodes_amp")]
    if missing:
        raise ExportError("layers %s have no twin in the rerun under autocast (%d layers "
                          "there, %d here)" % (", ".join(missing[:5]), len(names2), len(names)))


def versions():
    out = ["torch %s" % torch.__version__]
    for m in ("torchvision", "transformers"):
        try:
            out.append("%s %s" % (m, importlib.import_module(m).__version__))
        except ImportError:
            out.append("%s not installed" % m)
    return ", ".join(out)
