"""Batched matmul with a scaled tanh epilogue (attention-score style soft-capping), fp32."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, q, k):
        return torch.tanh(torch.bmm(q, k.transpose(1, 2)) * 0.125)


CASES = [dict(S=5), dict(S=18)]


def get_inputs(S):
    return [torch.randn(3, S, 32), torch.randn(3, 24, 32)]


def get_init_inputs():
    return []
