"""Softmax over 64k columns: each output is about 1.5e-5, so an all-zeros output is close in
absolute terms; only a relative check catches it."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.softmax(x.float(), dim=-1).to(x.dtype)


CASES = [dict(R=2, dtype="float32"), dict(R=2, dtype="bfloat16")]


def get_inputs(R, dtype):
    return [torch.randn(R, 65536, dtype=getattr(torch, dtype))]


def get_init_inputs():
    return []
