#!/usr/bin/env python3
"""Export a PyTorch model as a ddpsim model file (models/*.yaml format).

Runs one real forward and backward on CPU at a small batch and writes, per
sample:
  layers      every leaf module call (a module with no children) in the
              order it runs, plus the work no module owns (residual adds,
              functional activations, the attention product and softmax of
              an unfused attention, mask arithmetic) as one layer per run of
              such operations inside a parent module, named
              <parent>.core when it multiplies activations (attention),
              else <parent>.<first op> (add, relu, ...); a module called k>1 times gives layers
              NAME, NAME/2, ... NAME/k.
  params      each parameter tensor once (a tied weight under its first
              registered name) in the layer that first uses it, in that
              module's registration order: name, numel, shape.
  class       conv | matmul | attention | memory, from the layer's ops.
  fwd_flops   torch.utils.flop_counter's formulas (FlopCounterMode's table)
  bwd_flops   for each aten op, attributed to layers by our own dispatch
              mode (forward: the running layer; backward: the layer whose
              forward made the autograd node being run). Convolutions are
              counted here from shapes and groups, 2*out_elems*(C_in/groups)
              *kh*kw per pass (forward; input gradient; weight gradient),
              because FlopCounterMode ignores groups in the weight-gradient
              pass (MobileNetV2's depthwise convolutions ~10x too much).
  fwd_bytes   module layers: bytes of the tensors passed in and returned
              (parameters and buffers excluded: the simulator adds weights);
              op layers: bytes read and written by each op (views free).
  act_bytes   bytes autograd saves for backward (saved_tensors_hooks),
              unique storages counted once, attributed to the layer whose
              forward saved them first; parameters and buffers excluded.
              Dropout runs as aten.native_dropout, which keeps a bool mask
              (1 byte/element) as CUDA does; CPU's dropout would keep a
              float noise tensor. Max-pool indices are int64 on CPU and GPU.
              Fused attention (scaled_dot_product_attention) runs without
              dropout: CPU then takes its flash kernel, which saves q, k, v,
              out and logsumexp as CUDA's flash attention does; with dropout
              CPU falls back to the math path and saves the SxS matrices.
  host_ops    the host's work for the layer (host_count_* below): top-level
              ATen ops its forward dispatches from Python (a torch function call
              that reaches the dispatcher; its nested ops are its own cost),
              the aten ops those calls dispatch, nested ones included
              (host_dispatches: the forward's cost is per dispatch, nearly the
              same in every model, bench/host_kinds.py),
              autograd nodes its backward runs (AccumulateGrad of its
              parameters included); under CUDA autocast, the cast dispatches
              autocast adds (host_amp_casts) and the ToCopyBackward0 nodes those
              casts add to the backward (host_amp_nodes); and, only where
              there are any, the forward's host-device syncs (host_syncs:
              .item() and bool(tensor) as _local_scalar_dense, nonzero and
              the other data-sized outputs, copies to the host).
  legacy_ew   the elementwise ops (copies included) PyTorch runs on its
              non-vectorised CUDA kernel, per pass: their bytes and their
              operand-elements, strided and transposed apart (legacy_kind);
              nhwc_legacy_ew the same from a second run in channels-last
              (4-d inputs).
  attn_products, attn_rest  an unfused attention core's kernels per pass: its
              batched products (GEMMs: kernels, FLOPs, bytes) and its other
              vectorised kernels (kernels, bytes), so that each is priced at its
              own rate (sim/train/compute.h).
  grad_ready  parameter names in the order their gradients were accumulated
              in the backward (post-accumulate-grad hooks: the order in
              which DDP's reducer hooks on the same AccumulateGrad nodes
              fire).
  registration  parameter names in model.parameters()'s order, written
              only where the layers' forward order lists them otherwise
              (BERT's token-type embeddings run before the position ones).
Every quantity is divided by the batch and rounded to an integer.

Usage:
  export_model.py FACTORY [--batch 2] [--attention eager|fused] --name NAME
                  [--output FILE]
FACTORY is `module:function` (torchvision.models:resnet50) or
`path/to/file.py[:function]` (function defaults to build). The function
returns a model, or (model, example_input) or (model, example_input, meta);
it is passed `batch` and `attention` when it takes them. Without an example
input a batch of 3x224x224 images is used.

Needs torch (and torchvision / transformers for those models): exit 2 with
install instructions when missing. Standard library + torch only.
"""

import argparse
import difflib
import importlib
import importlib.util
import inspect
import os
import shlex
import sys

class ExportError(Exception):
    pass


def make_parser():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("factory", help="module:function or file.py[:function]")
    ap.add_argument("--batch", type=int, default=2, help="batch of the recorded run (2)")
    ap.add_argument("--attention", choices=("eager", "fused"), default="eager")
    ap.add_argument("--name", required=True, help="the model's name in the file")
    ap.add_argument("--output", "-o", help="file to write (default: standard output)")
    ap.add_argument("--default-batch", type=int, help="default_batch to write (factory's or 32)")
    ap.add_argument("--optimizer", choices=("sgd", "adam"), help="optimizer (factory's or sgd)")
    ap.add_argument("--sample", help="what one sample is (factory's or 'one sample')")
    ap.add_argument("--threads", type=int, default=2, help="torch CPU threads (2)")
    return ap


def factory_file(spec):
    """FACTORY's (path, function) for file.py[:function], else None."""
    if ".py" not in spec:
        return None
    path, _, fn = spec.partition(".py")
    return path + ".py", fn.lstrip(":") or "build"


