"""Neox-style rotary embedding with a positions gather from a cos/sin cache."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, head_dim, max_positions, base=10000.0):
        super().__init__()
        inv_freq = 1.0 / (base ** (torch.arange(0, head_dim, 2).float() / head_dim))
        freqs = torch.outer(torch.arange(max_positions).float(), inv_freq)
        self.register_buffer("cos_sin_cache", torch.cat([freqs.cos(), freqs.sin()], dim=-1))
        self.head_dim = head_dim

    def forward(self, positions, q):
        cos, sin = self.cos_sin_cache[positions].chunk(2, dim=-1)
        cos, sin = cos[:, None, :], sin[:, None, :]
        half = self.head_dim // 2
        q1, q2 = q[..., :half].float(), q[..., half:].float()
        out = torch.cat([q1 * cos - q2 * sin, q2 * cos + q1 * sin], dim=-1)
        return out.to(q.dtype)


CASES = [dict(T=3, H=2, dtype="float32"), dict(T=4, H=3, dtype="bfloat16")]


def get_inputs(T, H, dtype):
    return [torch.randint(0, 64, (T,)), torch.randn(T, H, 16, dtype=getattr(torch, dtype))]


def get_init_inputs():
    return [16, 64]
