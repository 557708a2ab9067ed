"""log_softmax over a 50257-entry vocabulary (GPT-2 / GPT-NeoX tokenizers): bf16 logits in,
fp32 log-probs out, as samplers compute it. 50257 is odd: no power of two, no multiple of 16,
so every block has a masked tail (a new op of the suite: the wide-row log_softmax family at a
width the 128k op does not cover)."""

import torch
import torch.nn as nn

CASES = [dict(T=1), dict(T=16), dict(T=64), dict(T=4096), dict(T=16384)]


class Model(nn.Module):
    def forward(self, logits):
        return torch.log_softmax(logits.float(), dim=-1)


def get_inputs(T):
    return [torch.randn(T, 50257, dtype=torch.bfloat16) * 4]


def get_init_inputs():
    return []
