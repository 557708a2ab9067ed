"""RoPE, neox style: cos/sin gathered by positions from a cache, halves rotated, bf16 q."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, head_dim, max_positions, base=10000.0):
        super().__init__()
        inv_freq = 1.0 / (base ** (torch.arange(0, head_dim, 2, dtype=torch.float32) / head_dim))
        freqs = torch.outer(torch.arange(max_positions, dtype=torch.float32), inv_freq)
        self.register_buffer("cos_sin_cache", torch.cat([freqs.cos(), freqs.sin()], dim=-1))
        self.head_dim = head_dim

    def forward(self, positions, q):
        cos_sin = self.cos_sin_cache[positions]
        cos, sin = cos_sin.chunk(2, dim=-1)
        q = q.view(q.shape[0], -1, self.head_dim)
        cos = cos.unsqueeze(-2).to(q.dtype)
        sin = sin.unsqueeze(-2).to(q.dtype)
        q1, q2 = q.chunk(2, dim=-1)
        out = torch.cat([q1 * cos - q2 * sin, q2 * cos + q1 * sin], dim=-1)
        return out.flatten(-2)


CASES = [dict(T=1), dict(T=6)]


def get_inputs(T):
    positions = torch.randint(0, 64, (T,))
    return [positions, torch.randn(T, 4 * 32, dtype=torch.bfloat16)]


def get_init_inputs():
    return [32, 64]
