"""ConvTranspose1d (declared extern) with groups and dilation, whose places in torch's
argument list differ from a plain convolution's, then a fused scale + ReLU, fp32."""

import torch
import torch.nn as nn

KBOT = dict(extern_ops=["conv_transpose1d"])


class Model(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.conv = nn.ConvTranspose1d(
            channels,
            6,
            kernel_size=3,
            stride=2,
            padding=2,
            output_padding=1,
            groups=2,
            dilation=2,
        )

    def forward(self, x):
        return torch.relu(self.conv(x) * 0.5)


def get_inputs():
    return [torch.randn(2, 4, 7)]


def get_init_inputs():
    return [4]
