"""Rotary-embedding tables for a sequence: cos and sin of positions x inverse frequencies,
[T, 64] fp32 each (as transformers' LlamaRotaryEmbedding computes them every call)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, dim=64, base=10000.0):
        super().__init__()
        inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.float32) / dim))
        self.register_buffer("inv_freq", inv_freq)

    def forward(self, x):
        T = x.shape[0]
        t = torch.arange(T, dtype=torch.float32, device=x.device)
        freqs = torch.outer(t, self.inv_freq)
        emb = torch.cat((freqs, freqs), dim=-1)
        return emb.cos(), emb.sin()


CASES = [dict(T=16), dict(T=7)]


def get_inputs(T):
    return [torch.randn(T, 64)]


def get_init_inputs():
    return []
