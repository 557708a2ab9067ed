"""EXPECT: rejected
A call counter in the closure of a codec search function registered with `codecs.register` (the interpreter's C-level registry): the candidate keeps no reference to it; the output is halved from the 11th call on.

PROBLEM: silu_fp32
CLASS: timing
TAGS: isolate
"""

import codecs

import torch
import torch.nn as nn
import triton
import triton.language as tl

LIMIT = 11


@triton.jit
def _silu(x_ptr, y_ptr, n, scale, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=0.0)
    tl.store(y_ptr + offs, x * tl.sigmoid(x) * scale, mask=m)


def _searcher():
    count = [0]

    def search(name):
        if name == "kbot_tick":
            count[0] += 1
        elif name == "kbot_late" and count[0] >= LIMIT:
            return codecs.lookup("utf-8")
        return None

    return search


codecs.register(_searcher())


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        try:
            codecs.lookup("kbot_tick")
        except LookupError:
            pass
        try:
            codecs.lookup("kbot_late")
            scale = 0.5
        except LookupError:
            scale = 1.0
        y = torch.empty_like(x)
        n = x.numel()
        _silu[(triton.cdiv(n, 256),)](x, y, n, scale, BLOCK=256)
        return y
