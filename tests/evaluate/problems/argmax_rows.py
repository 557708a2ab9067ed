"""Row argmax of [T, 64] fp32 (torch returns the first maximal index)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.argmax(x, dim=-1)


CASES = [dict(T=8)]


def get_inputs(T):
    return [torch.randn(T, 64)]


def get_init_inputs():
    return []
