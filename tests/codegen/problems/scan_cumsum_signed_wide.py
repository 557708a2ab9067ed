"""A prefix sum of signed values over 20000 columns: the prefix crosses zero, where fp32
summation order alone moves the small results past the fixed fp32 atol. The evaluator then
retries against the reference run in float64 (atol taken per the output's RMS); before it did,
every correct kernel here was rejected on some seed."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return torch.cumsum(x, dim=1)


def get_inputs():
    return [torch.randn(2, 20000)]


def get_init_inputs():
    return []
