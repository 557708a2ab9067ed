"""KernelBench style (no CASES): standardise rows with the unbiased std, then SELU (expm1)."""

import torch
import torch.nn as nn

batch_size = 8
dim = 301


class Model(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        z = (x - x.mean(dim=-1, keepdim=True)) / x.std(dim=-1, keepdim=True)
        return torch.selu(z)


def get_inputs():
    return [torch.randn(batch_size, dim) * 3 + 1]


def get_init_inputs():
    return []
