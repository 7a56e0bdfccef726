"""The layers of a model file and the Recorder, the state the hooks and modes share
during tools/export_model.py's one forward and backward: module calls and op runs as
layers, parameters' owners, saved tensors, and the element sizes CUDA autocast gives
each tensor."""

import torch

from .host import host_count_casts
from .ops import (AMP_FIRST, AMP_FP32, AMP_FP32_OUT, AMP_HALF, NO_TRAFFIC, aten, nbytes,
                  storage_key, tensors)


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
        self.bwd_node_open = False     # inside a node of the backward (its pre-hook ran)
        self.bwd_node_launched = False  # and it dispatched an op that launches a kernel
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
