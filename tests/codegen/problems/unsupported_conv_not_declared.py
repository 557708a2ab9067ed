"""A convolution without `extern_ops`: codegen has no Triton convolution, so it steps aside."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, kernel_size=3)

    def forward(self, x):
        return torch.relu(self.conv(x))


def get_inputs():
    return [torch.randn(1, 3, 8, 8)]


def get_init_inputs():
    return []
