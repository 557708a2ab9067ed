"""Mean over the sequence dim (B, S, H) -> (B, H), accumulated in fp32, returned in the input dtype."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return x.float().mean(dim=1).to(x.dtype)


CASES = [dict(S=37, H=100, dtype="float32"), dict(S=50, H=64, dtype="bfloat16")]


def get_inputs(S, H, dtype):
    return [torch.randn(3, S, H, dtype=getattr(torch, dtype))]


def get_init_inputs():
    return []
