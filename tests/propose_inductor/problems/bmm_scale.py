"""fp32 batched matmul times a constant: max-autotune fuses the scale into its bmm template
(fixtures/bmm_scale__static.*, captured on an H200)."""

import torch
import torch.nn as nn

KBOT = dict(extern_ops=["bmm"])


class Model(nn.Module):
    def forward(self, a, b):
        return torch.bmm(a, b) * 0.5


CASES = [dict(B=8)]


def get_inputs(B):
    return [torch.randn(B, 256, 128), torch.randn(B, 128, 320)]


def get_init_inputs():
    return []
