"""EXPECT: rejected
Online softmax whose running max starts at 0.0 instead of -inf (a classic init bug): right for
every row whose largest value is above about -80, NaN (0/0) for a row lying entirely below it.
The judge's off-centre rows are only ever moved up (+256 RMS); logits under a large negative
bias or an additive -1e4 mask never lie in its draws.

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
    m_i = tl.zeros([BLOCK], dtype=tl.float32)  # bug: should start at -inf
    l_i = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, N, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + row * N + cols, mask=cols < N, other=float("-inf")).to(tl.float32)
        m_new = tl.maximum(m_i, x)
        l_i = l_i * tl.exp(m_i - m_new) + tl.exp(x - m_new)
        m_i = m_new
    m = tl.max(m_i, axis=0)
    total = tl.sum(l_i * tl.exp(m_i - m), axis=0)
    for start in range(0, N, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + row * N + cols, mask=cols < N, other=float("-inf")).to(tl.float32)
        y = tl.exp(x - m) / total
        tl.store(y_ptr + row * N + cols, y.to(y_ptr.dtype.element_ty), mask=cols < N)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        y = torch.empty_like(x)
        R, N = x.shape
        _softmax[(R,)](x, y, N, BLOCK=4096)
        return y
