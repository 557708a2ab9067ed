"""RoPE (neox halves) in bf16 as serving code writes it: every product and difference rounds to
bf16, so q1*cos - q2*sin cancels after two roundings. A kernel that computes in fp32 and rounds
once is closer to the exact value than this reference is."""

import torch
from torch import nn

CASES = [dict(T=4), dict(T=16)]
HEAD = 32
MAX_POSITIONS = 64


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        inv_freq = 1.0 / (10000.0 ** (torch.arange(0, HEAD, 2, dtype=torch.float32) / HEAD))
        freqs = torch.outer(torch.arange(MAX_POSITIONS, dtype=torch.float32), inv_freq)
        self.register_buffer("cos_sin_cache", torch.cat([freqs.cos(), freqs.sin()], dim=-1))

    def forward(self, positions, query):
        cos, sin = self.cos_sin_cache.index_select(0, positions).chunk(2, dim=-1)
        q = query.view(query.shape[0], -1, HEAD)
        cos = cos.unsqueeze(-2).to(q.dtype)
        sin = sin.unsqueeze(-2).to(q.dtype)
        q1, q2 = torch.chunk(q, 2, dim=-1)
        return torch.cat((q1 * cos - q2 * sin, q2 * cos + q1 * sin), dim=-1).reshape(query.shape)


def get_inputs(T=4):
    return [torch.randint(0, MAX_POSITIONS, (T,)), torch.randn(T, 4 * HEAD, dtype=torch.bfloat16)]


def get_init_inputs():
    return []
