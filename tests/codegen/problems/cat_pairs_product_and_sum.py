"""Not a rotation: two halves from the same two inputs, `cat((a * b, a + b), -1)`, with `b` one
row broadcast over the tokens; bf16 math, the result widened to fp32."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, a, b):
        return torch.cat((a * b, a + b), dim=-1).float()


CASES = [dict(T=1), dict(T=7)]


def get_inputs(T):
    return [torch.randn(T, 40, dtype=torch.bfloat16), torch.randn(40, dtype=torch.bfloat16)]


def get_init_inputs():
    return []