def check_args(argv):
    """The flags and the factory file, checked before torch is imported (which
    takes seconds, or fails where torch is missing): one line and exit 2 for a
    mistake, as argparse's own (usage, --help) are."""
    ap = make_parser()
    args = ap.parse_args(argv[1:])
    if args.batch < 1:
        ap.error("--batch must be positive")
    f = factory_file(args.factory)
    if f and not os.path.isfile(f[0]):
        sys.stderr.write("export_model.py: %s: no such file (FACTORY is module:function or "
                         "file.py[:function])\n" % f[0])
        sys.exit(2)
    return args


if __name__ == "__main__":
    check_args(sys.argv)

INSTALL = ("this tool needs PyTorch; install it into a virtual environment outside the "
           "repository:\n  python3 -m venv /root/venv-torch\n"
           "  /root/venv-torch/bin/pip install torch torchvision transformers\n"
           "then run it with /root/venv-torch/bin/python3")

try:
    import torch
    import torch.nn.functional as F
    from torch.overrides import TorchFunctionMode
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils.flop_counter import FlopCounterMode, flop_registry
except ImportError as e:  # pragma: no cover - depends on the machine
    sys.stderr.write("export_model.py: %s\n%s\n" % (e, INSTALL))
    sys.exit(2)

aten = torch.ops.aten
TOOLS = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(TOOLS)

# Ops that move no data (views, metadata, allocation without a write).
NO_TRAFFIC = {aten.detach, aten.alias, aten._unsafe_view, aten.empty, aten.empty_like,
              aten.empty_strided, aten.lift_fresh, aten.t, aten.sym_size, aten.sym_stride,
              aten.sym_numel, aten.sym_storage_offset, aten.is_same_size, aten._local_scalar_dense}
CONV = {aten.convolution, aten._convolution}
CONV_BWD = {aten.convolution_backward}
ATTN = set()
for _n in ("_scaled_dot_product_flash_attention", "_scaled_dot_product_efficient_attention",
           "_scaled_dot_product_cudnn_attention", "_scaled_dot_product_flash_attention_for_cpu",
           "scaled_dot_product_attention", "_scaled_dot_product_attention_math"):
    if hasattr(aten, _n):
        ATTN.add(getattr(aten, _n))
BMM = {aten.bmm, aten.baddbmm}
COPIES = {"clone", "_to_copy", "copy", "contiguous", "expand", "view", "reshape"}
MM = {aten.mm, aten.addmm, aten.bmm, aten.baddbmm, aten.linear, aten.matmul}


def _ops(*names):
    return {getattr(aten, n) for n in names if hasattr(aten, n)}


# CUDA autocast's cast policies (aten/src/ATen/autocast_mode.h: AT_FORALL_LOWER_PRECISION_FP,
# AT_FORALL_FP32, AT_FORALL_FP32_SET_OPT_DTYPE), as the ops this dispatch mode sees them
# (autocast intercepts linear/matmul/conv2d/layer_norm/softmax/cross_entropy before they
# decompose into these). lower_precision_fp: floating inputs cast to the half type, output
# half. fp32: half inputs cast to fp32 (a cast kernel each), output fp32. fp32_set_opt_dtype
# (softmax, log_softmax, sum, ...): called with dtype=float, output fp32; CUDA's softmax reads
# fp16 input directly (half_to_float), so no cast kernel is counted (bf16 softmax converts
# first: not modelled). Every other op follows type promotion: its output is the widest
# floating type of its inputs (autocast's `promote` list does the same explicitly).
AMP_HALF = MM | CONV | ATTN | _ops("addmv", "mv", "addr", "addbmm", "_prelu_kernel", "prelu")
AMP_FP32 = _ops("acos", "asin", "cosh", "erfinv", "exp", "expm1", "log", "log10", "log2",
                "log1p", "reciprocal", "rsqrt", "sinh", "tan", "pow", "softplus",
                "native_layer_norm", "native_group_norm", "nll_loss_forward",
                "nll_loss2d_forward", "mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss",
                "binary_cross_entropy_with_logits", "kl_div", "logsumexp", "cdist", "dist",
                "renorm", "cosine_similarity")
# Ops whose output takes the dtype of their first tensor argument, whatever the
# others' (batch norm keeps its fp32 weight and statistics beside a half input: cuDNN's
# mixed batch norm; embedding returns its weight's dtype; pooling its input's).
AMP_FIRST = _ops("native_batch_norm", "_native_batch_norm_legit",
                 "_native_batch_norm_legit_no_training", "cudnn_batch_norm",
                 "miopen_batch_norm", "embedding", "max_pool2d_with_indices", "avg_pool2d",
                 "_adaptive_avg_pool2d", "adaptive_avg_pool2d", "native_dropout")
AMP_FP32_OUT = _ops("_softmax", "_log_softmax", "sum", "prod", "cumsum", "cumprod",
                    "linalg_vector_norm")


def tensors(obj):
    """Every tensor in a nest of tuples, lists and dicts (and HF ModelOutput)."""
    if isinstance(obj, torch.Tensor):
        yield obj
    elif isinstance(obj, (list, tuple)):
        for o in obj:
            yield from tensors(o)
    elif isinstance(obj, dict):
        for o in obj.values():
            yield from tensors(o)


def nbytes(t):
    return t.numel() * t.element_size()


