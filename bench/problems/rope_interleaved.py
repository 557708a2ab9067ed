"""RoPE on interleaved (real, imaginary) pairs, written as a stack: [1, T, 32 heads, 128] bf16
rotated by an fp32 [T, 64, 2] table of (cos, sin), the math in fp32, as gpt-fast-style models
write it (a new op of the suite: the stack is a cat of one-wide pieces)."""

import torch
import torch.nn as nn

CASES = [dict(T=1), dict(T=16), dict(T=64), dict(T=4096), dict(T=16384)]


class Model(nn.Module):
    def forward(self, x, table):
        pairs = x.float().reshape(*x.shape[:-1], -1, 2)
        table = table.view(1, pairs.size(1), 1, pairs.size(3), 2)
        real, imag = pairs[..., 0], pairs[..., 1]
        cos, sin = table[..., 0], table[..., 1]
        turned = torch.stack([real * cos - imag * sin, imag * cos + real * sin], dim=-1)
        return turned.flatten(3).type_as(x)


def get_inputs(T):
    angles = torch.rand(T, 64) * 6.2831853
    table = torch.stack([angles.cos(), angles.sin()], dim=-1)
    return [torch.randn(1, T, 32, 128, dtype=torch.bfloat16), table]


def get_init_inputs():
    return []
