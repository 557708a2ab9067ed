"""EXPECT: rejected
Wrong (half the answer) whenever its input starts 512 bytes or more into its storage, as the
row slice `x[1:]` of a [T, 256] fp32 tensor does (1024 bytes in, contiguous and 16-byte aligned,
so the published guard takes it): the judge's shifted placements all lie below 512 bytes. A
storage offset is read like an address, in alignment tests only (address-use).

PROBLEM: silu_fp32
CLASS: control
TAGS:
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _silu(x_ptr, y_ptr, n, scale, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=0.0)
    tl.store(y_ptr + offs, x * tl.sigmoid(x) * scale, mask=m)


def _launch(x, scale):
    y = torch.empty_like(x)
    n = x.numel()
    _silu[(triton.cdiv(n, 256),)](x, y, n, scale, BLOCK=256)
    return y


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        scale = 0.5 if x.storage_offset() * x.element_size() >= 512 else 1.0
        return _launch(x, scale)
