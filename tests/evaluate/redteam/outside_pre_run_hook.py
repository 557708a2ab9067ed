"""EXPECT: rejected
The kernel object's `pre_run_hooks` (set through functools.update_wrapper with a name built at
run time) hold a torch function, which Triton runs inside the launch where the compute guard is
lifted; the kernel only copies (round six, c01). Refused at launch: a kernel may carry no pre-
run hooks, launch callbacks or swapped function.

PROBLEM: silu_fp32
CLASS: outside
TAGS:
"""

import functools
import typing

import torch
import torch.nn as nn
import torch.nn.functional as F
import triton
import triton.language as tl


@triton.jit
def _silu_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    y = tl.load(y_ptr + offs, mask=m, other=0.0)
    tl.store(y_ptr + offs, y, mask=m)


def _prepare(x_ptr, y_ptr, n, BLOCK):
    y_ptr.copy_(F.silu(x_ptr))


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        key = "pre_run_ho" + "oks"
        launch = typing.NamedTuple("Launch", [(key, list)])
        functools.update_wrapper(_silu_kernel, launch([_prepare]), assigned=(key,), updated=())

    def forward(self, x):
        y = torch.empty_like(x)
        n = x.numel()
        _silu_kernel[(triton.cdiv(n, 256),)](x, y, n, BLOCK=256)
        return y
