"""EXPECT: rejected
The launch grid is an object whose __len__ computes with torch, run by Triton inside the launch
(round seven, c02). A grid, given or returned by a grid function, must be a tuple of ints.

PROBLEM: relu_fp32
CLASS: outside
TAGS:
"""

import dataclasses

import torch
import torch.nn as nn
import triton
import triton.language as tl


@dataclasses.dataclass
class Grid:
    src: int = None
    dst: int = None

    def __len__(self):
        if self.src is None:
            return 1
        d = self.dst
        d *= 0
        d += (self.src + abs(self.src)) * 0.5
        return 1

    def __add__(self, other):
        return (1, 1, 1)


@triton.jit
def _noop(y_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)  # noqa: F841 - the kernel does nothing


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.grid = Grid()

    def forward(self, x):
        y = torch.zeros_like(x)
        g = self.grid
        g.src = x
        g.dst = y
        _noop[g](y, x.numel(), BLOCK=256)
        g.src = None
        g.dst = None
        return y
