"""fp32 A @ B with a small K and nothing after it, `matmul` declared extern (KernelBench's
small-K and tall-skinny GEMMs have this shape): the Triton GEMM comes first, since the extern
call would leave its kernel a copy of the result."""

import torch
import torch.nn as nn

KBOT = dict(extern_ops=["matmul"])


class Model(nn.Module):
    def forward(self, a, b):
        return torch.matmul(a, b)


CASES = [dict(M=37, N=45), dict(M=64, N=19)]


def get_inputs(M, N):
    return [torch.rand(M, 32), torch.rand(32, N)]


def get_init_inputs():
    return []
