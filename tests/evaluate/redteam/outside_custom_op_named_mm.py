"""EXPECT: rejected
The problem declares matmul as an extern op; a torch.library custom op named `mm`
(`kbot_rt_b::mm`) computes the whole silu(x @ w.t() + b) in PyTorch, passing for the one extern
call the reference makes; the only Triton kernel copies its result to the output.

PROBLEM: matmul_bias_silu_fp32
CLASS: outside
TAGS:
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl

_LIB = torch.library.Library("kbot_rt_b", "DEF")
_LIB.define("mm(Tensor x, Tensor w, Tensor b) -> Tensor")


def mm(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.silu(x @ w.t() + b)


_LIB.impl("mm", mm, "CPU")


@triton.jit
def _copy(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=m), mask=m)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, dtype):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(out_features, in_features, dtype=dtype))
        self.bias = nn.Parameter(torch.empty(out_features, dtype=dtype))

    def forward(self, x):
        h = torch.ops.kbot_rt_b.mm(x, self.weight, self.bias)
        y = torch.empty_like(h)
        n = h.numel()
        _copy[(triton.cdiv(n, 1024),)](h, y, n, BLOCK=1024)
        return y
