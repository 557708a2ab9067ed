"""RoPE on interleaved pairs, written as a stack: [batch, seq, heads, head_dim] bf16 read as
(real, imaginary) pairs, an fp32 [seq, head_dim / 2, 2] table of (cos, sin) broadcast over the
heads, the two products stacked on a new last dim and flattened back. The stack is a cat of
pieces one wide; a head_dim of 20 makes the 10 pairs narrower than any power-of-two block."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x, table):
        pairs = x.float().reshape(*x.shape[:-1], -1, 2)
        table = table.view(1, pairs.size(1), 1, pairs.size(3), 2)
        real, imag = pairs[..., 0], pairs[..., 1]
        cos, sin = table[..., 0], table[..., 1]
        turned = torch.stack([real * cos - imag * sin, imag * cos + real * sin], dim=-1)
        return turned.flatten(3).type_as(x)


CASES = [dict(S=1), dict(S=6)]


def get_inputs(S):
    return [torch.randn(1, S, 3, 20, dtype=torch.bfloat16), torch.randn(S, 10, 2)]


def get_init_inputs():
    return []
