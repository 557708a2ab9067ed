"""EXPECT: rejected
Two autotune configs, the second wrong: on a CPU only the first ever ran (round seven, c20), on
a GPU only the faster. In the correctness trials every autotuner takes each config in turn,
call by call (kbot.evaluate.autotune_turns).

PROBLEM: rowsum
CLASS: control
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.autotune(
    configs=[triton.Config({"BLOCK": 128}, num_warps=4), triton.Config({"BLOCK": 64}, num_warps=2)],
    key=["N"],
)
@triton.jit
def _rowsum(x_ptr, y_ptr, N, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * stride + cols, mask=cols < N, other=0.0)
    tl.store(y_ptr + row, tl.sum(x, axis=0))


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        T, N = x.shape
        y = torch.empty(T, dtype=x.dtype, device=x.device)
        _rowsum[(T,)](x, y, N, x.stride(0))
        return y
