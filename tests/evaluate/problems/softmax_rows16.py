"""Softmax over 4096 columns of 16 rows, fp32 and bf16: enough rows for every kind of row the
distributions write (kbot.problem.input_rows): rows moved far down and up, constant rows,
zero rows, sorted rows."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.softmax(x.float(), dim=-1).to(x.dtype)


CASES = [dict(R=16, dtype="float32"), dict(R=16, dtype="bfloat16")]


def get_inputs(R, dtype):
    return [torch.randn(R, 4096, dtype=getattr(torch, dtype))]


def get_init_inputs():
    return []
