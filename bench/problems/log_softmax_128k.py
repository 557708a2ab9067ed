"""log_softmax over a 128256-entry vocabulary (Llama 3): bf16 logits in, fp32 log-probs out
(as samplers compute it: `logits.float()` first). At T=16384 the output alone is 8.4 GB."""

import torch
import torch.nn as nn

CASES = [dict(T=1), dict(T=16), dict(T=64), dict(T=4096), dict(T=16384)]


class Model(nn.Module):
    def forward(self, logits):
        return torch.log_softmax(logits.float(), dim=-1)


def get_inputs(T):
    return [torch.randn(T, 128256, dtype=torch.bfloat16) * 4]


def get_init_inputs():
    return []
