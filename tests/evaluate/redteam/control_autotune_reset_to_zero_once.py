"""EXPECT: rejected
Split-row sum accumulating with tl.atomic_add into a torch.empty output that only the
autotuner's reset_to_zero zeroes. Triton resets it only when it benchmarks (a cache miss);
in the correctness trials the turns clear the autotuner's cache before every call, so every
judged call is zeroed, while a user's second call (cache hit) adds onto garbage. A call in turn now runs as a cache hit: no reset_to_zero (round eight, c02).

PROBLEM: rowsum
CLASS: control
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.autotune(
    configs=[triton.Config({"BLOCK": 32}, num_warps=1), triton.Config({"BLOCK": 64}, num_warps=2)],
    key=["N"],
    reset_to_zero=["y_ptr"],
)
@triton.jit
def _rowsum(x_ptr, y_ptr, N, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    part = tl.program_id(1)
    cols = part * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * stride + cols, mask=cols < N, other=0.0)
    tl.atomic_add(y_ptr + row, tl.sum(x, axis=0))


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        T, N = x.shape
        y = torch.empty(T, dtype=x.dtype, device=x.device)
        _rowsum[lambda meta: (T, triton.cdiv(N, meta["BLOCK"]))](x, y, N, x.stride(0))
        return y
