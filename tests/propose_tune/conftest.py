"""A parent candidate with every kind of tunable the `tune` proposer knows."""

import pytest

from kbot.propose.base import Parent, source_hash

PARENT = '''"""Row softmax, one program per ROWS_PER_PROGRAM rows."""

import torch
import torch.nn as nn
import triton
import triton.language as tl

BLOCK_SIZE = 1024  # covers 1000 columns in one pass (measured: faster than 512 + loop)
ROWS_PER_PROGRAM = 2


@triton.jit
def _scale_kernel(x_ptr, out_ptr, n, BLOCK_SIZE: tl.constexpr, LOOP: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask, eviction_policy="evict_first").to(tl.float32)  # é
    tl.store(out_ptr + offsets, (x * 2.0).to(out_ptr.dtype.element_ty), mask=mask)


def scale(x):
    out = torch.empty_like(x)
    n = x.numel()
    grid = (triton.cdiv(n, BLOCK_SIZE),)
    _scale_kernel[grid](x, out, n, BLOCK_SIZE=BLOCK_SIZE, LOOP=False, num_warps=4, num_stages=2)
    return out


class ModelNew(nn.Module):
    def forward(self, x):
        return scale(x)
'''


@pytest.fixture
def parent():
    return Parent(PARENT, source_hash(PARENT), "codegen", True, None)