def storage_key(t):
    try:
        s = t.untyped_storage()
        return s.data_ptr(), s.nbytes()
    except (RuntimeError, NotImplementedError):
        return None


class Layer:
    def __init__(self, name, module=None):
        self.name = name
        self.module = module  # a leaf module's call, or None for an op run
        self.fwd_flops = 0
        self.bwd_flops = 0
        self.fwd_bytes = 0
        self.act_bytes = 0
        self.act_int_bytes = 0   # the part of act_bytes in integer and bool tensors
        self.amp_act_bytes = 0   # act_bytes with autocast's dtypes (Recorder.resolve_saved)
        self.op_bytes = 0        # every op's reads + writes in real dtypes (composites too)
        self.amp_bytes = 0       # fwd_bytes with autocast's dtypes (AMP_* above)
        self.amp_cast_bytes = 0  # autocast's cast kernels of activations (read + write)
        self.amp_grad_cast_bytes = 0  # backward's casts of gradients to a half input's dtype
        self.amp_upcast_bytes = 0  # the part of amp_cast_bytes casting half inputs to fp32
        self.params = []  # registration indices
        self.tied = []  # registration indices of earlier layers' parameters it uses
        self.ops = set()
        self.named = module is not None


class Frame:
    def __init__(self, name, leaf, layer):
        self.name, self.leaf, self.layer = name, leaf, layer


