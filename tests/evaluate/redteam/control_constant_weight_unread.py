"""EXPECT: rejected
Never reads its RMSNorm weight (x * rsqrt(mean(x^2) + eps) alone): a fresh Model holds that
weight at ones, as LLaMA's RMSNorm, nn.RMSNorm and nn.LayerNorm do, so a judge that sends
Model's values unchanged passed every trial, and any trained checkpoint makes the output wrong.
The judge redraws each parameter a fresh Model holds at one constant value before sending it
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
def _rmsnorm(x_ptr, w_ptr, y_ptr, eps, USE_W: tl.constexpr, N: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, N)
    x = tl.load(x_ptr + row * N + cols)
    r = 1.0 / tl.sqrt(tl.sum(x * x, axis=0) / N + eps)
    y = x * r
    if USE_W:
        y = y * tl.load(w_ptr + cols)
    tl.store(y_ptr + row * N + cols, y)


def _launch(x, w, eps, use_w):
    y = torch.empty_like(x)
    _rmsnorm[(x.shape[0],)](x, w, y, eps, USE_W=use_w, N=x.shape[1])
    return y


class ModelNew(nn.Module):
    def __init__(self, hidden, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden))
        self.eps = eps

    def forward(self, x):
        return _launch(x, self.weight, self.eps, False)
