"""QuickGELU (CLIP): x * sigmoid(1.702 x), bf16 [T, 4096]."""

import torch
import torch.nn as nn

CASES = [dict(T=1), dict(T=16), dict(T=64), dict(T=4096), dict(T=16384)]


class Model(nn.Module):
    def forward(self, x):
        return x * torch.sigmoid(1.702 * x)


def get_inputs(T):
    return [torch.randn(T, 4096, dtype=torch.bfloat16)]


def get_init_inputs():
    return []
