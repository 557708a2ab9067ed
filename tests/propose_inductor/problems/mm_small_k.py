"""fp32 A @ B with K = 64, `matmul` declared extern: max-autotune answers it with its own Triton
GEMM template (fixtures/mm_small_k__static.*, captured on an H200)."""

import torch
import torch.nn as nn

KBOT = dict(extern_ops=["matmul"])


class Model(nn.Module):
    def forward(self, a, b):
        return torch.matmul(a, b)


CASES = [dict(M=2048, N=2048)]


def get_inputs(M, N):
    return [torch.rand(M, 64), torch.rand(64, N)]


def get_init_inputs():
    return []
