"""Max pooling over a computed, mostly negative value with padding (a padded place is -inf,
never 0, which would beat every negative value), stride 2, fp32."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.pool = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)

    def forward(self, x):
        return self.pool(x - 4.0) * 0.5


CASES = [dict(N=1), dict(N=2)]


def get_inputs(N):
    return [torch.randn(N, 3, 9, 6)]


def get_init_inputs():
    return []
