"""FAULT: hang
EXPECT: timeout
PROBLEM: quick_gelu
The kernel spins on a flag that nothing sets: the candidate's process blocks inside the GPU (or
the interpreter) until the judge's time limit kills its process group.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _quick_gelu_spin_kernel(x_ptr, out_ptr, flag_ptr, n_elements, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
    flag = tl.load(flag_ptr, volatile=True)
    while flag == 0:  # the flag stays 0: a volatile load the compiler cannot hoist
        flag = tl.load(flag_ptr, volatile=True)
    tl.store(out_ptr + offsets, (x * tl.sigmoid(1.702 * x)).to(out_ptr.dtype.element_ty), mask=mask)


def quick_gelu(x):
    x_flat = x.contiguous().view(-1)
    out = torch.empty_like(x_flat)
    flag = torch.zeros(1, dtype=torch.int32, device=x.device)
    n_elements = x_flat.numel()
    _quick_gelu_spin_kernel[(triton.cdiv(n_elements, 256),)](
        x_flat, out, flag, n_elements, BLOCK=256
    )
    return out.view_as(x)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return quick_gelu(x)
