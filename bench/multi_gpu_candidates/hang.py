"""Launches a kernel, then never returns: the judge's deadline (the evaluator's timeout_s)
kills the candidate's process group."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _copy_kernel(x_ptr, out_ptr, n_elements, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n_elements
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask), mask=mask)


def copy_forever(x):
    out = torch.empty_like(x)
    _copy_kernel[(triton.cdiv(x.numel(), 1024),)](x, out, x.numel(), BLOCK=1024)
    n = 1
    while n > 0:  # never ends
        n += 1
    return out


class ModelNew(nn.Module):
    def __init__(self, *init):
        super().__init__()

    def forward(self, x):
        return copy_forever(x)
