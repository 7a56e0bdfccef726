"""CUDA autocast run on CPU, for the exporter's second backward (host_view_nodes_amp).

Which autograd nodes launch nothing depends on dtypes: an add joining a half result and an
fp32 one (BERT's residual add of a linear's half output and the fp32 output of the
LayerNorm before it) gives an fp32 gradient, and autograd's engine casts the half input's
share to half (validate_outputs, torch/csrc/autograd/engine.cpp) between the node's
pre-hook and its hook: a _to_copy kernel in a node that returns its gradient in fp32.
tracing.record_amp reruns the model under autocast to see which nodes still launch nothing.

CPU autocast (torch.autocast("cpu"), bf16) is not CUDA's: its lists are its own
(aten/src/ATen/autocast_mode.cpp, TORCH_LIBRARY_IMPL(aten, AutocastCPU, m)). CUDA's fp32 list
(layer_norm, native_layer_norm, group_norm, exp, log, pow, rsqrt, ...) and its
fp32_set_opt_dtype list (softmax, log_softmax, sum, cumsum, ...) are missing from CPU's, so
on CPU a LayerNorm of a half input returns half and the residual add after it joins two
halves: no cast, the node free, where CUDA casts. And CPU has lists CUDA lacks (cat and stack
promoted to the widest input by a cast of their own, the pools and pads of its fp32 list).
So the rerun keeps torch.autocast("cpu") for its machinery (the dispatch key above autograd,
so casts are autograd ops with ToCopyBackward0 nodes as CUDA's are) but replaces its lists
with CUDA's: every op with an AutocastCUDA kernel gets a Python kernel at AutocastCPU that
applies CUDA's policy (CUDA_POLICIES, from aten/src/ATen/autocast_mode.h of the installed
torch: AT_FORALL_LOWER_PRECISION_FP, AT_FORALL_FP32, AT_FORALL_FP32_SET_OPT_DTYPE,
AT_FORALL_DIFFERENT_REDISPATCH_SIGNATURE, AT_FORALL_PROMOTE and binary_cross_entropy's ban),
and every other op CPU's autocast has a kernel for falls through, as on CUDA. The half type is
bf16 (CPU runs few ops in fp16), which changes no dtype decision here: the casts and type
promotion treat bf16 and fp16 alike (a 2-byte half below fp32), and no op the models run mixes
the two. What stays CPU's own is below the autocast key: CPU's softmax(x, dtype=float) of a
half input casts first (a ToCopyBackward0 more), where CUDA's fp16 softmax reads half
(half_to_float), and a cast node launches a kernel anyway; record_amp checks that the other
nodes are the fp32 run's, layer by layer.
"""

import contextlib
import os
import re
import warnings

import torch
import torch.utils._python_dispatch  # noqa: F401
import torch.utils._pytree  # noqa: F401

from .cli import ExportError

HALF = torch.bfloat16

# op name (overload after a dot, none for the default) -> CUDA's cast policy
_LOWER = ("_convolution.deprecated _convolution conv1d conv2d conv3d conv_tbc conv_transpose1d "
          "conv_transpose2d.input conv_transpose3d.input convolution prelu addmm addmv addr "
          "matmul einsum mm mv linalg_vecdot linear addbmm baddbmm bmm chain_matmul "
          "linalg_multi_dot _thnn_fused_lstm_cell _thnn_fused_gru_cell lstm_cell gru_cell "
          "rnn_tanh_cell rnn_relu_cell _scaled_dot_product_flash_attention "
          "scaled_dot_product_attention cudnn_convolution cudnn_convolution_transpose")
_FP32 = ("acos asin cosh erfinv exp expm1 log log10 log2 log1p reciprocal rsqrt sinh tan "
         "pow.Tensor_Scalar pow.Tensor_Tensor pow.Scalar softplus layer_norm native_layer_norm "
         "rms_norm group_norm frobenius_norm.dim nuclear_norm nuclear_norm.dim "
         "cosine_similarity poisson_nll_loss cosine_embedding_loss nll_loss nll_loss2d "
         "hinge_embedding_loss kl_div l1_loss smooth_l1_loss huber_loss mse_loss "
         "margin_ranking_loss multilabel_margin_loss soft_margin_loss triplet_margin_loss "
         "multi_margin_loss binary_cross_entropy_with_logits dist pdist cdist renorm logsumexp "
         "upsample_nearest1d _upsample_nearest_exact1d upsample_nearest2d "
         "_upsample_nearest_exact2d upsample_nearest3d _upsample_nearest_exact3d "
         "upsample_linear1d upsample_bilinear2d _upsample_bilinear2d_aa upsample_trilinear3d "
         "upsample_bicubic2d _upsample_bicubic2d_aa")
_FP32_SET_OPT_DTYPE = ("prod prod.dim_int softmax.int log_softmax.int cumprod cumsum "
                       "linalg_vector_norm linalg_matrix_norm linalg_matrix_norm.str_ord sum "
                       "sum.dim_IntList")
