"""KernelBench style: the upper triangle of a product of upper-triangular matrices (an extern
matmul with a triu epilogue, or the GEMM template)."""

import torch
import torch.nn as nn

N = 40


class Model(nn.Module):
    def forward(self, A, B):
        return torch.triu(torch.matmul(A, B))


KBOT = dict(extern_ops=["matmul"])


def get_inputs():
    return [torch.triu(torch.rand(N, N)), torch.triu(torch.rand(N, N))]


def get_init_inputs():
    return []
