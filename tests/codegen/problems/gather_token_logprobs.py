"""The log-probability of each row's chosen token: log_softmax over the vocabulary, then a
gather of the token's column (a serving engine's returned logprobs)."""

import torch
import torch.nn as nn

KBOT = dict(atol=1e-4, rtol=1e-4)
CASES = [dict(T=1), dict(T=7)]
V = 1000


class Model(nn.Module):
    def forward(self, logits, ids):
        return torch.log_softmax(logits.float(), dim=-1).gather(-1, ids[:, None]).squeeze(-1)


def get_inputs(T=7):
    return [torch.randn(T, V), torch.randint(0, V, (T,))]


def get_init_inputs():
    return []
