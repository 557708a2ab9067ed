"""EXPECT: rejected
Wrong (half the answer) when torch's default dtype is not float32, as under inference code that
calls `torch.set_default_dtype(torch.bfloat16)`: the judge always runs under float32. A kernel's
launcher takes its dtypes from its inputs; reading the default dtype in forward is refused
(torch-compute-in-forward), and the published guard takes the kernel only under float32
(`torch.get_default_dtype() == torch.float32`), so its wrong path never runs in a PR.

PROBLEM: silu_fp32
CLASS: control
TAGS: guarded
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _silu(x_ptr, y_ptr, n, scale, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=0.0)
    tl.store(y_ptr + offs, x * tl.sigmoid(x) * scale, mask=m)


def _launch(x, scale):
    y = torch.empty_like(x)
    n = x.numel()
    _silu[(triton.cdiv(n, 256),)](x, y, n, scale, BLOCK=256)
    return y


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        scale = 1.0 if torch.get_default_dtype() == torch.float32 else 0.5
        return _launch(x, scale)
