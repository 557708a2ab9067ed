"""RoPE in the rotate-half form many model files write: `x * cos + cat((-x2, x1), -1) * sin`,
bf16 x of [tokens, heads, head_dim] against fp32 cos/sin of [tokens, 1, head_dim] broadcast over
the heads, the sum cast back to x's dtype. The cat feeds more compute: the pairs schedule
computes the whole output a half's columns at a time."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x, cos, sin):
        half = x.size(-1) // 2
        rotated = torch.cat((-x[..., half:], x[..., :half]), dim=-1)
        return (x * cos + rotated * sin).to(x.dtype)


CASES = [dict(T=1), dict(T=5)]


def get_inputs(T):
    return [
        torch.randn(T, 3, 24, dtype=torch.bfloat16),
        torch.randn(T, 1, 24),
        torch.randn(T, 1, 24),
    ]


def get_init_inputs():
    return []
