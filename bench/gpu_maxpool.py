#!/usr/bin/env python3
"""Time PyTorch's max-pool CUDA kernels alone, over windows, sizes and layouts (issue #12).

ddpsim charges max-pool at a rate per SM clock (sim/train/compute_pool.c): SM cycles per output
(forward) or input (backward) element plus cycles per (element, window) pair. This script
measures what those constants are fitted on: for each shape, the forward
(max_pool2d_with_indices: max_pool_forward_nchw / _nhwc) and the backward
(max_pool2d_with_indices_backward: zero_ of the input gradient, then max_pool_backward_nchw /
_nhwc), each kernel's mean over 10 calls from torch.profiler (kernel time only, after 5 warm-up
calls). Shapes: ResNet's stem pool (3x3, stride 2, padding 1) in fp32, fp16 and channels-last,
at batch 32 and 128; VGG's 2x2 stride-2 pools at three sizes; a 3x3 stride-1 window; and
smaller tensors. One line per shape: fwd_us, bwd_us (the backward kernel), fill_us (zero_).

Run on the lent GPU: python3 bench/gpu_maxpool.py > maxpool.txt
"""

import torch
import torch.nn.functional as F
from torch.profiler import ProfilerActivity, profile

# batch, channels, side, kernel, stride, padding, dtype, channels-last
SHAPES = [
    (32, 64, 112, 3, 2, 1, torch.float32, 0),
    (32, 64, 112, 3, 2, 1, torch.float16, 0),
    (32, 64, 112, 3, 2, 1, torch.float16, 1),
    (32, 64, 112, 3, 2, 1, torch.float32, 1),
    (128, 64, 112, 3, 2, 1, torch.float16, 0),
    (32, 64, 224, 2, 2, 0, torch.float32, 0),
    (32, 64, 224, 2, 2, 0, torch.float32, 1),
    (32, 512, 28, 2, 2, 0, torch.float32, 0),
    (32, 256, 56, 2, 2, 0, torch.float32, 0),
    (32, 64, 56, 3, 1, 1, torch.float32, 0),
    (32, 64, 56, 3, 1, 1, torch.float32, 1),
    (32, 256, 56, 3, 2, 1, torch.float32, 0),
    (32, 16, 112, 3, 2, 1, torch.float32, 0),
]
CALLS = 10


def self_device_us(event):
    for attr in ("self_device_time_total", "self_cuda_time_total"):
        v = getattr(event, attr, None)
        if v:
            return v
    return 0


def kind(name):
    if "max_pool_forward" in name:
        return "fwd"
    if "max_pool_backward" in name:
        return "bwd"
    if "Fill" in name or "fill" in name:
        return "fill"
    return None


def measure(batch, ch, side, k, s, p, dtype, nhwc):
    x = torch.randn(batch, ch, side, side, device="cuda", dtype=dtype)
    if nhwc:
        x = x.contiguous(memory_format=torch.channels_last)
    y, idx = F.max_pool2d_with_indices(x, k, s, p)
    gy = torch.randn_like(y)

    def step():
        F.max_pool2d_with_indices(x, k, s, p)
        torch.ops.aten.max_pool2d_with_indices_backward(gy, x, [k, k], [s, s], [p, p], [1, 1],
                                                        False, idx)
    for _ in range(5):
        step()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(CALLS):
            step()
        torch.cuda.synchronize()
    us = {}
    for e in prof.key_averages():
        tag = kind(e.key) if e.key.startswith("void") else None  # kernels, not aten ops
        if tag:
            us[tag] = us.get(tag, 0) + self_device_us(e) / e.count
    return y.shape[-1], us


def main():
    print(torch.__version__, torch.cuda.get_device_name(), flush=True)
    for shape in SHAPES:
        batch, ch, side, k, s, p, dtype, nhwc = shape
        out, us = measure(*shape)
        print("b%d c%d h%d k%d s%d p%d %s %s out%d fwd_us %.2f bwd_us %.2f fill_us %.2f" % (
            batch, ch, side, k, s, p, str(dtype).split(".")[1], "nhwc" if nhwc else "nchw", out,
            us.get("fwd", -1), us.get("bwd", -1), us.get("fill", -1)), flush=True)


if __name__ == "__main__":
    main()
