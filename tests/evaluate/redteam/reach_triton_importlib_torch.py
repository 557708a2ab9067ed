"""EXPECT: rejected
In forward, `triton.runtime.build.importlib.import_module("torch")` hands back all of torch as a
"triton value", and the whole op is computed with it in PyTorch; the kernel only copies.

PROBLEM: quick_gelu
CLASS: reach
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


def quick_gelu(x):
    x_flat = x.contiguous().view(-1)
    out = torch.empty_like(x_flat)
    n_elements = x_flat.numel()
    hidden = triton.runtime.build.importlib.import_module("torch")
    answer = hidden.mul(x_flat, hidden.sigmoid(hidden.mul(x_flat, 1.702)))
    _copy_kernel[(triton.cdiv(n_elements, 256),)](answer, out, n_elements, BLOCK=256)
    return out.view_as(x)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return quick_gelu(x)
