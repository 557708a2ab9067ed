"""EXPECT: rejected
Writes -1.0 where the reference log(relu(x)) is -inf: a plainly wrong kernel that the old
comparison (both sides through nan_to_num(0, 1, -1)) took as equal.

PROBLEM: log_relu
CLASS: control
TAGS:
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _copy_kernel(src_ptr, dst_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(dst_ptr + offs, tl.load(src_ptr + offs, mask=mask), mask=mask)


def _launch_copy(src, dst):
    n = dst.numel()
    _copy_kernel[(triton.cdiv(n, 256),)](src, dst, n, BLOCK=256)
    return dst


@triton.jit
def _log_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=1.0)
    y = tl.where(x > 0, tl.log(tl.maximum(x, 1e-30)), -1.0)
    tl.store(out_ptr + offs, y, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        out = torch.empty_like(x)
        n = x.numel()
        _log_kernel[(triton.cdiv(n, 256),)](x, out, n, BLOCK=256)
        return out
