"""log_softmax over a 40000-entry vocabulary: bf16 logits in, fp32 log-probabilities out."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, logits):
        return torch.log_softmax(logits.float(), dim=-1)


CASES = [dict(T=1), dict(T=2)]


def get_inputs(T):
    return [torch.randn(T, 40000, dtype=torch.bfloat16) * 3]


def get_init_inputs():
    return []
