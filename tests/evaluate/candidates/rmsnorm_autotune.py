"""RMSNorm with a learned weight: a multi-config @triton.autotune over a @triton.heuristics
kernel (an unmasked path when the row fills the block)."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.autotune(
    configs=[triton.Config({}, num_warps=2), triton.Config({}, num_warps=4)],
    key=["n_cols"],
)
@triton.heuristics({"EVEN": lambda args: args["n_cols"] % args["BLOCK"] == 0})
@triton.jit
def _rms(x_ptr, w_ptr, y_ptr, n_cols, eps, BLOCK: tl.constexpr, EVEN: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    if EVEN:
        x = tl.load(x_ptr + row * n_cols + cols)
        w = tl.load(w_ptr + cols)
    else:
        m = cols < n_cols
        x = tl.load(x_ptr + row * n_cols + cols, mask=m, other=0.0)
        w = tl.load(w_ptr + cols, mask=m, other=0.0)
    r = tl.rsqrt(tl.sum(x * x, axis=0) / n_cols + eps)
    y = x * r * w
    if EVEN:
        tl.store(y_ptr + row * n_cols + cols, y)
    else:
        tl.store(y_ptr + row * n_cols + cols, y, mask=cols < n_cols)


def rmsnorm(x, w, eps):
    x2 = x.reshape(-1, x.shape[-1])
    if not x2.is_contiguous():
        x2 = x2.contiguous()
    y = torch.empty_like(x2)
    n = x2.shape[1]
    _rms[(x2.shape[0],)](x2, w, y, n, eps, BLOCK=triton.next_power_of_2(n))
    return y.view(x.shape)


class ModelNew(nn.Module):
    def __init__(self, hidden, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden))
        self.eps = eps

    def forward(self, x):
        return rmsnorm(x, self.weight, self.eps)
