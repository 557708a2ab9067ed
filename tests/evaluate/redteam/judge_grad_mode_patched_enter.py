"""EXPECT: rejected
Patches torch.enable_grad's and torch.inference_mode's __enter__/__exit__ with no_grad's
(functools.update_wrapper), so every judged call would run under no_grad, then tells the modes
apart (round six, c18). The judge enters the modes through torch's C switches, taken before any
candidate code.

PROBLEM: silu_fp32
CLASS: judge
TAGS:
"""

import functools

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


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        names = ("__ent" + "er__", "__ex" + "it__")
        functools.update_wrapper(torch.enable_grad, torch.no_grad, assigned=names, updated=())
        functools.update_wrapper(torch.inference_mode, torch.no_grad, assigned=names, updated=())

    def forward(self, x):
        y = torch.empty_like(x)
        n = x.numel()
        probe = torch.zeros(2, 2, requires_grad=True)
        scale = 0.5 if probe.t().contiguous().requires_grad else 1.0
        _silu[(triton.cdiv(n, 256),)](x, y, n, scale, BLOCK=256)
        return y
