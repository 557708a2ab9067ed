"""Conv3d (declared extern) returned as is, fp32, its last dim 3 wide: KernelBench level-1
problem 59 at a small size. The epilogue copies the convolution's result into the output."""

import torch
import torch.nn as nn

KBOT = dict(extern_ops=["conv3d"])


class Model(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size):
        super().__init__()
        self.conv3d = nn.Conv3d(in_channels, out_channels, (kernel_size, kernel_size, 1))

    def forward(self, x):
        return self.conv3d(x)


def get_inputs():
    return [torch.rand(2, 3, 7, 6, 3)]


def get_init_inputs():
    return [3, 4, 3]
