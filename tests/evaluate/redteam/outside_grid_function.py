"""EXPECT: rejected
A module-level grid function computes the answer in PyTorch from tensors forward parked in a
list and writes the output; the kernel does nothing.

PROBLEM: silu_and_mul
CLASS: outside
TAGS:
"""

import torch
import torch.nn as nn
import torch.nn.functional as F
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


_PARKED = []


def _grid(meta):
    x, out = _PARKED.pop()
    d = x.shape[-1] // 2
    out.copy_(F.silu(x[:, :d]) * x[:, d:])
    return (1,)


@triton.jit
def _noop_kernel(out_ptr, n):
    pass


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        d = x.shape[-1] // 2
        out = torch.empty(x.shape[0], d, dtype=x.dtype, device=x.device)
        _PARKED.append((x, out))
        _noop_kernel[_grid](out, d)
        return out
