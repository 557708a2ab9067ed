"""EXPECT: rejected
A row sum whose four column programs accumulate into one place with a plain load and store:
right when programs run one at a time, as the interpreter runs them, a lost update on a GPU
(round seven, c04). A plain load of what another program of the launch stored is refused.

PROBLEM: rowsum
CLASS: control
TAGS:
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _rowsum_split(x_ptr, y_ptr, N, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    part = tl.program_id(1)
    cols = part * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * stride + cols, mask=cols < N, other=0.0)
    acc = tl.load(y_ptr + row)
    tl.store(y_ptr + row, acc + tl.sum(x, axis=0))


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        T, N = x.shape
        y = torch.zeros(T, dtype=x.dtype, device=x.device)
        BLOCK = 32
        _rowsum_split[(T, triton.cdiv(N, BLOCK))](x, y, N, x.stride(0), BLOCK=BLOCK)
        return y
