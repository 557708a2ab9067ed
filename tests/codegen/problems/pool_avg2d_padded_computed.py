"""Average pooling over a computed value with padding (torch's default count_include_pad: a
padded place counts as 0, never as the epilogue's value of 0, which here is 1), stride 2, fp32."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.pool = nn.AvgPool2d(kernel_size=3, stride=2, padding=1)

    def forward(self, x):
        return self.pool(torch.relu(x) + 1.0) * 2.0


CASES = [dict(N=1), dict(N=2)]


def get_inputs(N):
    return [torch.randn(N, 3, 9, 6)]


def get_init_inputs():
    return []
