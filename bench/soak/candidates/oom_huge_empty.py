"""FAULT: out-of-memory
EXPECT: forward-error
PROBLEM: quick_gelu
Asks for a 512 TiB scratch buffer (2^47 floats): more than any GPU holds and more than a 47-bit
user address space maps, so the allocation fails at once on a GPU and on a CPU alike.
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


def quick_gelu(x):
    x_flat = x.contiguous().view(-1)
    scratch = torch.empty(1 << 47, dtype=torch.float32, device=x.device)
    n_elements = x_flat.numel()
    _quick_gelu_kernel[(triton.cdiv(n_elements, 256),)](x_flat, scratch, n_elements, BLOCK=256)
    return scratch[:n_elements].view_as(x)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return quick_gelu(x)
