"""KernelBench style: L1 normalisation of each row, x / sum(|x|, dim=1, keepdim)."""

import torch
import torch.nn as nn

batch_size = 6
dim = 500


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x / torch.sum(torch.abs(x), dim=1, keepdim=True)


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
