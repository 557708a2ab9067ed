"""One-number tensors made on the input's device in forward (`torch.tensor(0.0,
device=x.device)`), a float and an integer one, feeding a minimum, GELU and a product."""

import torch
import torch.nn as nn

KBOT = dict(atol=1e-4, rtol=1e-4)
CASES = [dict(T=1), dict(T=5)]


class Model(nn.Module):
    def forward(self, x):
        x = torch.min(x, torch.tensor(0.0, device=x.device))
        x = torch.nn.functional.gelu(x)
        return x * torch.tensor(3, device=x.device)


def get_inputs(T=5):
    return [torch.randn(T, 40)]


def get_init_inputs():
    return []
