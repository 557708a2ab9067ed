"""FAULT: illegal-memory-access
EXPECT: forward-error, crash
PROBLEM: silu_and_mul
The kernel stores a terabyte past its output: an illegal memory access on a GPU (a sticky CUDA
error: the candidate's context is unusable afterwards), SIGSEGV under the CPU interpreter.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _silu_and_mul_wild_kernel(x_ptr, out_ptr, d, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < d
    gate = tl.load(x_ptr + row * 2 * d + cols, mask=mask, other=0.0).to(tl.float32)
    up = tl.load(x_ptr + row * 2 * d + d + cols, mask=mask, other=0.0).to(tl.float32)
    y = (gate * tl.sigmoid(gate) * up).to(out_ptr.dtype.element_ty)
    tl.store(out_ptr + row * d + cols + (1 << 40), y, mask=mask)


def silu_and_mul(x):
    d = x.shape[-1] // 2
    out = torch.empty(x.shape[0], d, dtype=x.dtype, device=x.device)
    _silu_and_mul_wild_kernel[(x.shape[0],)](x, out, d, BLOCK=triton.next_power_of_2(d))
    return out


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return silu_and_mul(x)
