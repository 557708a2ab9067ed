"""BatchNorm2d as a served model runs it (eval mode: the running statistics, a per-channel
affine of every element), with statistics and affine parameters away from their defaults, fp32."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.norm = nn.BatchNorm2d(channels, eps=1e-5)
        with torch.no_grad():
            self.norm.running_mean.uniform_(-1.0, 1.0)
            self.norm.running_var.uniform_(0.5, 2.0)
            self.norm.weight.uniform_(0.5, 1.5)
            self.norm.bias.uniform_(-0.5, 0.5)

    def forward(self, x):
        return self.norm(x)


CASES = [dict(N=1), dict(N=3)]


def get_inputs(N):
    return [torch.randn(N, 6, 5, 7) * 2 + 0.5]


def get_init_inputs():
    return [6]
