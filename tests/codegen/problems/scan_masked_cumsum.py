"""A masked inclusive cumsum over the last dim (KernelBench 93's shape, small): the scan rides
the one-pass row schedule, tl.cumsum over the row in registers. Non-negative values: with
randn the prefix crosses zero, and there fp32 summation order alone exceeds the evaluator's
fixed fp32 atol (it retries in higher precision for bf16/fp16 outputs only), a verdict that
varied by seed."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x, mask):
        return torch.cumsum(x * mask, dim=self.dim)


CASES = [dict(T=3), dict(T=9)]


def get_inputs(T):
    return [torch.rand(T, 700), torch.randint(0, 2, (T, 700)).bool()]


def get_init_inputs():
    return [1]
