"""Equal pieces joined along dim 0 (rows), not the last dim: the pairs schedule refuses it."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, a, b):
        return torch.cat((a * b, a - b), dim=0)


CASES = [dict(T=1), dict(T=5)]


def get_inputs(T):
    return [torch.randn(T, 48), torch.randn(T, 48)]


def get_init_inputs():
    return []