_PROMOTE = "addcdiv addcmul atan2 bilinear cross dot vdot grid_sampler index_put tensordot scatter_add"
CUDA_POLICIES = {}
for _policy, _names in (("lower_precision_fp", _LOWER), ("fp32", _FP32),
                        ("fp32_set_opt_dtype", _FP32_SET_OPT_DTYPE), ("promote", _PROMOTE)):
    CUDA_POLICIES.update((n, _policy) for n in _names.split())
CUDA_POLICIES["norm.Scalar"] = "fp32_append_dtype"
CUDA_POLICIES["norm.ScalarOpt_dim"] = "fp32_append_dtype"
CUDA_POLICIES["binary_cross_entropy"] = "banned"
# registered outside those lists: cuDNN's RNN (aten/src/ATen/cudnn/AutocastRNN.cpp casts its
# input, weights and states to half; CPU never calls it) and, in torch 2.15, the matrix
# square root by a line of its own in autocast_mode.cpp for CUDA and for CPU (CPU's runs it in
# fp32: a bf16 input under torch.autocast("cpu") returns fp32; taken to be CUDA's too)
CUDA_POLICIES["_cudnn_rnn"] = "lower_precision_fp"
CUDA_POLICIES["linalg_matrix_sqrth"] = "fp32"


_HEADER_LISTS = (("AT_FORALL_LOWER_PRECISION_FP", "lower_precision_fp"), ("AT_FORALL_FP32", "fp32"),
                 ("AT_FORALL_FP32_SET_OPT_DTYPE", "fp32_set_opt_dtype"),
                 ("AT_FORALL_PROMOTE", "promote"))


def header_policies(path=None):
    """The policy of each op in the four plain lists of the installed torch's
    include/ATen/autocast_mode.h (the lists CUDA's autocast registers its kernels from), or
    None where the wheel ships no such header. The check of the op names alone passes a newer
    torch that moves an op from one list to another; this one does not."""
    path = path or os.path.join(os.path.dirname(torch.__file__), "include", "ATen",
                                "autocast_mode.h")
    try:
        with open(path) as f:
            text = f.read()
    except OSError:
        return None
    found = {}
    for macro, policy in _HEADER_LISTS:
        m = re.search(r"#define %s\(_\)((?:[^\n]*\\\n)*[^\n]*)" % macro, text)
        if not m:
            raise ExportError("%s: no #define %s(_): update tools/model_export/autocast.py's "
                              "reading of it" % (path, macro))
        for base, overload in re.findall(r"_\(\s*(\w+)\s*(?:,\s*(\w+)\s*)?\)", m.group(1)):
            found[base + ("." + overload if overload else "")] = policy
    return found


def check_policies(policies, header):
    """ExportError where CUDA_POLICIES-like `policies` gives an op of the header's lists
    (header_policies) another policy, or lacks it."""
    wrong = sorted("%s: %s in the header, %s here" % (n, p, policies.get(n, "none"))
                   for n, p in header.items() if policies.get(n) != p)
    if wrong:
        raise ExportError(
            "torch %s's include/ATen/autocast_mode.h lists ops under other policies than "
            "tools/model_export/autocast.py's CUDA_POLICIES (%s): update them from it"
            % (torch.__version__, "; ".join(wrong)))


def _autocast_ops(key):
    """The aten ops (name[.overload]) with a kernel at dispatch key `key`."""
    return {n[len("aten::"):] for n in torch._C._dispatch_get_all_op_names()
            if n.startswith("aten::") and torch._C._dispatch_has_kernel_for_dispatch_key(n, key)}


def _op(name):
    base, _, overload = name.partition(".")
    return getattr(getattr(torch.ops.aten, base), overload or "default")


def _eligible(t):
    """autocast's is_eligible: a floating tensor, not fp64."""
    return isinstance(t, torch.Tensor) and t.is_floating_point() and t.dtype != torch.float64


