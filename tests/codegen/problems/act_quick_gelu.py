"""QuickGELU (CLIP): x * sigmoid(1.702 x), bf16."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return x * torch.sigmoid(1.702 * x)


CASES = [dict(T=1), dict(T=9)]


def get_inputs(T):
    return [torch.randn(T, 200, dtype=torch.bfloat16)]


def get_init_inputs():
    return []
