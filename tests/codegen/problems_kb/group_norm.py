"""KernelBench style: nn.GroupNorm (groups of channels, over C/G, H, W), with affine weights."""

import torch
import torch.nn as nn

batch_size = 3
features = 8
num_groups = 2
dim1 = 6
dim2 = 7


class Model(nn.Module):
    def __init__(self, num_features: int, num_groups: int):
        super().__init__()
        self.gn = nn.GroupNorm(num_groups=num_groups, num_channels=num_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.gn(x)


def get_inputs():
    return [torch.randn(batch_size, features, dim1, dim2)]


def get_init_inputs():
    return [features, num_groups]
