"""The kernel a candidate's process compiles and runs before its audit hooks go in (Triton
reads a kernel's source from its file, so it lives in one)."""

from __future__ import annotations

import torch
import triton
import triton.language as tl


@triton.jit
def _double_kernel(x_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(x_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) * 2.0, mask=mask)


def double(x: torch.Tensor) -> None:
    _double_kernel[(triton.cdiv(x.numel(), 64),)](x, x.numel(), BLOCK=64)
