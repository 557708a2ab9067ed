"""A clamp to [-limit, limit] written with the attribute: tracing turns `-self.limit` into a
number, which the kernel must write as the attribute's negation, so that an instance built with
another limit is clamped to its own bounds."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, limit=3.0, scale=0.5):
        super().__init__()
        self.limit = limit
        self.scale = scale

    def forward(self, x):
        return x.clamp(min=-self.limit, max=self.limit) / self.scale


def get_inputs():
    return [torch.randn(4, 96) * 4]


def get_init_inputs():
    return []
