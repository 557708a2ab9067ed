"""FAULT: out-of-memory
EXPECT: forward-error
PROBLEM: silu_and_mul
DEVICES: cuda
Takes the GPU's memory 2 GiB at a time until none is left (an H200 runs out after ~70 blocks),
then fails with torch.OutOfMemoryError while holding all of it: the judge, on the same GPU, must
get its memory back once the candidate's process is gone. GPU only: on a CPU the blocks are
never touched and overcommit would let them all through.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _silu_and_mul_kernel(x_ptr, out_ptr, d, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < d
    gate = tl.load(x_ptr + row * 2 * d + cols, mask=mask, other=0.0).to(tl.float32)
    up = tl.load(x_ptr + row * 2 * d + d + cols, mask=mask, other=0.0).to(tl.float32)
    y = (gate * tl.sigmoid(gate) * up).to(out_ptr.dtype.element_ty)
    tl.store(out_ptr + row * d + cols, y, mask=mask)


def silu_and_mul(x):
    d = x.shape[-1] // 2
    hoard = [torch.empty(1 << 31, dtype=torch.uint8, device=x.device) for _ in range(1024)]
    out = torch.empty(x.shape[0], d, dtype=x.dtype, device=x.device)
    _silu_and_mul_kernel[(x.shape[0],)](x, out, d, BLOCK=triton.next_power_of_2(d))
    return out, hoard


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return silu_and_mul(x)[0]
