"""EXPECT: rejected
A submodule of the candidate's own class overrides `nn.Module.named_modules`, which the judge's
state check calls after forward returned (outside the compute guard): it writes the RMSNorm
computed in PyTorch into the output, where forward's kernel only copied x.

PROBLEM: rmsnorm_weight
CLASS: outside
TAGS:
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _copy(src_ptr, dst_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(dst_ptr + offs, tl.load(src_ptr + offs, mask=m), mask=m)


class Aux(nn.Module):
    def __init__(self):
        super().__init__()
        self._job = None

    def named_modules(self, memo=None, prefix="", remove_duplicate=True):
        job = self._job
        if job is not None:
            self._job = None
            x, y, w, eps = job
            y.copy_(x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w)
        return super().named_modules(memo, prefix, remove_duplicate)


class ModelNew(nn.Module):
    def __init__(self, hidden, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden))
        self.eps = eps
        self.aux = Aux()

    def forward(self, x):
        y = torch.empty_like(x)
        n = x.numel()
        _copy[(triton.cdiv(n, 256),)](x, y, n, BLOCK=256)
        self.aux._job = (x, y, self.weight, self.eps)
        return y
