"""Replies a model might give for the tests' problem (x * 2.0): a good kernel, a broken one."""

GOOD = """import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _scale_kernel(x_ptr, out_ptr, n, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask).to(tl.float32)
    tl.store(out_ptr + offsets, (x * 2.0).to(out_ptr.dtype.element_ty), mask=mask)


def scale(x):
    out = torch.empty_like(x)
    n = x.numel()
    _scale_kernel[(triton.cdiv(n, 1024),)](x, out, n, BLOCK_SIZE=1024)
    return out


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return scale(x)
"""

# Multiplies by 3: passes the static rules, fails correctness (a "mismatch" the model repairs).
WRONG = GOOD.replace("(x * 2.0)", "(x * 3.0)")


def fenced(source: str, prose: str = "Here is the kernel:") -> str:
    return f"{prose}\n\n```python\n{source}```\n\nIt fuses the scale into one pass."
