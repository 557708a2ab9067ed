"""A linear recurrence over time, time-major like nn.RNN: h_t = h_{t-1} + x_t (a prefix sum
over dim 0 of [T, B, D] fp32). Returns (all states, last state), the last state a tensor of its
own as nn.RNN's h_n is."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        y = torch.cumsum(x, dim=0)
        return y, y[-1].clone()


CASES = [dict(T=6, B=2, D=64), dict(T=3, B=4, D=32)]


def get_inputs(T, B, D):
    return [torch.randn(T, B, D)]


def get_init_inputs():
    return []
