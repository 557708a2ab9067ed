"""FAULT: cuda-error
EXPECT: forward-error, crash
PROBLEM: silu_and_mul
DEVICES: cuda
A kernel compiled with debug=True whose device-side assertion always fails: a sticky
"device-side assert triggered" CUDA error. Should the assertion be compiled out (the CPU
interpreter skips it), the kernel stores the gate alone, so it is still rejected (mismatch),
never accepted: the verdict then shows that the assertion did not fire.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit(debug=True)
def _silu_and_mul_assert_kernel(x_ptr, out_ptr, d, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < d
    gate = tl.load(x_ptr + row * 2 * d + cols, mask=mask, other=0.0).to(tl.float32)
    up = tl.load(x_ptr + row * 2 * d + d + cols, mask=mask, other=0.0).to(tl.float32)
    tl.device_assert(cols < 0, "soak: this assertion always fails")
    y = (gate + 0.0 * up).to(out_ptr.dtype.element_ty)  # wrong on purpose: see the docstring
    tl.store(out_ptr + row * d + cols, y, mask=mask)


def silu_and_mul(x):
    d = x.shape[-1] // 2
    out = torch.empty(x.shape[0], d, dtype=x.dtype, device=x.device)
    _silu_and_mul_assert_kernel[(x.shape[0],)](x, out, d, BLOCK=triton.next_power_of_2(d))
    return out


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return silu_and_mul(x)
