"""An op that writes its result into its input (like an in-place rotary): declared with
KBOT mutates_inputs, so the candidate's inputs after the call are compared with the reference's."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x, scale):
        x.mul_(scale)  # in place, returns nothing new
        return x.amax(-1)


CASES = [dict(T=4, dtype="float32"), dict(T=3, dtype="bfloat16")]
KBOT = dict(mutates_inputs=True)


def get_inputs(T, dtype):
    return [
        torch.randn(T, 32, dtype=getattr(torch, dtype)),
        torch.randn(32, dtype=getattr(torch, dtype)),
    ]


def get_init_inputs():
    return []
