"""Average pooling in one and three dims side by side (avg_pool1d traces as a 2d pool over an
unsqueezed dim; avg_pool3d with stride 2 and padding 1), summed, fp32."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.pool1d = nn.AvgPool1d(kernel_size=4, stride=2, padding=1)
        self.pool3d = nn.AvgPool3d(kernel_size=3, stride=2, padding=1)

    def forward(self, x, v):
        return self.pool3d(v) * 0.5, self.pool1d(x) - 1.0


def get_inputs():
    return [torch.randn(2, 3, 11), torch.randn(1, 2, 5, 6, 7)]


def get_init_inputs():
    return []
