"""KernelBench style (no CASES): argmin over a middle dim given at construction."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.argmin(x, dim=self.dim)


def get_inputs():
    return [torch.rand(4, 33, 20)]


def get_init_inputs():
    return [1]
