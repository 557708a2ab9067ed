"""Mean cross-entropy over a batch with ignored targets (-100): a log-sum-exp per row, the
target's logit gathered, and the sum divided by the count of targets not ignored (an integer
sum), as `F.cross_entropy` computes it."""

import torch
import torch.nn as nn
import torch.nn.functional as F

KBOT = dict(atol=1e-4, rtol=1e-4)
CASES = [dict(T=3), dict(T=9)]
V = 300


class Model(nn.Module):
    def forward(self, logits, target):
        return F.cross_entropy(logits, target)


def get_inputs(T=9):
    target = torch.randint(0, V, (T,))
    target[::3] = -100  # padding tokens: left out of the mean
    return [torch.randn(T, V), target]


def get_init_inputs():
    return []
