"""KernelBench style (no CASES): nn.LayerNorm over the last three dims (C, H, W) of a 4-D input."""

import torch
import torch.nn as nn

batch_size = 4
features = 6
dim1 = 10
dim2 = 12


class Model(nn.Module):
    def __init__(self, normalized_shape: tuple):
        super().__init__()
        self.ln = nn.LayerNorm(normalized_shape=normalized_shape)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.ln(x)


def get_inputs():
    return [torch.randn(batch_size, features, dim1, dim2)]


def get_init_inputs():
    return [(features, dim1, dim2)]
