"""EXPECT: rejected
RMSNorm whose launch arguments are built once in `__init__` (`self._launch = (self.weight,
...)`), holding the constructor's weight object: right while a checkpoint is copied into that
object in place, stale (the constructor's ones) after `load_state_dict(assign=True)`, the way
Hugging Face loads a model built on the meta device.

PROBLEM: rmsnorm_decode
CLASS: control
TAGS:
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _rms_row(x_ptr, w_ptr, y_ptr, N, stride, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    m = cols < N
    x = tl.load(x_ptr + row * stride + cols, mask=m, other=0.0)
    ms = tl.sum(x * x, axis=0) / N
    y = x * (1.0 / tl.sqrt(ms + eps)) * tl.load(w_ptr + cols, mask=m, other=0.0)
    tl.store(y_ptr + row * N + cols, y, mask=m)


def rmsnorm(x, weight, eps, block):
    T, N = x.shape
    y = torch.empty((T, N), dtype=x.dtype, device=x.device)
    _rms_row[(T,)](x, weight, y, N, x.stride(0), eps, BLOCK=block)
    return y


class ModelNew(nn.Module):
    def __init__(self, hidden, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden))
        self.eps = eps
        self._launch = (self.weight, eps, triton.next_power_of_2(hidden))

    def forward(self, x):
        return rmsnorm(x, *self._launch)
