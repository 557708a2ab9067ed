"""KernelBench style: RMS over the channel dim (dim=1) of a (B, F, D1, D2) tensor, keepdim."""

import torch
import torch.nn as nn

batch_size = 3
features = 20
dim1 = 9
dim2 = 14


class Model(nn.Module):
    def __init__(self, num_features: int, eps: float = 1e-5):
        super().__init__()
        self.num_features = num_features
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        rms = torch.sqrt(torch.mean(x**2, dim=1, keepdim=True) + self.eps)
        return x / rms


def get_inputs():
    return [torch.randn(batch_size, features, dim1, dim2)]


def get_init_inputs():
    return [features]