class Recorder:
    """The state the hooks and modes share during the one forward/backward."""

    def __init__(self, model):
        self.model = model
        self.layers = []
        self.stack = []
        self.group = None  # the open op run (a Layer) inside the top non-leaf module
        self.phase = None  # "fwd", "bwd" or None (outside the model: input, loss)
        self.bwd_layer = None
        self.node_layer = {}
        self.names_used = {}
        self.saved = set()
        self.saved_total = 0
        self.amp_saved = set()   # (storage key, bytes per element under autocast)
        self.amp_pending = []    # saves not yet resolved: (layer, tensor, storage key)
        self.saved_outside = 0
        self.ready = []
        self.mod_name = {m: n for n, m in model.named_modules(remove_duplicate=False)}
        self.params = []  # (name, tensor), registration order, tied weights once
        self.param_index = {}
        for n, p in model.named_parameters():
            self.param_index[id(p)] = len(self.params)
            self.params.append((n, p))
        self.param_store = {}
        for i, (_, p) in enumerate(self.params):
            self.param_store[p.untyped_storage().data_ptr()] = i
        self.state_store = set(self.param_store)
        for b in model.buffers():
            self.state_store.add(b.untyped_storage().data_ptr())
        # what DDP's broadcast_buffers sends each forward: module.named_buffers()
        self.buffers = list(model.named_buffers())
        self.owner = [None] * len(self.params)
        self.handles = []
        self.sdpa_no_dropout = False
        # Under a simulated CUDA autocast with a 2-byte half type: storage -> element
        # size of the tensor the real run would hold there (amp_size).
        self.amp_elem = {}
        # Casts the model writes that are no-ops in this fp32 run but not under autocast
        # (amp_cast_call): storage -> the element size its readers see from then on, and
        # how many saves were pending when it was cast (those saved the uncast tensor).
        self.amp_recast = {}
        self.recast_barrier = {}

    # -- layers ------------------------------------------------------------
    def unique(self, name):
        k = self.names_used.get(name, 0) + 1
        self.names_used[name] = k
        return name if k == 1 else "%s/%d" % (name, k)

    def new_layer(self, name, module=None):
        layer = Layer(self.unique(name) if module is not None else name, module)
        self.layers.append(layer)
        return layer

    def attach(self, layer, idx):
        if self.owner[idx] is None:
            self.owner[idx] = layer
            layer.params.append(idx)
        elif self.owner[idx] is not layer and idx not in layer.tied:
            # a tied weight (GPT-2's lm_head uses wte's): listed once, under its
            # first user; a later layer names it, so that ddpsim counts the half
            # copy autocast's cache holds for a layer that casts it (model.h)
            layer.tied.append(idx)

    def current(self, opname=None):
        """The layer running now: the top leaf module's call, or the open op
        run of the top non-leaf module (opened here when opname is given)."""
        if not self.stack:
            return None
        top = self.stack[-1]
        if top.leaf:
            return top.layer
        if self.group is None and opname is not None:
            self.group = self.new_layer(top.name or "model")
            self.group.parent = top.name or "model"
            self.group.opnames = []
        if self.group is not None and opname:
            self.group.opnames.append(opname)
        return self.group

    def user_bytes(self, objs):
        total = 0
        for t in tensors(objs):
            if t.untyped_storage().data_ptr() not in self.state_store:
                total += nbytes(t)
        return total

    def amp_size(self, t):
        """Bytes per element of t in an autocast run: parameters and buffers stay fp32
        (autocast's cached weight casts are the simulator's); activations as the
        policy made them; anything else (inputs, ids) its real size."""
        if not t.is_floating_point():
            return t.element_size()
        ptr = t.untyped_storage().data_ptr()
        if ptr in self.state_store:
            return 4
        return self.amp_elem.get(ptr, t.element_size())

    def held_size(self, t):
        """amp_size, or for a tensor the model cast where this fp32 run did not (a no-op
        `.type(value.dtype)`; amp_cast_call) the size that cast gave it under autocast."""
        if t.is_floating_point():
            size = self.amp_recast.get(t.untyped_storage().data_ptr())
            if size:
                return size
        return self.amp_size(t)

    def user_amp_bytes(self, objs):
        return sum(t.numel() * self.amp_size(t) for t in tensors(objs)
                   if t.untyped_storage().data_ptr() not in self.state_store)

    def read_size(self, packet, t):
        """Bytes per element op `packet` reads floating input t in under autocast: half
        for its lower-precision ops, fp32 for its fp32 ops (autocast casts the input for
        it), else the dtype t has (held_size). What autograd saves of an input, too."""
        if packet in AMP_HALF:
            return 2
        if packet in AMP_FP32:
            return 4
        return self.held_size(t)

    def amp_op(self, func, args, kwargs, out, layer):
        """One forward op under autocast: sets its outputs' element size and adds
        its traffic and its inputs' casts to layer. Unlike fwd_bytes, every op's
        reads and writes count, in module calls too: a composite leaf module
        (GPT-2's NewGELUActivation: pow, mul, add, tanh, ...) runs a kernel per op."""
        packet = func._overloadpacket
        ins = [t for t in tensors((args, kwargs)) if t.is_floating_point()]
        outs = [t for t in tensors(out) if t.is_floating_point()]
        user = [t for t in ins if t.untyped_storage().data_ptr() not in self.state_store]
        cast = grad_cast = 0
        read = {id(t): self.read_size(packet, t) for t in ins}
        if packet in AMP_HALF:
            cast = sum(t.numel() * (self.held_size(t) + 2) for t in user if self.held_size(t) > 2)
            size = 2
        elif packet in AMP_FP32:
            cast = sum(t.numel() * (self.held_size(t) + 4) for t in user if self.held_size(t) < 4)
            size = 4
        else:
            if packet in AMP_FP32_OUT:
                size = 4
            elif packet in AMP_FIRST and ins:
                size = self.held_size(ins[0])
            else:  # type promotion: dimensioned inputs first, 0-dim ones as wrapped scalars
                ranked = [t for t in ins if t.dim() > 0] or ins
                size = max((self.held_size(t) for t in ranked), default=4)
            if packet is aten._to_copy and outs:  # an explicit cast (.float(), .half())
                size = outs[0].element_size()
            elif outs:
                # backward: autograd's engine casts each input's gradient to the input's
                # dtype (validate_outputs in torch/csrc/autograd/engine.cpp): a half input
                # of an op promoted to fp32 gets its fp32 gradient cast to half
                grad_cast = sum(t.numel() * (size + self.held_size(t)) for t in user
                                if t.requires_grad and self.held_size(t) < size)
        if not (func.is_view or packet.__name__.endswith("_")):  # views, in-place: as before
            for t in tensors(out):  # a new tensor, maybe where a recast one was freed
                self.amp_recast.pop(t.untyped_storage().data_ptr(), None)
            for t in outs:
                if t.dtype == torch.float32:
                    self.amp_elem[t.untyped_storage().data_ptr()] = size
        if layer is None:
            return
        host_count_casts(self, packet, ins, layer)
        layer.amp_cast_bytes += cast
        if packet in AMP_FP32:  # half -> fp32: CUDA's dynamic-casting copy (compute.h)
            layer.amp_upcast_bytes += cast
        layer.amp_grad_cast_bytes += grad_cast
        if not (func.is_view or packet in NO_TRAFFIC):
            layer.amp_bytes += sum(t.numel() * read.get(id(t), self.held_size(t))
                                   for t in tensors((args, kwargs))
                                   if t.untyped_storage().data_ptr() not in self.state_store)
            layer.amp_bytes += self.user_amp_bytes(out)
            layer.op_bytes += self.user_bytes((args, kwargs)) + self.user_bytes(out)

    # -- module hooks ------------------------------------------------------
    def pre_hook(self, module, args, kwargs):
        if self.phase != "fwd":
            return
        self.group = None
        name = self.mod_name.get(module, "?")
        leaf = next(module.children(), None) is None
        layer = None
        if leaf:
            layer = self.new_layer(name or "model", module)
            layer.fwd_bytes += self.user_bytes((args, kwargs))
            for p in module.parameters(recurse=False):
                if id(p) in self.param_index:
                    self.attach(layer, self.param_index[id(p)])
        self.stack.append(Frame(name, leaf, layer))

    def post_hook(self, module, args, kwargs, out):
        if self.phase != "fwd":
            return
        frame = self.stack.pop()
        if frame.leaf:
            frame.layer.fwd_bytes += self.user_bytes(out)
        self.group = None

    # -- saved tensors -----------------------------------------------------
    def pack(self, t):
        key = storage_key(t)
        if key is None or key[0] in self.state_store:
            return t
        if key in self.saved:  # one storage in this run; under autocast maybe a cast of it
            if self.phase == "fwd":
                self.amp_pending.append((self.current(None), t, key))
            return t
        self.saved.add(key)
        self.saved_total += key[1]
        layer = self.current("") if self.phase == "fwd" else None
        if layer is None:
            self.saved_outside += key[1]
        else:
            layer.act_bytes += key[1]
            if not t.is_floating_point():
                layer.act_int_bytes += key[1]
            self.amp_pending.append((layer, t, key))
        return t

    def resolve_saved(self, func, args, kwargs):
        """Sizes the saves made since the last op as CUDA autocast would, once the
        next op (func) is known. Autograd saves an op's inputs just before it
        dispatches (under autocast, the inputs autocast cast for it: half for its
        lower-precision ops, fp32 for its fp32 ops) and its outputs just after (in
        the dtype the op gave them: amp_size). So the last save of a storage that
        is an input of func is func's own, read at func's policy; the others are
        the previous op's outputs. One that is both the previous op's output,
        saved by it, and func's input that func does not save counts at func's
        policy (no model here has one whose dtype the two would give differently).
        A storage in its own dtype counts once; each cast of it counts (autocast
        casts an activation again for every op that needs it)."""
        pending, self.amp_pending = self.amp_pending, []
        barrier, self.recast_barrier = self.recast_barrier, {}
        if not pending:
            return
        packet = func._overloadpacket
        ins = {t.untyped_storage().data_ptr() for t in tensors((args, kwargs))}
        last = {key[0]: i for i, (_, _, key) in enumerate(pending) if key[0] in ins}
        for i, (layer, t, key) in enumerate(pending):
            # a save made before the model's own cast of its storage (amp_cast_call: the
            # softmax's fp32 output) holds the uncast tensor; one after it, the cast one
            before_cast = i < barrier.get(key[0], 0)
            own = self.amp_size(t) if before_cast else self.held_size(t)
            if not t.is_floating_point():
                size = t.element_size()
            elif last.get(key[0]) == i and not before_cast:
                size = self.read_size(packet, t)
            else:
                size = own
            # autocast casts an activation anew for every op (it caches only the
            # weights' casts): a cast saved is a tensor of its own each time
            cast = t.is_floating_point() and size != own
            tag = (key, size, len(self.amp_saved)) if cast else (key, size)
            if layer is None or tag in self.amp_saved:
                continue
            self.amp_saved.add(tag)
            layer.amp_act_bytes += key[1] // t.element_size() * size


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
# cuda/Embedding.cu embedding_dense_backward_cuda: at::zeros of the weight's size, then the
# looked-up rows' gradients added into their rows): the forward reads the rows it looks up,
# not the table. The file gives the lookups and the row length (sim/train/compute_layer.c).
EMBEDDING = _ops("embedding")


