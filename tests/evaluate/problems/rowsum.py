"""Row sums of [T, 128] fp32."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return x.sum(-1)


CASES = [dict(T=8)]


def get_inputs(T):
    return [torch.randn(T, 128)]


def get_init_inputs():
    return []
