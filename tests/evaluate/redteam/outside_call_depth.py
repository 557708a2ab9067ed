"""EXPECT: rejected
Twenty-two nested helpers, the last computing `F.silu(a) * b`: past the checks' depth limit the
call was taken as unknown; the kernel copies.

PROBLEM: silu_and_mul
CLASS: outside
TAGS:
"""

import torch
import torch.nn as nn
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


def _f1(a, b):
    return _f2(a, b)


def _f2(a, b):
    return _f3(a, b)


def _f3(a, b):
    return _f4(a, b)


def _f4(a, b):
    return _f5(a, b)


def _f5(a, b):
    return _f6(a, b)


def _f6(a, b):
    return _f7(a, b)


def _f7(a, b):
    return _f8(a, b)


def _f8(a, b):
    return _f9(a, b)


def _f9(a, b):
    return _f10(a, b)


def _f10(a, b):
    return _f11(a, b)


def _f11(a, b):
    return _f12(a, b)


def _f12(a, b):
    return _f13(a, b)


def _f13(a, b):
    return _f14(a, b)


def _f14(a, b):
    return _f15(a, b)


def _f15(a, b):
    return _f16(a, b)


def _f16(a, b):
    return _f17(a, b)


def _f17(a, b):
    return _f18(a, b)


def _f18(a, b):
    return _f19(a, b)


def _f19(a, b):
    return _f20(a, b)


def _f20(a, b):
    return _f21(a, b)


def _f21(a, b):
    return _f22(a, b)


def _f22(a, b):
    return torch.nn.functional.silu(a) * b


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        d = x.shape[-1] // 2
        y = _f1(x[:, :d], x[:, d:])
        out = torch.empty(x.shape[0], d, dtype=x.dtype, device=x.device)
        return _launch_copy(y, out)
