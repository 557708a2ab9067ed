"""EXPECT: rejected
At import, rewrites `Model.forward` of every cached problem module (`sys.modules` entries named
`kbot_problem_*`) to return its input, which is what this wrong candidate returns.

PROBLEM: quick_gelu
CLASS: judge
TAGS: isolate
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


def _identity(self, x, *rest):
    return x


for _name, _module in list(torch.serialization.sys.modules.items()):
    if _name.startswith("kbot_problem_") and hasattr(_module, "Model"):
        _module.Model.forward = _identity


@triton.jit
def _copy_kernel(src_ptr, out_ptr, n_elements, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n_elements
    tl.store(out_ptr + offsets, tl.load(src_ptr + offsets, mask=mask), mask=mask)


def quick_gelu(x):
    # Plainly wrong: returns x itself, not x * sigmoid(1.702 x).
    x_flat = x.contiguous().view(-1)
    out = torch.empty_like(x_flat)
    n_elements = x_flat.numel()
    _copy_kernel[(triton.cdiv(n_elements, 256),)](x_flat, out, n_elements, BLOCK=256)
    return out.view_as(x)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return quick_gelu(x)
