"""An average pool before a ConvTranspose2d (declared extern): the pooled operand is written by
a kernel of its own before the call, the clamp and channel softmax after it fused."""

import torch
import torch.nn as nn

KBOT = dict(extern_ops=["conv_transpose2d"])


class Model(nn.Module):
    def __init__(self, channels, out_channels):
        super().__init__()
        self.pool = nn.AvgPool2d(2)
        self.up = nn.ConvTranspose2d(channels, out_channels, 3, stride=2, padding=1)

    def forward(self, x):
        y = torch.clamp(self.up(self.pool(x)), -1.0, 1.0)
        return torch.softmax(y, dim=1)


def get_inputs():
    return [torch.randn(2, 3, 8, 6)]


def get_init_inputs():
    return [3, 5]
