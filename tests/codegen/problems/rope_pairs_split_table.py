"""Rotary embedding in pairs with a (cos, sin) table split on its last dim and viewed to
broadcast (the Llama-4 style of text-generation-inference): `x.reshape(..., -1, 2)` gives a
pair dim whose size the trace names `s // (2 * (s // 2))`, which the squeeze of `unbind`
must still see as 1."""

import torch
from torch import nn


def _broadcast(freqs, target):
    ndim = len(target)
    shape = [d if i == 1 or i == ndim - 1 else 1 for i, d in enumerate(target)]
    return freqs.view(*shape)


class Model(nn.Module):
    def forward(self, query, key, freqs_ci):
        cos, sin = freqs_ci.split(1, dim=-1)
        q = query.float().reshape(*query.shape[:-1], -1, 2)
        k = key.float().reshape(*key.shape[:-1], -1, 2)
        cos = _broadcast(cos, q.shape[:-1])
        sin = _broadcast(sin, q.shape[:-1])
        xq, yq = q.unbind(-1)
        xk, yk = k.unbind(-1)
        q_out = torch.stack([xq * cos - yq * sin, xq * sin + yq * cos], dim=-1).flatten(-2)
        k_out = torch.stack([xk * cos - yk * sin, xk * sin + yk * cos], dim=-1).flatten(-2)
        return q_out.view(*query.shape).type_as(query), k_out.view(*key.shape).type_as(key)


CASES = [dict(T=1), dict(T=5)]


def get_init_inputs():
    return []


def get_inputs(T=1):
    return [
        torch.randn(1, T, 4, 16),
        torch.randn(1, T, 2, 16),
        torch.randn(T, 8, 2),
    ]
