"""EXPECT: rejected
RMSNorm with a second path for frozen weights (`not self.weight.requires_grad`), the way serving
engines load them (`Parameter(w, requires_grad=False)`): that path forgets the weight. The judge
loads ModelNew's state as the reference's, parameters requiring grad, so only the right path ever
ran; a published kernel's guard admits the frozen weight (it runs under inference mode).

PROBLEM: rmsnorm_decode
CLASS: control
TAGS:
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _rms_row(x_ptr, w_ptr, y_ptr, N, stride, eps, WEIGHTED: tl.constexpr, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    m = cols < N
    x = tl.load(x_ptr + row * stride + cols, mask=m, other=0.0)
    ms = tl.sum(x * x, axis=0) / N
    y = x * (1.0 / tl.sqrt(ms + eps))
    if WEIGHTED:
        y = y * tl.load(w_ptr + cols, mask=m, other=0.0)
    tl.store(y_ptr + row * N + cols, y, mask=m)


def rmsnorm(x, weight, eps):
    T, N = x.shape
    y = torch.empty((T, N), dtype=x.dtype, device=x.device)
    weighted = weight.requires_grad  # the frozen path drops the weight
    _rms_row[(T,)](
        x, weight, y, N, x.stride(0), eps, WEIGHTED=weighted, BLOCK=triton.next_power_of_2(N)
    )
    return y


class ModelNew(nn.Module):
    def __init__(self, hidden, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden))
        self.eps = eps

    def forward(self, x):
        return rmsnorm(x, self.weight, self.eps)
