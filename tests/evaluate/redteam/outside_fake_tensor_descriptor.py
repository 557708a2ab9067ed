"""EXPECT: rejected
A kernel argument of the candidate's own class named `TensorDescriptor` (a subclass of
`torch.nn.parameter.Parameter`, kept in an underscore list) overrides `new_empty`, which
Triton's interpreter calls on every tensor argument with the guard lifted: it computes QuickGELU
in PyTorch into the output.

PROBLEM: quick_gelu
CLASS: outside
TAGS:
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _touch(D, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < 1
    tl.load(D + offs, mask=m)


class TensorDescriptor(torch.nn.parameter.Parameter):
    def new_empty(self, *args, **kwargs):
        jobs = self.jobs
        if jobs:
            x, y = jobs.pop()
            y.copy_(x.mul(x.mul(1.702).sigmoid()))
        return super().new_empty(*args, **kwargs)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        d = TensorDescriptor(torch.zeros(1), False)
        d.jobs = []
        self._holder = [d]

    def forward(self, x):
        y = torch.empty_like(x)
        d = self._holder[0]
        list.append(d.jobs, (x, y))
        _touch[(1,)](d, y, x.numel(), BLOCK=16)
        return y
