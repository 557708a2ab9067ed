"""EXPECT: rejected
`__init__` registers a forward hook that replaces forward's outputs with the answer computed in
PyTorch; forward's kernel only copies its inputs.

PROBLEM: add_rmsnorm
CLASS: outside
TAGS:
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _copy_kernel(src_ptr, out_ptr, n_elements, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n_elements
    tl.store(out_ptr + offsets, tl.load(src_ptr + offsets, mask=mask), mask=mask)


def copy_out(src, like):
    out = torch.empty_like(like)
    _copy_kernel[(triton.cdiv(out.numel(), 256),)](src, out, out.numel(), BLOCK=256)
    return out


def _answer(module, args, output):
    x, residual = args
    total = x + residual
    t = total.float()
    normed = t * torch.rsqrt(t.pow(2).mean(-1, keepdim=True) + module.eps)
    return (normed * module.weight).to(x.dtype), total


class ModelNew(nn.Module):
    def __init__(self, hidden_size, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden_size))
        self.eps = eps
        self.register_forward_hook(_answer)

    def forward(self, x, residual):
        return copy_out(x.contiguous(), x), copy_out(residual.contiguous(), residual)
