"""Linear 4096 -> 14336 (no bias) + SiLU epilogue, bf16. `linear` is declared extern, so codegen
offers both cuBLAS + a fused epilogue kernel and its own Triton GEMM with the SiLU fused."""

import torch
import torch.nn as nn
import torch.nn.functional as F

CASES = [dict(T=1), dict(T=16), dict(T=64), dict(T=4096), dict(T=16384)]
KBOT = dict(extern_ops=["linear"])


class Model(nn.Module):
    def __init__(self, in_features=4096, out_features=14336):
        super().__init__()
        self.proj = nn.Linear(in_features, out_features, bias=False, dtype=torch.bfloat16)

    def forward(self, x):
        return F.silu(self.proj(x))


def get_inputs(T):
    return [torch.randn(T, 4096, dtype=torch.bfloat16) * 0.1]


def get_init_inputs():
    return [4096, 14336]
