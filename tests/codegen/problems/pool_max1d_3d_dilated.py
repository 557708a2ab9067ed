"""Max pooling with dilation in one dim (max_pool1d traces as 2d over an unsqueezed dim) and
three dims (stride 2, padding 1, dilation 2), side by side, fp32."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.pool1d = nn.MaxPool1d(kernel_size=3, stride=2, padding=1, dilation=2)
        self.pool3d = nn.MaxPool3d(kernel_size=2, stride=2, padding=1, dilation=2)

    def forward(self, x, v):
        return self.pool1d(x), self.pool3d(v) + 1.0


def get_inputs():
    return [torch.randn(2, 3, 13), torch.randn(1, 2, 7, 6, 8)]


def get_init_inputs():
    return []
