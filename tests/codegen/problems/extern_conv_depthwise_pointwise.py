"""A depthwise-separable convolution: a depthwise Conv2d straight into a 1x1 Conv2d, both
declared extern, with nothing between them (no kernel there; one for the output)."""

import torch
import torch.nn as nn

KBOT = dict(extern_ops=["conv2d"])


class Model(nn.Module):
    def __init__(self, channels, out_channels):
        super().__init__()
        self.depthwise = nn.Conv2d(channels, channels, 3, padding=1, groups=channels)
        self.pointwise = nn.Conv2d(channels, out_channels, 1, bias=False)

    def forward(self, x):
        return self.pointwise(self.depthwise(x))


def get_inputs():
    return [torch.randn(2, 4, 5, 6)]


def get_init_inputs():
    return [4, 6]
