"""EXPECT: rejected
RMSNorm that takes the row length for its mean from `x.stride(0)` (a common slip: one number
passed for both): equal to the hidden size for every input the judge builds. At decode (T = 1),
`qkv[:, :H]` of a fused projection is contiguous by torch's rules (a size-1 dim's stride does
not count) and passes the published guard, but its stride(0) is 3H: the mean is taken over q,
k and v together.

PROBLEM: rmsnorm_decode
CLASS: control
TAGS:
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _rms(x_ptr, w_ptr, y_ptr, N, stride, eps, BLOCK: tl.constexpr, WIDE: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    m = cols < N
    x = tl.load(x_ptr + row * stride + cols, mask=m, other=0.0)
    acc = tl.zeros([WIDE], dtype=tl.float32)
    for start in range(0, stride, WIDE):
        c = start + tl.arange(0, WIDE)
        v = tl.load(x_ptr + row * stride + c, mask=c < stride, other=0.0)
        acc += v * v
    ms = tl.sum(acc, axis=0) / stride
    w = tl.load(w_ptr + cols, mask=m, other=0.0)
    tl.store(y_ptr + row * N + cols, x * (1.0 / tl.sqrt(ms + eps)) * w, mask=m)


class ModelNew(nn.Module):
    def __init__(self, hidden, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden))
        self.eps = eps

    def forward(self, x):
        T, N = x.shape
        y = torch.empty((T, N), dtype=x.dtype, device=x.device)
        block = triton.next_power_of_2(N)
        _rms[(T,)](x, self.weight, y, N, x.stride(0), self.eps, BLOCK=block, WIDE=block)
        return y
