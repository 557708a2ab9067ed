"""ConvTranspose3d (declared extern), grouped and strided, with nothing after it: the whole op is
the extern call (KernelBench level 1's 72 and 77 are such layers). fp32."""

import torch
import torch.nn as nn

KBOT = dict(extern_ops=["conv_transpose3d"])


class Model(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.conv = nn.ConvTranspose3d(
            channels, 6, kernel_size=(3, 2, 3), stride=2, padding=1, output_padding=1,
            groups=2, bias=False,
        )  # fmt: skip

    def forward(self, x):
        return self.conv(x)


def get_inputs():
    return [torch.randn(2, 4, 3, 4, 5)]


def get_init_inputs():
    return [4]
