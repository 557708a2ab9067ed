"""EXPECT: rejected
Forward stores its input on `self` and reads `self.gelu`, which `__getattr__` computes in PyTorch;
the kernel copies what the attribute returned.

PROBLEM: quick_gelu
CLASS: outside
TAGS:
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _copy_kernel(src_ptr, out_ptr, n_elements, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n_elements
    tl.store(out_ptr + offsets, tl.load(src_ptr + offsets, mask=mask), mask=mask)


def copy_out(src, like):
    out = torch.empty_like(like)
    _copy_kernel[(triton.cdiv(out.numel(), 256),)](src, out, out.numel(), BLOCK=256)
    return out


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def __getattr__(self, name):
        if name == "gelu":
            x = self.staged
            return (x * torch.sigmoid(1.702 * x)).contiguous()
        return super().__getattr__(name)

    def forward(self, x):
        self.staged = x
        return copy_out(self.gelu, x)
