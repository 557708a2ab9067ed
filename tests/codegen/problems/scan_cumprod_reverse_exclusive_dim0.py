"""Down dim 0 (the row's columns are strided): a reverse cumprod, and an exclusive cumprod whose
head is ones (the product's neutral value), both as outputs of one scan tile."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        reverse = torch.cumprod(x.flip(0), dim=0).flip(0)
        head = torch.ones_like(x[:1])
        exclusive = torch.cat([head, torch.cumprod(x[:-1], dim=0)], dim=0)
        return reverse, exclusive


def get_inputs():
    return [1.0 + 0.01 * torch.randn(37, 20)]


def get_init_inputs():
    return []
