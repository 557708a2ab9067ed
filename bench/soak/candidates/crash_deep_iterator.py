"""FAULT: crash
EXPECT: crash
PROBLEM: quick_gelu
Kills its own process with SIGSEGV without a forbidden name: two million nested `map`
iterators, and one `next()` recurses through all of them in C until the stack overflows
(CPython 3.11 and 3.12 have no recursion guard there).
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
    tl.store(out_ptr + offsets, (x * tl.sigmoid(1.702 * x)).to(out_ptr.dtype.element_ty), mask=mask)


def overflow_the_stack():
    chain = iter([1])
    for _ in range(2_000_000):
        chain = map(abs, chain)
    next(chain)


def quick_gelu(x):
    x_flat = x.contiguous().view(-1)
    out = torch.empty_like(x_flat)
    n_elements = x_flat.numel()
    overflow_the_stack()
    _quick_gelu_kernel[(triton.cdiv(n_elements, 256),)](x_flat, out, n_elements, BLOCK=256)
    return out.view_as(x)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return quick_gelu(x)
