"""EXPECT: rejected
The plain lost update of control_lost_update_race, preceded by program-local dummy loads of
over 2^22 addresses (a 4096-wide block loaded 1100 times): past MAX_TRACKED the interpreter's
race check is skipped for the whole launch. A launch too big to follow is now sampled, not dropped (round eight, c04).

PROBLEM: rowsum
CLASS: control
TAGS: cpu
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _rowsum(x_ptr, y_ptr, pad_ptr, N, stride, REPS, BLOCK: tl.constexpr, PAD: tl.constexpr):
    row = tl.program_id(0)
    part = tl.program_id(1)
    if row + part == 0:
        junk = tl.zeros([PAD], dtype=tl.float32)
        for _ in range(REPS):
            junk += tl.load(pad_ptr + tl.arange(0, PAD))
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
        pad = torch.zeros(4096, dtype=x.dtype, device=x.device)
        _rowsum[(T, triton.cdiv(N, 32))](x, y, pad, N, x.stride(0), 1100, BLOCK=32, PAD=4096)
        return y
