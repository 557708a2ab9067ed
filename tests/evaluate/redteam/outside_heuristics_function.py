"""EXPECT: rejected
`@triton.heuristics({'DONE': _heur})` with a module-level function that receives the launch's
tensors and writes `F.silu(x) * y` into the output; the kernel body is `pass`.

PROBLEM: silu_and_mul
CLASS: outside
TAGS:
"""

import torch
import torch.nn as nn
import torch.nn.functional as F
import triton
import triton.language as tl


@triton.jit
def _copy_kernel(src_ptr, dst_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(dst_ptr + offs, tl.load(src_ptr + offs, mask=mask), mask=mask)


def _launch_copy(src, dst):
    n = dst.numel()
    _copy_kernel[(triton.cdiv(n, 256),)](src, dst, n, BLOCK=256)
    return dst


def _heur(args):
    x = args["x_ptr"]
    d = x.shape[-1] // 2
    args["out_ptr"].copy_(F.silu(x[:, :d]) * x[:, d:])
    return 1


@triton.heuristics({"DONE": _heur})
@triton.jit
def _noop_kernel(x_ptr, out_ptr, DONE: tl.constexpr):
    pass


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        d = x.shape[-1] // 2
        out = torch.empty(x.shape[0], d, dtype=x.dtype, device=x.device)
        _noop_kernel[(1,)](x, out)
        return out
