"""EXPECT: rejected
A named `triton.heuristics` function returns the launch's tensors in a tuple bound to a
`tl.constexpr`, so no tensor shows in the launch call; the body computes with them in torch.

PROBLEM: silu_and_mul
CLASS: outside
TAGS:
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


def _pack(args):
    return (args["x_ptr"], args["out_ptr"])


@triton.heuristics({"T": _pack})
@triton.jit
def _k(x_ptr, out_ptr, d, T: tl.constexpr):
    g = T[0][:, :d]
    u = T[0][:, d:]
    T[1].copy_(g.sigmoid() * g * u)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        d = x.shape[-1] // 2
        out = torch.empty(x.shape[0], d, dtype=x.dtype, device=x.device)
        _k[(1,)](x, out, d)
        return out
