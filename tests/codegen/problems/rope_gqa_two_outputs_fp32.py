"""Partial RoPE in fp32: the first 8 of each 16-wide head rotated (neox halves), the rest passed
through, on query [T, 4*16] and key [T, 2*16]; cos/sin gathered by positions."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, head_dim, rotary_dim, max_positions):
        super().__init__()
        inv_freq = 1.0 / (10000.0 ** (torch.arange(0, rotary_dim, 2) / rotary_dim))
        freqs = torch.outer(torch.arange(max_positions, dtype=torch.float32), inv_freq)
        self.register_buffer("cos_sin_cache", torch.cat([freqs.cos(), freqs.sin()], dim=-1))
        self.head_dim = head_dim
        self.rotary_dim = rotary_dim

    def forward(self, positions, query, key):
        cos, sin = self.cos_sin_cache[positions].chunk(2, dim=-1)
        return self._rotate(query, cos, sin), self._rotate(key, cos, sin)

    def _rotate(self, x, cos, sin):
        heads = x.view(x.shape[0], -1, self.head_dim)
        rot, rest = heads[..., : self.rotary_dim], heads[..., self.rotary_dim :]
        x1, x2 = rot.chunk(2, dim=-1)
        cos, sin = cos.unsqueeze(1), sin.unsqueeze(1)
        rotated = torch.cat((x1 * cos - x2 * sin, x2 * cos + x1 * sin), dim=-1)
        return torch.cat((rotated, rest), dim=-1).flatten(1)


CASES = [dict(T=1), dict(T=5)]


def get_inputs(T):
    positions = torch.randint(0, 32, (T,))
    return [positions, torch.randn(T, 4 * 16), torch.randn(T, 2 * 16)]


def get_init_inputs():
    return [16, 8, 32]
