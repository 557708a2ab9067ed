"""y = -x on [T, 256] fp32."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return -x


CASES = [dict(T=3), dict(T=8)]


def get_inputs(T):
    return [torch.randn(T, 256)]


def get_init_inputs():
    return []
