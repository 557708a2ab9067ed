"""QuickGELU whose reference is a @torch.compile function, as serving engines write them.
Compiling wraps torch.manual_seed and nn.Module.__init__: trusted changes, not a candidate's."""

import torch
import torch.nn as nn


@torch.compile(backend="eager")
def quick_gelu(x):
    return x * torch.sigmoid(1.702 * x)


class Model(nn.Module):
    def forward(self, x):
        return quick_gelu(x)


CASES = [dict(T=3, H=40, dtype="float32")]


def get_inputs(T, H, dtype):
    return [torch.randn(T, H, dtype=getattr(torch, dtype))]


def get_init_inputs():
    return []