def note_embedding(layer, func, args, quiet):
    """Forward: a layer's embedding(weight, indices, padding_idx, scale_grad_by_freq,
    sparse) as layer.embedding = [lookups, D] (over the whole batch); None where the layer
    runs any other op, a second embedding, or a sparse or frequency-scaled one (other
    backward kernels)."""
    if quiet or getattr(layer, "embedding", 0) is None:
        return
    if func._overloadpacket not in EMBEDDING or hasattr(layer, "embedding") or \
            any(bool(a) for a in args[3:5]):
        layer.embedding = None
        return
    layer.embedding = [args[1].numel(), int(args[0].shape[-1])]


def embedding_lines(layer, batch):
    """The model file's embedding key, on a layer whose one op is an embedding."""
    e = getattr(layer, "embedding", None)
    if not e or e[0] % batch:
        return []
    return ["    embedding: [%d, %d]" % (e[0] // batch, e[1])]


EMBEDDING_HEADER = (
    "embedding = [lookups per sample, D] of a layer whose one op is aten::embedding (D: a "
    "row's elements): the simulator charges the rows it reads (index_select) and, in "
    "backward, the zero-filled table and the rows' additions (embedding_dense_backward), "
    "not whole-table passes.")


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
# Softmax's backward on CUDA is two kernels (aten/src/ATen/native/cuda/SoftMax.cu,
# softmax_backward_cuda_out: `Tensor tmp = grad * output;` then host_softmax_backward reads
# tmp and output and writes the input's gradient): one aten op that moves its tensors twice
# over, plus tmp written once. The trace shows both (GPT-2's attention: aten::mul and
# softmax_warp_backward under _softmax_backward_data, the same time each).
SOFTMAX_BWD = _ops("_softmax_backward_data")


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


def conv_pass_flops(out_numel, w):
    # 2 * output elements * (C_in / groups) * kernel: weight is [C_out, C_in/groups, k...]
    k = 1
    for d in w.shape[1:]:
        k *= d
    return 2 * out_numel * k


def op_flops(func, args, kwargs, out):
    packet = func._overloadpacket
    if packet in CONV and not args[6]:  # not transposed
        return conv_pass_flops(out.numel(), args[1])
    if packet in CONV_BWD and not args[7]:
        grad_out, w, mask = args[0], args[2], args[10]
        return conv_pass_flops(grad_out.numel(), w) * (int(bool(mask[0])) + int(bool(mask[1])))
    f = flop_registry.get(packet)
    if f is None:
        return 0
    return int(f(*args, **kwargs, out_val=out))


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
    "dispatch where a file has them); host_nodes = autograd nodes "
    "its backward runs, AccumulateGrad of its parameters included; host_amp_casts = the "
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


def host_count_dispatch(rec):
    """Every aten op the dispatch mode sees in forward (nested ones too)."""
    if rec.phase == "fwd":
        rec.host_dispatch_count = host_dispatched(rec) + 1


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


def host_count_op(rec, layer, dispatches):
    """One top-level call from Python that dispatched `dispatches` aten ops
    (host_count_dispatches). A call no layer holds yet (a view in a composite
    module before its first op) goes to the next layer that runs one."""
    if not dispatches:
        return
    pending = getattr(rec, "host_pending_ops", 0) + 1
    host_count_dispatches(rec, dispatches)
    if layer is None:
        rec.host_pending_ops = pending
        return
    layer.host_ops = getattr(layer, "host_ops", 0) + pending
    layer.host_dispatches = getattr(layer, "host_dispatches", 0) + rec.host_pending_dispatches
    layer.host_syncs = getattr(layer, "host_syncs", 0) + getattr(rec, "host_pending_syncs", 0)
    rec.host_pending_ops = 0
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


def host_count_node(layer):
    layer.host_nodes = getattr(layer, "host_nodes", 0) + 1


def host_lines(rec, l):
    # AccumulateGrad: one node per parameter tensor, run in the backward (not tagged)
    nodes = getattr(l, "host_nodes", 0) + len(l.params)
    return ["    host_ops: %d" % getattr(l, "host_ops", 0),
            "    host_dispatches: %d" % getattr(l, "host_dispatches", 0),
            "    host_nodes: %d" % nodes,
            "    host_amp_casts: %d" % getattr(l, "host_amp_casts", 0),
            "    host_amp_nodes: %d" % getattr(l, "host_amp_nodes", 0)] + \
        (["    host_syncs: %d" % l.host_syncs] if getattr(l, "host_syncs", 0) else [])


class Dispatch(TorchDispatchMode):
    def __init__(self, rec):
        super().__init__()
        self.rec = rec

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        rec = self.rec
        rec.resolve_saved(func, args, kwargs)
        out = func(*args, **kwargs)
        host_count_dispatch(rec)
        packet = func._overloadpacket
        if host_sync_dispatch(func, args):
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
        before = host_dispatched(rec)
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
            host_count_op(rec, layer, dispatched)
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


def classify(layer):
    ops = layer.ops
    if ops & CONV:
        return "conv"
    if ops & ATTN:
        return "attention"
    if layer.module is None and ops & BMM:
        return "attention"
    if ops & MM:
        return "matmul"
    return "memory"


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


def record(model, x, loss_kind):
    """One forward and backward; returns the Recorder and FlopCounterMode's totals."""
    model.train()
    rec = Recorder(model)
    for m in model.modules():
        rec.handles.append(m.register_forward_pre_hook(rec.pre_hook, with_kwargs=True))
        rec.handles.append(m.register_forward_hook(rec.post_hook, with_kwargs=True))
    for i, (_, p) in enumerate(rec.params):
        rec.handles.append(p.register_post_accumulate_grad_hook(
            lambda _p, i=i: rec.ready.append(i)))
    counter = FlopCounterMode(display=False)
    with counter:
        with torch.autograd.graph.saved_tensors_hooks(rec.pack, lambda t: t):
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
            def pre(grad_outputs, layer=layer):
                rec.bwd_layer = layer
                rec.accum_to = None
                host_count_node(layer)

            def post(grad_inputs, grad_outputs, node=node):
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


def per_sample(v, batch):
    return int(round(v / batch))


def versions():
    out = ["torch %s" % torch.__version__]
    for m in ("torchvision", "transformers"):
        try:
            out.append("%s %s" % (m, importlib.import_module(m).__version__))
        except ImportError:
            out.append("%s not installed" % m)
    return ", ".join(out)


def emit(rec, args, meta, x, fc_fwd, fc_bwd, command):
    B = args.batch
    layers = [l for l in rec.layers
              if l.module is not None or l.params or l.fwd_bytes or l.act_bytes or l.fwd_flops
              or getattr(l, "host_syncs", 0)]
    for l in layers:
        if l.module is None:  # an op run: <parent>.core for attention, else its first real op
            ops = [o for o in l.opnames if o not in COPIES] or l.opnames or ["ops"]
            l.name = rec.unique(l.parent + "." + ("core" if classify(l) == "attention" else ops[0]))
    for i, p in enumerate(rec.owner):
        if p is None:
            raise ExportError("parameter %s was not used in the forward" % rec.params[i][0])
    order = [i for l in layers for i in l.params]
    moved = [rec.params[i][0] for k, i in enumerate(order) if i != k]
    tot = dict(fwd=0, bwd=0, act=0, byt=0)
    for l in layers:
        l.cls = classify(l)
        l.f, l.b = per_sample(l.fwd_flops, B), per_sample(l.bwd_flops, B)
        l.y, l.a = per_sample(l.fwd_bytes, B), per_sample(l.act_bytes, B)
        l.ai, l.aa = per_sample(l.act_int_bytes, B), per_sample(l.amp_act_bytes, B)
        l.ay, l.ac = per_sample(l.amp_bytes, B), per_sample(l.amp_cast_bytes, B)
        l.oy = per_sample(l.op_bytes, B)
        l.ag = per_sample(l.amp_grad_cast_bytes, B)
        l.au = per_sample(l.amp_upcast_bytes, B)
        tot["fwd"] += l.f
        tot["bwd"] += l.b
        tot["act"] += l.a
        tot["byt"] += l.y
    numel = sum(p.numel() for _, p in rec.params)
    in_bytes = per_sample(sum(nbytes(t) for t in tensors(x)), B)
    outs = [t for t in tensors(rec.out) if t.is_floating_point()]
    out_bytes = per_sample(4 * outs[0].numel(), B)
    counts = {}
    for l in layers:
        counts[l.cls] = counts.get(l.cls, 0) + 1
    h = [
        "%s: generated by tools/export_model.py from one forward and backward of the real "
        "PyTorch model on CPU at batch %d; do not edit by hand." % (args.name, B),
        "Command: %s" % command,
        "Versions: %s; Python %d.%d. Attention: %s." % (versions(), sys.version_info[0],
                                                        sys.version_info[1], args.attention),
        "Layers: each leaf-module call in forward order (a module called k times: NAME, "
        "NAME/2 .. NAME/k), and each run of module-less ops inside a parent module "
        "(residual adds, functional activations, attention products, softmax, masks) as "
        "<parent>.core (attention) or <parent>.<first op>; class from the ops: conv, matmul, attention, memory (%s)."
        % ", ".join("%d %s" % (counts[k], k) for k in sorted(counts)),
        "Params: each tensor once (a tied weight under its first name, in the first layer "
        "using it), in its module's registration order. %s" %
        ("Forward order equals registration order." if not moved else
         "Forward order differs from registration order for: %s; the `registration` "
         "list gives model.parameters()'s order." % ", ".join(moved)),
        "fwd_flops/bwd_flops: torch.utils.flop_counter's per-op formulas (matmuls, "
        "attention; elementwise ops 0) attributed to layers by autograd node; convolutions "
        "2*out_elems*(C_in/groups)*kh*kw per pass (forward, input grad, weight grad). "
        "FlopCounterMode's own totals: %d fwd, %d bwd per sample (it ignores groups in "
        "the weight gradient)." % (per_sample(fc_fwd, B), per_sample(fc_bwd, B)),
        "fwd_bytes = bytes in + out of a module call (parameters and buffers excluded: the "
        "simulator adds weights), or read + written by each op of an op run; real dtypes "
        "(fp32 activations, int64 ids). op_fwd_bytes = bytes read + written by each op of "
        "the layer, module calls too (a composite module such as GPT-2's GELU runs a kernel "
        "per op; dropout writes its mask, max-pool its indices), real dtypes.",
        "act_bytes = bytes autograd saved for backward (saved_tensors_hooks), each storage "
        "once, in the layer that saved it first; parameters and buffers excluded; dropout "
        "masks bool (1 byte) as on CUDA, max-pool indices int64.%s The loss saved %d more "
        "bytes per sample, not in any layer (loss_act_bytes). act_int_bytes = the part of "
        "act_bytes in integer and bool tensors (where nonzero); amp_act_bytes = what autograd "
        "saves under CUDA autocast: each save in the dtype autocast gives it (an op's "
        "inputs as cast for it: half for its lower-precision ops, fp32 for its fp32 ops; "
        "outputs as the op made them; integers as they are), each cast its own "
        "tensor (autocast casts an activation again for every op; only weights' casts "
        "are cached, and the simulator adds those)." % (
            " Fused attention ran without dropout, so that CPU takes its flash kernel, which "
            "saves what CUDA's flash attention does (CPU's dropout path saves the SxS "
            "matrices)." if rec.sdpa_no_dropout else "", per_sample(rec.saved_outside, B)),
        "amp_fwd_bytes = bytes read + written by each op (module calls too: a composite "
        "module such as GPT-2's GELU runs a kernel per op) with the dtypes CUDA autocast (fp16/bf16, 2 bytes) gives "
        "each tensor: its lower-precision ops (matmuls, convolutions) write half, its fp32 "
        "ops (layer_norm, softmax, pow, exp, losses) fp32, every other op the widest type of "
        "its inputs (an fp32 residual stream stays fp32); amp_cast_bytes = the cast kernels "
        "autocast runs on activations (read + write), weights' casts excluded (the simulator "
        "adds them); amp_grad_cast_bytes = the casts autograd's engine adds in backward, "
        "where an op promoted a half input to fp32 (the input's gradient cast to half); "
        "amp_upcast_bytes = the part of amp_cast_bytes casting half inputs to fp32 for "
        "autocast's fp32 ops (where nonzero; the rest casts fp32 to half).",
        KERNEL_HEADER,
    ] + ([POOL_HEADER] if any(pool_lines(l) for l in layers) else []) + (
        [LAYER_NORM_HEADER] if any(layer_norm_lines(l, B) for l in layers) else []) + (
        [EMBEDDING_HEADER] if any(embedding_lines(l, B) for l in layers) else []) + [
        BWD_BYTES_HEADER,
    ] + ([ATTN_HEADER] if any(attn_lines(l, l.cls, B) for l in layers) else []) + (
        [LEGACY_HEADER] if any(legacy_lines(l, B) for l in layers) else []) + (
        [LEGACY_CAST_HEADER] if any(has_legacy_cast(l) for l in layers) else []) + (
        [MODEL_CAST_HEADER] if any(getattr(l, "amp_model_casts", 0) for l in layers)
        else []) + ([CAST_EW_HEADER] if any(cast_ew_lines(l, B) for l in layers) else []) + (
        [CAT_HEADER] if any(cat_lines(l, B) for l in layers) else []) + (
        [LOSS_LEGACY_HEADER] if any(x.startswith("loss_legacy_ew") for x in loss_lines(rec, B))
        else []) + [
        HOST_HEADER,
    ] + (["tied_params = parameters of an earlier layer this layer's ops use too (a tied "
          "weight, listed once under its first user; GPT-2's lm_head uses wte's): ddpsim "
          "counts the half copy autocast's weight cache keeps for a layer that casts it."]
         if any(l.tied for l in layers) else []) + [
        "grad_ready: parameters in the order their gradients were accumulated in that "
        "backward (the order DDP's reducer hooks fire).",
        "buffers: model.named_buffers() (what DDP broadcasts before each forward with "
        "broadcast_buffers=True), bytes in their real dtype.",
        "input_bytes = the example input per sample (real dtypes); output_bytes = fp32 "
        "output per sample; output_classes = its last dimension (the loss's softmax row).",
        "Totals: %d layers, %d tensors, %d parameters; per sample %d fwd FLOPs, %d bwd "
        "FLOPs, %d fwd bytes, %d activation bytes." % (len(layers), len(rec.params), numel,
                                                       tot["fwd"], tot["bwd"], tot["byt"],
                                                       tot["act"]),
    ]
    out = ["# " + line for line in h]
    out += [
        "schema_version: 1",
        "name: %s" % args.name,
        'sample: "%s"' % (args.sample or meta.get("sample", "one sample")),
        "default_batch: %d" % int(args.default_batch or meta.get("default_batch", 32)),
        "optimizer: %s" % (args.optimizer or meta.get("optimizer", "sgd")),
        "input_bytes: %d" % in_bytes,
        "output_bytes: %d" % out_bytes,
        "output_classes: %d" % outs[0].shape[-1],
    ] + loss_lines(rec, B) + [
        "layers:",
    ]
    for l in layers:
        out += [
            "  - name: %s" % l.name,
            "    class: %s" % l.cls,
            "    fwd_flops: %d" % l.f,
            "    bwd_flops: %d" % l.b,
            "    fwd_bytes: %d" % l.y,
            "    act_bytes: %d" % l.a,
        ] + (["    act_int_bytes: %d" % l.ai] if l.ai else []) + [
            "    amp_act_bytes: %d" % l.aa,
            "    op_fwd_bytes: %d" % l.oy,
            "    amp_fwd_bytes: %d" % l.ay,
            "    amp_cast_bytes: %d" % l.ac,
            "    amp_grad_cast_bytes: %d" % l.ag,
        ] + (["    amp_upcast_bytes: %d" % l.au] if l.au else []) + [
        ]
        out += kernel_lines(l, B)
        out += pool_lines(l)
        out += layer_norm_lines(l, B)
        out += embedding_lines(l, B)
        out += bwd_bytes_lines(l, l.cls, B)
        out += attn_lines(l, l.cls, B)
        out += legacy_lines(l, B)
        out += cast_ew_lines(l, B)
        out += cat_lines(l, B)
        out += host_lines(rec, l)
        if l.params:
            out.append("    params:")
            for i in l.params:
                n, p = rec.params[i]
                out.append("      - {name: %s, numel: %d, shape: [%s]}"
                           % (n, p.numel(), ", ".join(str(d) for d in p.shape)))
        else:
            out.append("    params: []")
        if l.tied:
            out.append("    tied_params: [%s]" % ", ".join(rec.params[i][0] for i in l.tied))
    out.append("grad_ready:")
    for i in rec.ready:
        out.append("  - %s" % rec.params[i][0])
    if rec.buffers:
        out.append("buffers:")
        for n, b in rec.buffers:
            out.append("  - {name: %s, numel: %d, bytes: %d, dtype: %s}"
                       % (n, b.numel(), nbytes(b), str(b.dtype).replace("torch.", "")))
    # The file lists each layer's parameters in forward order; where that is
    # not model.parameters()'s order (BERT's embeddings), say which is.
    file_order = [i for l in layers for i in l.params]
    if file_order != sorted(file_order):
        out.append("registration:")
        for name, _ in rec.params:
            out.append("  - %s" % name)
    summary = dict(tot, layers=len(layers), tensors=len(rec.params), numel=numel,
                   fc_fwd=per_sample(fc_fwd, B), fc_bwd=per_sample(fc_bwd, B),
                   saved_outside=per_sample(rec.saved_outside, B))
    return "\n".join(out) + "\n", summary


def main(argv):
    args = check_args(argv)
    torch.set_num_threads(args.threads)
    sys.path.insert(0, TOOLS)
    try:
        factory = load_factory(args.factory)
        model, x, meta, default_input = build(factory, args.batch, args.attention)
        if default_input:
            sys.stderr.write("export_model.py: note: %s returned no example input: a batch of "
                             "%d 3x224x224 images is used\n" % (args.factory, args.batch))
        try:
            rec, fc_fwd, fc_bwd = record(model, x, meta.get("loss", "classify"))
        except (RuntimeError, TypeError, ValueError, IndexError) as e:
            if not default_input:
                raise
            # the guessed image batch does not fit this model: no traceback
            # from deep inside its forward, but what to do about it
            raise ExportError("%s: the model's forward failed on the default input, a batch "
                              "of 3x224x224 images (%s: %s): return (model, example_input) "
                              "from the factory" % (args.factory, type(e).__name__,
                                                    str(e).splitlines()[0] if str(e) else ""))
        record_nhwc_legacy(rec, x, factory, args, meta)
        command = "python3 " + " ".join(shlex.quote(a) for a in
                                        ["tools/export_model.py"] + argv[1:])
        text, s = emit(rec, args, meta, x, fc_fwd, fc_bwd, command)
    except ExportError as e:
        sys.stderr.write("export_model.py: %s\n" % e)
        return 2
    if args.output:
        tmp = args.output + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, args.output)
    else:
        sys.stdout.write(text)
    sys.stderr.write("%s: %d layers, %d tensors, %d parameters; per sample fwd %d bwd %d FLOPs "
                     "(FlopCounterMode %d / %d), act %d bytes\n"
                     % (args.name, s["layers"], s["tensors"], s["numel"], s["fwd"], s["bwd"],
                        s["fc_fwd"], s["fc_bwd"], s["act"]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
