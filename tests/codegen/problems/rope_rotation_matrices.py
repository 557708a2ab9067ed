"""RoPE as 2 x 2 rotation matrices: each (even, odd) pair of q and k, [batch, seq, heads,
head_dim], times a per-position rotation from an fp32 table [seq, head_dim / 2, 2, 2], summed
over the pair's axis of 2. q and k have different head counts (grouped-query attention), so the
two sums reduce tensors of different shapes."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, xq, xk, rotations):
        q = xq.float().unflatten(-1, (-1, 1, 2))  # [B, S, H, D/2, 1, 2]
        k = xk.float().unflatten(-1, (-1, 1, 2))
        table = rotations.view(1, rotations.shape[0], 1, -1, 2, 2)  # [1, S, 1, D/2, 2, 2]
        q_out = (q * table).sum(-1).flatten(3)
        k_out = (k * table).sum(-1).flatten(3)
        return q_out.to(xq.dtype), k_out.to(xk.dtype)


CASES = [dict(S=1), dict(S=5)]


def get_inputs(S):
    angles = torch.rand(S, 8) * 6.0
    cos, sin = angles.cos(), angles.sin()
    rotations = torch.stack([torch.stack([cos, -sin], -1), torch.stack([sin, cos], -1)], -2)
    return [
        torch.randn(1, S, 4, 16, dtype=torch.bfloat16),
        torch.randn(1, S, 2, 16, dtype=torch.bfloat16),
        rotations,
    ]


def get_init_inputs():
    return []
