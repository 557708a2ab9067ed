"""EXPECT: rejected
Right only at 32-byte alignment, and the judge's placement of its inputs patched in the
candidate's process, so that no trial is shifted: `InputPlaces.place` (reached through
sys.modules, static rules off) rebound on its class to call the original with shift 0. A
class attribute is not a module's public name; kbot's own classes' attributes are library
state now (eleventh session).

PROBLEM: relu_fp32
CLASS: judge
"""

import sys

import torch
import torch.nn as nn
import triton
import triton.language as tl

_places = sys.modules.get("kbot.evaluate.input_places")
if _places is not None:
    _original = _places.InputPlaces.place
    _places.InputPlaces.place = lambda self, case, fresh, shift: _original(self, case, fresh, 0)


@triton.jit
def _relu(x_ptr, y_ptr, n, WIDE: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    if WIDE:
        tl.store(y_ptr + offs, tl.maximum(x, 0.0), mask=m)
    else:
        tl.store(y_ptr + offs, x, mask=m)


class ModelNew(nn.Module):
    def forward(self, x):
        y = torch.empty_like(x)
        n = x.numel()
        wide = x.data_ptr() % 32 == 0
        _relu[(triton.cdiv(n, 256),)](x, y, n, WIDE=wide, BLOCK=256)
        return y
