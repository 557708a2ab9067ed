"""Static per-tensor fp8 quantization: a bf16 activation divided by a calibrated scale, clamped
to e4m3's range and cast."""

import torch
import torch.nn as nn

CASES = [dict(T=1), dict(T=7)]


class Model(nn.Module):
    def forward(self, x, scale):
        info = torch.finfo(torch.float8_e4m3fn)
        return (x.float() / scale).clamp(min=info.min, max=info.max).to(torch.float8_e4m3fn)


def get_inputs(T=7):
    return [torch.randn(T, 256, dtype=torch.bfloat16) * 40, torch.rand(1) * 0.1 + 0.05]


def get_init_inputs():
    return []
