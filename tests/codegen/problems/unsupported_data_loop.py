"""A data-dependent loop: the trip count depends on tensor values, so nothing can be traced."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        while x.abs().max() > 1.0:
            x = x / 2
        return x


def get_inputs():
    return [torch.randn(4, 64) * 10]


def get_init_inputs():
    return []
