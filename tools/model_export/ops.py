"""The aten ops the exporter tells apart, CUDA autocast's cast policies over them, and
the tensor helpers every counter uses (tools/export_model.py)."""

import torch


aten = torch.ops.aten


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


def per_sample(v, batch):
    return int(round(v / batch))
