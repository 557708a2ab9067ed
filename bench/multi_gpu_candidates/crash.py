"""A kernel that reads a terabyte past its input: an illegal memory access on a GPU (a sticky
CUDA error that ends the candidate's process), SIGSEGV under the CPU interpreter."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _wild_kernel(x_ptr, out_ptr, n_elements, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets + (1 << 40), mask=mask, other=0.0)
    tl.store(out_ptr + offsets, x, mask=mask)


def wild(x):
    out = torch.empty_like(x)
    _wild_kernel[(triton.cdiv(x.numel(), 1024),)](x, out, x.numel(), BLOCK=1024)
    return out


class ModelNew(nn.Module):
    def __init__(self, *init):
        super().__init__()

    def forward(self, x):
        return wild(x)
