"""FAULT: out-of-bounds-read
EXPECT: mismatch, nan-inf, near-constant, input-independent, forward-error, crash
PROBLEM: quick_gelu
The kernel reads one whole tensor past the end of its input (masked as if it were in bounds):
near enough to land in mapped memory, so nothing faults and the outputs are garbage (the
judge's poisoned blocks, stale values) that the comparison has to catch.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _quick_gelu_past_end_kernel(x_ptr, out_ptr, n_elements, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n_elements
    x = tl.load(x_ptr + n_elements + offsets, mask=mask, other=0.0).to(tl.float32)
    tl.store(out_ptr + offsets, (x * tl.sigmoid(1.702 * x)).to(out_ptr.dtype.element_ty), mask=mask)


def quick_gelu(x):
    x_flat = x.contiguous().view(-1)
    out = torch.empty_like(x_flat)
    n_elements = x_flat.numel()
    _quick_gelu_past_end_kernel[(triton.cdiv(n_elements, 256),)](x_flat, out, n_elements, BLOCK=256)
    return out.view_as(x)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return quick_gelu(x)
