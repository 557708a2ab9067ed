"""Top-k sum of a non-contiguous input ([T, H, k] storage seen as [T, k, H]), bf16: strides are
kernel arguments, so the tiled kernel reads the transposed view directly."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return x.sum(dim=1)


CASES = [dict(T=1), dict(T=3)]


def get_inputs(T):
    return [torch.randn(T, 128, 4, dtype=torch.bfloat16).transpose(1, 2)]


def get_init_inputs():
    return []
