"""A gather from a non-persistent buffer (a rotary cos/sin cache): the candidate's copy of the
buffer is loaded from Model's, like parameters and persistent buffers."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, positions, width):
        super().__init__()
        table = torch.randn(positions, width)
        self.register_buffer("cache", table, persistent=False)

    def forward(self, positions):
        return self.cache[positions]


CASES = [dict(T=7)]


def get_inputs(T):
    return [torch.randint(0, 64, (T,))]


def get_init_inputs():
    return [64, 32]
