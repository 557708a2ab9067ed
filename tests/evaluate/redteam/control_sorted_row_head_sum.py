"""EXPECT: rejected
Softmax with a "top-p fast path": when a row is already sorted in descending order (as top-p /
top-k samplers sort logits before their softmax), the normaliser is summed over the first 1024
entries only, on the assumption that the tail's mass is negligible. The judge never draws a
sorted row; a sampler's sorted logits over a 64k vocabulary keep most of their mass in the tail.

PROBLEM: softmax_rows16
CLASS: control
TAGS:
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _softmax(x_ptr, y_ptr, N, HEAD: tl.constexpr, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    m_acc = tl.full([BLOCK], float("-inf"), tl.float32)
    unsorted = tl.zeros([BLOCK], dtype=tl.int32)
    for start in range(0, N, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + row * N + cols, mask=cols < N, other=float("-inf")).to(tl.float32)
        nxt = tl.load(x_ptr + row * N + cols + 1, mask=cols + 1 < N, other=float("-inf")).to(
            tl.float32
        )
        unsorted += tl.where((cols + 1 < N) & (nxt > x), 1, 0)
        m_acc = tl.maximum(m_acc, x)
    m = tl.max(m_acc, axis=0)
    is_sorted = tl.sum(unsorted, axis=0) == 0
    l_acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, N, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + row * N + cols, mask=cols < N, other=float("-inf")).to(tl.float32)
        keep = (cols < N) & ((cols < HEAD) | (is_sorted == 0))
        l_acc += tl.where(keep, tl.exp(x - m), 0.0)
    total = tl.sum(l_acc, axis=0)
    for start in range(0, N, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + row * N + cols, mask=cols < N, other=float("-inf")).to(tl.float32)
        tl.store(
            y_ptr + row * N + cols,
            (tl.exp(x - m) / total).to(y_ptr.dtype.element_ty),
            mask=cols < N,
        )


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        y = torch.empty_like(x)
        R, N = x.shape
        _softmax[(R,)](x, y, N, HEAD=1024, BLOCK=4096)
        return y