class _Kernels:
    """CUDA's policies as AutocastCPU kernels; cache: autocast's cache of the half casts of
    fp32 leaf tensors that require grad (the weights: one cast, one ToCopyBackward0, per
    forward)."""

    def __init__(self):
        self.cache = {}
        self.key = torch._C.DispatchKeySet(torch._C.DispatchKey.AutocastCPU)

    def cast(self, obj, dtype):
        if isinstance(obj, (list, tuple)):
            return type(obj)(self.cast(o, dtype) for o in obj)
        if not _eligible(obj) or obj.dtype == dtype:
            return obj
        if dtype == HALF and obj.dtype == torch.float32 and obj.requires_grad and \
                obj.is_leaf and not obj._is_view():
            hit = self.cache.get(id(obj))
            if hit is None or hit[0] is not obj:
                hit = self.cache[id(obj)] = (obj, obj.to(dtype))
            return hit[1]
        return obj.to(dtype)

    def make(self, name, policy):
        op = _op(name)
        arg_names = [a.name for a in op._schema.arguments]

        def run(*args, **kwargs):
            with torch._C._ExcludeDispatchKeyGuard(self.key):
                if policy == "banned":
                    raise RuntimeError("%s is unsafe to autocast (CUDA's autocast refuses it)"
                                       % name)
                if policy in ("lower_precision_fp", "fp32"):
                    dtype = HALF if policy == "lower_precision_fp" else torch.float32
                    args, kwargs = self.cast(args, dtype), {k: self.cast(v, dtype)
                                                            for k, v in kwargs.items()}
                elif policy == "promote":
                    ts = [t for t in torch.utils._pytree.tree_leaves((args, kwargs))
                          if _eligible(t)]
                    dtype = torch.float32 if any(t.dtype == torch.float32 for t in ts) else HALF
                    args, kwargs = self.cast(args, dtype), {k: self.cast(v, dtype)
                                                            for k, v in kwargs.items()}
                elif policy == "fp32_set_opt_dtype" and _eligible(args[0]):
                    i = arg_names.index("dtype")
                    if i < len(args):
                        if args[i] is None:
                            args = args[:i] + (torch.float32,) + args[i + 1:]
                    elif kwargs.get("dtype") is None:
                        kwargs = dict(kwargs, dtype=torch.float32)
                elif policy == "fp32_append_dtype":
                    out = torch.float32 if _eligible(args[0]) else args[0].dtype
                    full = dict(zip(arg_names, args), **kwargs)
                    if name == "norm.Scalar":
                        return torch.ops.aten.norm.ScalarOpt_dtype(
                            full["self"], full.get("p", 2), dtype=out)
                    return torch.ops.aten.norm.ScalarOpt_dim_dtype(
                        full["self"], full["p"], full["dim"], full.get("keepdim", False),
                        dtype=out)
                return op(*args, **kwargs)
        return run


# The products autocast runs in the half type. What the rerun needs of them is their
# outputs' dtype, shape and strides, never their values (record_amp keeps only node
# counts), and CPUs without bf16 instructions (AVX2) multiply bf16 about 20 times slower
# than fp32 (0.21 against 4.4 GFLOP/s for a 256x768x768 mm): GPT-2's rerun took about an
# hour. So below every other mode they run in fp32, rounded to the half type after: the
# same output tensor (a fresh contiguous one, as the half kernel's) from a kernel call that
# no mode above sees.
_PRODUCTS = None


def _products():
    global _PRODUCTS
    if _PRODUCTS is None:
        aten = torch.ops.aten
        _PRODUCTS = {aten.mm.default, aten.addmm.default, aten.bmm.default,
                     aten.baddbmm.default}
    return _PRODUCTS


class Fp32Products(torch.utils._python_dispatch.TorchDispatchMode):
    """Runs the half products of _products() in fp32 and rounds their outputs to HALF.
    Entered before every other mode of the rerun, so that it is the last one an op
    reaches, right before its kernel: the modes above see the half op and its half
    output, as without it."""

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func not in _products():
            return func(*args, **kwargs)
        leaves = torch.utils._pytree.tree_leaves((args, kwargs))
        ts = [t for t in leaves if isinstance(t, torch.Tensor)]
        if not ts or any(t.dtype != HALF for t in ts):
            return func(*args, **kwargs)
        up = torch.utils._pytree.tree_map_only(torch.Tensor, lambda t: t.float(), (args, kwargs))
        return func(*up[0], **up[1]).to(HALF)


@contextlib.contextmanager
def cuda_autocast_on_cpu():
    """torch.autocast("cpu", bf16) with CUDA's cast lists in place of CPU's (module
    docstring); the lists are CPU's own again on exit. ExportError where the installed
    torch's CUDA autocast has ops CUDA_POLICIES does not name, or lacks ones it names."""
    cuda, cpu = _autocast_ops("AutocastCUDA"), _autocast_ops("AutocastCPU")
    if cuda != set(CUDA_POLICIES):
        raise ExportError(
            "torch %s's CUDA autocast casts %s and not %s, unlike the lists in "
            "tools/model_export/autocast.py (CUDA_POLICIES): update them from its "
            "aten/src/ATen/autocast_mode.h" % (
                torch.__version__, sorted(cuda - set(CUDA_POLICIES)) or "nothing more",
                sorted(set(CUDA_POLICIES) - cuda) or "nothing less"))
    header = header_policies()
    if header is None:
        warnings.warn("torch %s ships no include/ATen/autocast_mode.h: CUDA_POLICIES' policies "
                      "are unchecked (only the op names are)" % torch.__version__)
    else:
        check_policies(CUDA_POLICIES, header)
    kernels = _Kernels()
    lib = torch.library.Library("aten", "IMPL")
    try:
        with warnings.catch_warnings():  # "Overriding a previously registered kernel"
            warnings.simplefilter("ignore")
            for name, policy in sorted(CUDA_POLICIES.items()):
                lib.impl(name, kernels.make(name, policy), "AutocastCPU")
            for name in sorted(cpu - set(CUDA_POLICIES)):
                lib.impl(name, torch.library.fallthrough_kernel, "AutocastCPU")
        with torch.autocast("cpu", dtype=HALF):
            yield
    finally:
        kernels.cache.clear()
        lib._destroy()
