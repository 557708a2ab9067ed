"""KernelBench style: divide by the Frobenius norm of the whole tensor (a full reduction)."""

import torch
import torch.nn as nn

batch_size = 4
features = 5
dim1 = 8
dim2 = 9


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        norm = torch.norm(x, p="fro")
        return x / norm


def get_inputs():
    return [torch.randn(batch_size, features, dim1, dim2)]


def get_init_inputs():
    return []
