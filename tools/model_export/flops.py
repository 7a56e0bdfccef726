"""FLOPs of one aten op (tools/export_model.py's fwd_flops and bwd_flops): convolutions
from their shapes and groups, every other op by torch.utils.flop_counter's table."""

from torch.utils.flop_counter import flop_registry

from .ops import CONV, CONV_BWD


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
