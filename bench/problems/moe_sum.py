"""MoE combine: sum of the top-k experts' outputs, [T, topk=8, 4096] -> [T, 4096], bf16."""

import torch
import torch.nn as nn

CASES = [dict(T=1), dict(T=16), dict(T=64), dict(T=4096), dict(T=16384)]


class Model(nn.Module):
    def forward(self, expert_out):
        return expert_out.sum(dim=1)


def get_inputs(T):
    return [torch.randn(T, 8, 4096, dtype=torch.bfloat16)]


def get_init_inputs():
    return []
