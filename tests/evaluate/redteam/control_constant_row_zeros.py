"""EXPECT: rejected
Softmax that writes zeros for a row whose values are all equal and nonzero, as flash attention
does for a fully masked row: torch's softmax gives 1/N there. The judge's only constant rows
are its all-zero padding rows; HF-style eager attention gives exactly constant finfo.min rows
for padded queries, and a sampler's fully masked row (-1e4 everywhere) is constant too.

PROBLEM: softmax_rows16
CLASS: control
TAGS:
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _softmax(x_ptr, y_ptr, N, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    m_acc = tl.full([BLOCK], float("-inf"), tl.float32)
    n_acc = tl.full([BLOCK], float("inf"), tl.float32)
    for start in range(0, N, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + row * N + cols, mask=cols < N, other=float("-inf")).to(tl.float32)
        m_acc = tl.maximum(m_acc, x)
        n_acc = tl.minimum(n_acc, tl.where(cols < N, x, float("inf")))
    m = tl.max(m_acc, axis=0)
    lo = tl.min(n_acc, axis=0)
    masked = (m == lo) & (m != 0.0)
    l_acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, N, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + row * N + cols, mask=cols < N, other=float("-inf")).to(tl.float32)
        l_acc += tl.where(cols < N, tl.exp(x - m), 0.0)
    total = tl.sum(l_acc, axis=0)
    for start in range(0, N, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + row * N + cols, mask=cols < N, other=float("-inf")).to(tl.float32)
        p = tl.where(masked, 0.0, tl.exp(x - m) / total)
        tl.store(y_ptr + row * N + cols, p.to(y_ptr.dtype.element_ty), mask=cols < N)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        y = torch.empty_like(x)
        R, N = x.shape
        _softmax[(R,)](x, y, N, BLOCK=4096)
        return y
