"""A reverse cumsum, `cumsum(x.flip(d), d).flip(d)`: the flips are index rewrites (n - 1 - i)
and the scan runs backwards over the row in registers (tl.cumsum(..., reverse=True)). A row
width that is not a power of two, so masked lanes sit where a backwards scan starts."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        return torch.cumsum(x.flip(self.dim), dim=self.dim).flip(self.dim) * 0.5


CASES = [dict(T=4), dict(T=11)]


def get_inputs(T):
    return [torch.rand(T, 300)]


def get_init_inputs():
    return [1]
