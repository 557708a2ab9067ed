"""KernelBench style: nn.InstanceNorm2d (per sample and channel, over H and W)."""

import torch
import torch.nn as nn

batch_size = 3
features = 4
dim1 = 11
dim2 = 13


class Model(nn.Module):
    def __init__(self, num_features: int):
        super().__init__()
        self.inorm = nn.InstanceNorm2d(num_features=num_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.inorm(x)


def get_inputs():
    return [torch.randn(batch_size, features, dim1, dim2)]


def get_init_inputs():
    return [features]
