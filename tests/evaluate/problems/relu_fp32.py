"""ReLU on [T, 256] fp32."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.relu(x)


CASES = [dict(T=4), dict(T=3)]


def get_inputs(T):
    return [torch.randn(T, 256)]


def get_init_inputs():
    return []
