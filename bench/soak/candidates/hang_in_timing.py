"""FAULT: hang
EXPECT: timeout
PROBLEM: quick_gelu
DEVICES: cuda
Correct during the correctness trials, then the kernel counts its own launches in a buffer and
spins forever once it has run 64 programs: the hang comes in the timing stage (warm-up or graph
replay), where the judge times the candidate's process interleaved with the baselines.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _quick_gelu_counting_kernel(x_ptr, out_ptr, count_ptr, n_elements, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
    seen = tl.atomic_add(count_ptr, 1)
    while seen > 64:  # every program after the 64th: the count only grows
        seen = tl.load(count_ptr, volatile=True)
    tl.store(out_ptr + offsets, (x * tl.sigmoid(1.702 * x)).to(out_ptr.dtype.element_ty), mask=mask)


def quick_gelu(x, count):
    x_flat = x.contiguous().view(-1)
    out = torch.empty_like(x_flat)
    n_elements = x_flat.numel()
    grid = (triton.cdiv(n_elements, 256),)
    _quick_gelu_counting_kernel[grid](x_flat, out, count, n_elements, BLOCK=256)
    return out.view_as(x)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("launches", torch.zeros(1, dtype=torch.int32))

    def forward(self, x):
        return quick_gelu(x, self.launches)
