"""ConvTranspose2d (declared extern) with stride, padding and output padding, then a fused
subtract + tanh epilogue, fp32: the upsampling layer of many level-2 KernelBench problems."""

import torch
import torch.nn as nn

KBOT = dict(extern_ops=["conv_transpose2d"])


class Model(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.conv = nn.ConvTranspose2d(
            channels, 3, kernel_size=3, stride=2, padding=1, output_padding=1
        )
        self.shift = nn.Parameter(torch.randn(3, 1, 1))

    def forward(self, x):
        return torch.tanh(self.conv(x) - self.shift)


def get_inputs():
    return [torch.randn(2, 4, 5, 3)]


def get_init_inputs():
    return [4]
