"""Sum over a middle dim with two outer and two inner dims: [A, B, K, H, D].sum(2), fp32."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return x.sum(dim=2)


CASES = [dict(A=1, K=3), dict(A=2, K=5)]


def get_inputs(A, K):
    return [torch.randn(A, 3, K, 6, 24)]


def get_init_inputs():
    return []
