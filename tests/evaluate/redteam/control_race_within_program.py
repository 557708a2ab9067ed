"""EXPECT: rejected
A row cumsum computed Hillis-Steele style through global memory inside one program: store the
block, load it back shifted by d, add, repeat, with no tl.debug_barrier between the store and
the load. Under the interpreter a block store is complete before the next statement; on a GPU
the threads of one program read lanes other threads have not yet written (a race the
cross-program race check does not look for). The interpreter now refuses, within one program, a load of what another element stored since the last barrier (round eight, c05).

PROBLEM: cumsum_rows
CLASS: control
TAGS: cpu
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _scan(x_ptr, y_ptr, N, stride, BLOCK: tl.constexpr, STEPS: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    v = tl.load(x_ptr + row * stride + cols, mask=cols < N, other=0.0)
    d = 1
    for _ in tl.static_range(STEPS):
        tl.store(y_ptr + row * N + cols, v, mask=cols < N)
        prev = tl.load(y_ptr + row * N + cols - d, mask=(cols >= d) & (cols < N), other=0.0)
        v = v + prev
        d = d * 2
    tl.store(y_ptr + row * N + cols, v, mask=cols < N)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        T, N = x.shape
        y = torch.empty_like(x)
        _scan[(T,)](x, y, N, x.stride(0), BLOCK=512, STEPS=9)
        return y
