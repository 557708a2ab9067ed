"""RoPE (neox halves) on query and key of different widths (grouped-query attention: 4 query
heads, 2 key heads of 16), cos/sin gathered by positions; returns both, bf16."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, head_dim, max_positions, base=10000.0):
        super().__init__()
        inv_freq = 1.0 / (base ** (torch.arange(0, head_dim, 2, dtype=torch.float32) / head_dim))
        freqs = torch.outer(torch.arange(max_positions, dtype=torch.float32), inv_freq)
        self.register_buffer("cos_sin_cache", torch.cat([freqs.cos(), freqs.sin()], dim=-1))
        self.head_dim = head_dim

    def forward(self, positions, query, key):
        cos, sin = self.cos_sin_cache.index_select(0, positions).chunk(2, dim=-1)
        return self._rotate(query, cos, sin), self._rotate(key, cos, sin)

    def _rotate(self, x, cos, sin):
        heads = x.view(x.shape[0], -1, self.head_dim).float()
        x1, x2 = heads.chunk(2, dim=-1)
        cos, sin = cos.unsqueeze(1), sin.unsqueeze(1)
        out = torch.cat((x1 * cos - x2 * sin, x2 * cos + x1 * sin), dim=-1).to(x.dtype)
        return out.reshape(x.shape[0], -1)


CASES = [dict(T=1), dict(T=5)]


def get_inputs(T):
    positions = torch.randint(0, 64, (T,))
    query = torch.randn(T, 4 * 16, dtype=torch.bfloat16)
    key = torch.randn(T, 2 * 16, dtype=torch.bfloat16)
    return [positions, query, key]


def get_init_inputs():
    return [16, 64]
