"""Two matmuls with a ReLU between them and no extern op declared: codegen has no Triton
schedule for a chain of GEMMs, and says which declaration would give one."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x, w1, w2):
        return torch.relu(x @ w1) @ w2


def get_inputs():
    return [torch.randn(8, 16), torch.randn(16, 12), torch.randn(12, 4)]


def get_init_inputs():
    return []
