"""EXPECT: rejected
At import, registers a global forward hook (`torch.nn.modules.module.register_module_forward_hook`)
that makes the problem's reference `Model` return its input, which is what this wrong candidate
returns; the hook outlives the candidate.

PROBLEM: quick_gelu
CLASS: judge
TAGS: isolate
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


def _reference_returns_input(module, args, output):
    if type(module).__name__ == "Model" and args:
        return args[0]
    return None


torch.nn.modules.module.register_module_forward_hook(_reference_returns_input)


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
