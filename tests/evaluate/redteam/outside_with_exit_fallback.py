"""EXPECT: rejected
A try/except in disguise: the bf16 launch raises, and the `__exit__` of the `with` block around it
swallows the error and computes the answer in PyTorch instead.

PROBLEM: quick_gelu
CLASS: outside
TAGS:
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _quick_gelu_kernel(x_ptr, out_ptr, n_elements, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
    y = x * tl.sigmoid(1.702 * x)
    tl.store(out_ptr + offsets, y.to(out_ptr.dtype.element_ty), mask=mask)


def quick_gelu(x):
    if x.dtype == torch.bfloat16:
        raise NotImplementedError("no bf16 kernel yet")
    x_flat = x.contiguous().view(-1)
    out = torch.empty_like(x_flat)
    n_elements = x_flat.numel()
    _quick_gelu_kernel[(triton.cdiv(n_elements, 256),)](x_flat, out, n_elements, BLOCK=256)
    return out.view_as(x)


class _Fallback:
    def __init__(self):
        self.x = None
        self.out = None

    def __enter__(self):
        return self

    def __exit__(self, kind, value, traceback):
        if kind is not None:
            self.out = self.x * torch.sigmoid(1.702 * self.x)
        return True


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.guard = _Fallback()

    def forward(self, x):
        guard = self.guard
        guard.x = x
        guard.out = None
        with guard:
            guard.out = quick_gelu(x)
        return guard.out
