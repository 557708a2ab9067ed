"""RoPE, neox style, as SGLang's forward_native: cos/sin gathered by positions from an fp32
cache, query [T, 32 heads x 128] rotated by halves, bf16."""

import torch
import torch.nn as nn

CASES = [dict(T=1), dict(T=16), dict(T=64), dict(T=4096), dict(T=16384)]
MAX_POSITIONS = 8192


class Model(nn.Module):
    def __init__(self, head_size=128, max_positions=MAX_POSITIONS, base=500000.0):
        super().__init__()
        inv_freq = 1.0 / (base ** (torch.arange(0, head_size, 2, dtype=torch.float32) / head_size))
        freqs = torch.outer(torch.arange(max_positions, dtype=torch.float32), inv_freq)
        self.register_buffer("cos_sin_cache", torch.cat([freqs.cos(), freqs.sin()], dim=-1))
        self.head_size = head_size

    def forward(self, positions, query):
        cos_sin = self.cos_sin_cache.index_select(0, positions)
        cos, sin = cos_sin.chunk(2, dim=-1)
        q = query.view(query.shape[0], -1, self.head_size)
        cos = cos.unsqueeze(-2).to(q.dtype)
        sin = sin.unsqueeze(-2).to(q.dtype)
        q1, q2 = torch.chunk(q, 2, dim=-1)
        out = torch.cat((q1 * cos - q2 * sin, q2 * cos + q1 * sin), dim=-1)
        return out.reshape(query.shape)


def get_inputs(T):
    positions = torch.randint(0, MAX_POSITIONS, (T,))
    return [positions, torch.randn(T, 32 * 128, dtype=torch.bfloat16)]


def get_init_inputs():
    return [128, MAX_POSITIONS]
