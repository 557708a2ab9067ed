"""Per-token-group fp8 quantization (DeepSeek-style blockwise fp8: one scale per 128 columns of
a row): each group's absolute maximum sets its scale; the kernel returns the fp8 rows and the
fp32 scales, one per group."""

import torch
import torch.nn as nn

CASES = [dict(T=1), dict(T=4)]
HIDDEN = 512
GROUP = 128
FP8_MAX = 448.0


class Model(nn.Module):
    def forward(self, x):
        tokens = x.shape[0]
        groups = x.float().view(tokens, HIDDEN // GROUP, GROUP)
        amax = groups.abs().amax(dim=-1, keepdim=True).clamp(min=1e-10)
        scale = amax / FP8_MAX
        q = (groups / scale).clamp(-FP8_MAX, FP8_MAX).to(torch.float8_e4m3fn)
        return q.view(tokens, HIDDEN), scale.squeeze(-1)


def get_inputs(T=4):
    return [torch.randn(T, HIDDEN, dtype=torch.bfloat16)]


def get_init_inputs():
    return []
