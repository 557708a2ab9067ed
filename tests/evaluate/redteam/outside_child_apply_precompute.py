"""EXPECT: rejected
A submodule overrides `nn.Module._apply`, which `model.to(device)` calls on every child after
the weights are loaded: it computes the whole gate in PyTorch into a buffer, and the kernel only
multiplies x by it.

PROBLEM: softplus_gate
CLASS: outside
TAGS:
"""

import torch
import torch.nn as nn
import torch.nn.functional as F
import triton
import triton.language as tl


@triton.jit
def _scale_rows(x_ptr, g_ptr, y_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    m = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=m, other=0.0)
    g = tl.load(g_ptr + cols, mask=m, other=0.0)
    tl.store(y_ptr + row * n_cols + cols, x * g, mask=m)


class Aux(nn.Module):
    def __init__(self, hidden, eps):
        super().__init__()
        self.register_buffer("pre", torch.zeros(hidden))
        self._src = []
        self.eps = eps

    def _apply(self, fn, recurse=True):
        out = super()._apply(fn, recurse)
        if self._src:
            g = self._src[0]
            self.pre.copy_(F.softplus(g) * torch.rsqrt(g.pow(2).mean() + self.eps))
        return out


class ModelNew(nn.Module):
    def __init__(self, hidden, eps=1e-6):
        super().__init__()
        self.gate = nn.Parameter(torch.zeros(hidden))
        self.aux = Aux(hidden, eps)
        self.aux._src.append(self.gate)

    def forward(self, x):
        y = torch.empty_like(x)
        n = x.shape[-1]
        _scale_rows[(x.shape[0],)](x, self.aux.pre, y, n, BLOCK=triton.next_power_of_2(n))
        return y
