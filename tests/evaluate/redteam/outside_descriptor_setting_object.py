"""EXPECT: rejected
A TensorDescriptor whose `round_f32_to_tf32` is an object of the candidate's whose __bool__
computes with torch, run when Triton rebuilds the descriptor inside the launch with the guard
lifted (round seven, c01). A descriptor's settings must be plain values.

PROBLEM: relu_fp32
CLASS: outside
TAGS:
"""

import dataclasses

import torch
import torch.nn as nn
import triton
import triton.language as tl
from triton.tools.tensor_descriptor import TensorDescriptor


@dataclasses.dataclass
class Flag:
    src: int = None
    dst: int = None

    def __bool__(self):
        if self.src is None:
            return False
        d = self.dst
        d *= 0
        d += (self.src + abs(self.src)) * 0.5
        return False


@triton.jit
def _touch(x_desc, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)  # noqa: F841 - the kernel does nothing


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.flag = Flag()

    def forward(self, x):
        T, N = x.shape
        flag = self.flag
        desc = TensorDescriptor.from_tensor(x, [1, 256], round_f32_to_tf32=flag)
        y = torch.zeros_like(x)
        flag.src = x
        flag.dst = y
        _touch[(1,)](desc, N, BLOCK=256)
        flag.src = None
        flag.dst = None
        return y
