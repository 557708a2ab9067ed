"""MoE combine: sum over the top-k dim of [T, topk, H] -> [T, H], fp32 (a middle-dim reduction)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return x.sum(dim=1)


CASES = [dict(T=1), dict(T=5)]


def get_inputs(T):
    return [torch.randn(T, 4, 200)]


def get_init_inputs():
    return []
