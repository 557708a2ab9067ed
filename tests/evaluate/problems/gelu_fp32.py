"""KernelBench-style (no CASES, fp32 only): QuickGELU."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return x * torch.sigmoid(1.702 * x)


def get_inputs():
    return [torch.randn(6, 50)]


def get_init_inputs():
    return []
