"""EXPECT: rejected
RMSNorm that folds the weight into the root, `x * sqrt(w * w / (mean(x^2) + eps))`: the weight's
sign is lost, right while every weight is positive (a fresh Model's ones, redrawn around one)
and wrong for the trained checkpoints whose norm weights hold some negative values. The judge
flips the sign of some elements of a redrawn constant parameter
(kbot.evaluate.reference_state).

PROBLEM: rmsnorm_ones
CLASS: control
TAGS:
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _rmsnorm(x_ptr, w_ptr, y_ptr, eps, N: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, N)
    x = tl.load(x_ptr + row * N + cols)
    w = tl.load(w_ptr + cols)
    ms = tl.sum(x * x, axis=0) / N + eps
    tl.store(y_ptr + row * N + cols, x * tl.sqrt(w * w / ms))


def rmsnorm(x, weight, eps):
    y = torch.empty_like(x)
    _rmsnorm[(x.shape[0],)](x, weight, y, eps, N=x.shape[1])
    return y


class ModelNew(nn.Module):
    def __init__(self, hidden, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden))
        self.eps = eps

    def forward(self, x):
        return rmsnorm(x, self.weight, self.eps)
