"""Softmax over 65536 columns (a long attention row or a wide router): bf16 in and out, the math
in fp32. One row at decode is 128 KB: one program per row leaves 131 of the H200's 132 SMs idle
(a new op of the suite: the wide-row softmax family)."""

import torch
import torch.nn as nn

CASES = [dict(T=1), dict(T=16), dict(T=64), dict(T=4096), dict(T=16384)]


class Model(nn.Module):
    def forward(self, scores):
        return torch.softmax(scores.float(), dim=-1).to(scores.dtype)


def get_inputs(T):
    return [torch.randn(T, 65536, dtype=torch.bfloat16) * 3]


def get_init_inputs():
    return []
