"""KernelBench style (no CASES): max over dim 1 via torch.max(...)[0]; indices are unused."""

import torch
import torch.nn as nn

batch_size = 6
dim1 = 30
dim2 = 20


class Model(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.max(x, dim=self.dim)[0]


def get_inputs():
    return [torch.randn(batch_size, dim1, dim2)]


def get_init_inputs():
    return [1]
