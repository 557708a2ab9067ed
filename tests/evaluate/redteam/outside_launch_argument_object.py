"""EXPECT: rejected
A kernel argument is an object of the candidate's own class with `data_ptr`/`untyped_storage`
methods, which Triton calls inside the lifted launch; `untyped_storage()` computes F.silu there.

PROBLEM: silu_and_mul
CLASS: outside
TAGS:
"""

import torch
import torch.nn as nn
import torch.nn.functional as F
import triton
import triton.language as tl


class Box:
    def __init__(self):
        self.x = None
        self.o = None

    def data_ptr(self):
        return self.o.data_ptr()

    def untyped_storage(self):
        d = self.x.shape[-1] // 2
        self.o.copy_(F.silu(self.x[:, :d]) * self.x[:, d:])
        return self.o.untyped_storage()

    def new_empty(self, *a, **k):
        return self.o.new_empty(*a, **k)

    def storage_offset(self):
        return self.o.storage_offset()

    def size(self):
        return self.o.size()

    def stride(self):
        return self.o.stride()


@triton.jit
def _k(o_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    m = offs < n
    tl.store(o_ptr + offs, tl.load(o_ptr + offs, mask=m), mask=m)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.box = Box()

    def forward(self, x):
        d = x.shape[-1] // 2
        out = torch.empty(x.shape[0], d, dtype=x.dtype, device=x.device)
        self.box.x = x
        self.box.o = out
        _k[(1,)](self.box, 1, BLOCK=16)
        self.box.x = None
        self.box.o = None
        return out
