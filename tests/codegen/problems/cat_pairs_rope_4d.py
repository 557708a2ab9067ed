"""RoPE with neox halves on a [batch, seq, heads * head_dim] activation: separate fp32 cos and
sin caches gathered by [batch, seq] positions, broadcast over the heads, bf16. A head_dim of 24
makes the half (12) narrower than any power-of-two block."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, head_dim, max_positions, base=10000.0):
        super().__init__()
        exponents = torch.arange(0, head_dim, 2, dtype=torch.float32) / head_dim
        angles = torch.arange(max_positions, dtype=torch.float32)[:, None] / base**exponents
        self.register_buffer("cos_cache", angles.cos())
        self.register_buffer("sin_cache", angles.sin())
        self.head_dim = head_dim

    def forward(self, positions, x):
        batch, seq, _ = x.shape
        heads = x.view(batch, seq, -1, self.head_dim)
        cos = self.cos_cache[positions].unsqueeze(2).to(x.dtype)
        sin = self.sin_cache[positions].unsqueeze(2).to(x.dtype)
        half = self.head_dim // 2
        first, second = heads[..., :half], heads[..., half:]
        rotated = torch.cat([first * cos - second * sin, first * sin + second * cos], dim=-1)
        return rotated.view(batch, seq, -1)


CASES = [dict(B=1, S=1), dict(B=2, S=5)]


def get_inputs(B, S):
    return [torch.randint(0, 32, (B, S)), torch.randn(B, S, 3 * 24, dtype=torch.bfloat16)]


def get_init_inputs():
    return [24, 32]
