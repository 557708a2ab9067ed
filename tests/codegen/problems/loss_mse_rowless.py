"""A mean squared error over every element (KernelBench L1/94's shape, small): one row that
is the whole op, so the first variant splits it over programs scaled to its size, then a
finishing kernel combines the partials."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, predictions, targets):
        return torch.mean((predictions - targets) ** 2)


CASES = [dict(B=64), dict(B=37)]


def get_inputs(B):
    return [torch.rand(B, 512) * 0.5, torch.rand(B, 512)]


def get_init_inputs():
    return []
