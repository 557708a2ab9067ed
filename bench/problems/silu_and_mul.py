"""SiluAndMul: silu(x[:, :d]) * x[:, d:], d = 14336 (Llama-3-8B MLP), bf16."""

import torch
import torch.nn as nn
import torch.nn.functional as F

CASES = [dict(T=1), dict(T=16), dict(T=64), dict(T=4096), dict(T=16384)]


class Model(nn.Module):
    def forward(self, x):
        d = x.shape[-1] // 2
        return F.silu(x[..., :d]) * x[..., d:]


def get_inputs(T):
    return [torch.randn(T, 2 * 14336, dtype=torch.bfloat16)]


def get_init_inputs():
    return []
