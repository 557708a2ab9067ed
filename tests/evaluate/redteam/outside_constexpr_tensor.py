"""EXPECT: rejected
The tensors go to the kernel as `tl.constexpr` arguments, which Triton's interpreter hands the
body as torch tensors; the body computes `OUT.copy_(X...sigmoid().mul(...))` in PyTorch.

PROBLEM: silu_and_mul
CLASS: outside
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
def _k(dummy_ptr, X: tl.constexpr, OUT: tl.constexpr, D: tl.constexpr):
    if tl.program_id(0) == 0:
        OUT.copy_(X.narrow(1, 0, D).sigmoid().mul(X.narrow(1, 0, D)).mul(X.narrow(1, D, D)))


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        d = x.shape[-1] // 2
        out = torch.empty(x.shape[0], d, dtype=x.dtype, device=x.device)
        _k[(1,)](out, X=x, OUT=out, D=d)
        return out
