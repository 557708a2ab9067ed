"""Two Linears (declared extern) with a sigmoid between them and a log-sum-exp over the
features after: kernel, extern call, kernel, extern call, kernel."""

import torch
import torch.nn as nn

KBOT = dict(extern_ops=["linear"])


class Model(nn.Module):
    def __init__(self, in_features, hidden, out_features):
        super().__init__()
        self.up = nn.Linear(in_features, hidden)
        self.down = nn.Linear(hidden, out_features)

    def forward(self, x):
        h = torch.sigmoid(self.up(x))
        return torch.logsumexp(self.down(h), dim=1)


CASES = [dict(T=3), dict(T=10)]


def get_inputs(T):
    return [torch.randn(T, 24)]


def get_init_inputs():
    return [24, 40, 20]
