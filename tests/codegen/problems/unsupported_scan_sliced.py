"""A cumsum rotated left by two columns: the scan is read from its third column on, so the
lanes that would hold indices 0 and 1 lie past the others and would be missing from every
prefix. Refused with a reason."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return torch.cat([torch.cumsum(x, dim=1)[:, 2:], x[:, :2]], dim=1)


def get_inputs():
    return [torch.rand(4, 64)]


def get_init_inputs():
    return []
