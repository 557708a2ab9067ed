"""SiluAndMul with chunk: silu(a) * b where a, b = x.chunk(2, -1), bf16."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def forward(self, x):
        a, b = x.chunk(2, dim=-1)
        return F.silu(a) * b


CASES = [dict(T=1), dict(T=6)]


def get_inputs(T):
    return [torch.randn(T, 2 * 176, dtype=torch.bfloat16)]


def get_init_inputs():
    return []
