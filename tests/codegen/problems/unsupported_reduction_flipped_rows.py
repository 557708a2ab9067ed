"""A row sum read back at the mirrored row (`s.flip(0)`): the row schedules hold each row's own
sum only, so codegen refuses rather than write a kernel that adds the wrong row's sum."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        s = x.sum(1, keepdim=True)
        return s.flip(0) + x


def get_inputs():
    return [torch.randn(8, 64)]


def get_init_inputs():
    return []
