"""kbot.evaluate.interpreter_compat: a scalar argument of one element converts to an index in
any Triton interpreter (Triton 3.6's `int(handle.data)` fails under NumPy 2 for a
one-dimensional array, so `range(0, n_cols, BLOCK)` over a runtime size failed on a CPU)."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from kbot.evaluate import interpreter_compat


def _tensor(data):
    return SimpleNamespace(handle=SimpleNamespace(data=data))


@pytest.mark.parametrize("data", [np.array([7], dtype=np.int32), np.array(7, dtype=np.int64)])
def test_one_element_converts_to_an_index(data):
    assert interpreter_compat._index(_tensor(data)) == 7
    assert range(0, 20, 1)[interpreter_compat._index(_tensor(data))] == 7


def test_applied_once_and_the_patch_is_scoped():
    from triton.runtime import interpreter

    interpreter_compat.apply()
    assert interpreter_compat.apply() is False  # already there: not wrapped twice
    fix = interpreter._patch_lang_tensor
    assert fix.kbot_index_fix

    class Tensor:
        pass

    scope = interpreter._LangPatchScope()
    fix(Tensor, scope)
    assert Tensor.__index__ is interpreter_compat._index
    scope.restore()  # the interpreter's own restore leaves the class as it was
    assert not hasattr(Tensor, "__index__")


MASK_PROBE = r"""
import json, sys
import torch, triton, triton.language as tl
from kbot.evaluate import interpreter_compat

@triton.jit
def _masked(x_ptr, y_ptr, S, H):
    h = tl.arange(0, 16)
    m = (h < H) & (tl.program_id(0) + 3 < S)  # a block mask and'ed with a scalar condition
    tl.store(y_ptr + h, tl.load(x_ptr + h, mask=m, other=0.0), mask=m)

if sys.argv[-1] == "install":
    interpreter_compat.apply()
x, y = torch.randn(16), torch.zeros(16)
try:
    _masked[(1,)](x, y, 8, 10)
    print(json.dumps({"right": bool(torch.equal(y[:10], x[:10]) and not y[10:].any())}))
except Exception as exc:
    print(json.dumps({"error": str(exc)[:200]}))
"""


def test_a_mask_held_in_wider_data_is_taken_as_a_mask(interpreter_probe):
    plain = interpreter_probe(MASK_PROBE, "plain")
    assert plain.get("right") or "mask" in plain.get("error", "")
    assert interpreter_probe(MASK_PROBE, "install") == {"right": True}


RANGE_PROBE = r"""
import json, sys
import torch, triton, triton.language as tl
from kbot.evaluate import interpreter_compat

@triton.jit
def _rows(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    for row in tl.range(tl.program_id(0), n, tl.num_programs(0)):  # a persistent kernel
        offs = row.to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
        tl.store(y_ptr + offs, tl.load(x_ptr + offs) * 2)
    for step in tl.static_range(2):
        tl.static_assert(step < 2)  # static_range stays Python's

if sys.argv[-1] == "install":
    interpreter_compat.apply()
x = torch.randn(5, 16)
y = torch.empty_like(x)
try:
    _rows[(2,)](x, y, 5, BLOCK=16)
    print(json.dumps({"right": bool(torch.equal(y, 2 * x))}))
except Exception as exc:
    print(json.dumps({"error": str(exc)[:200]}))
"""


def test_tl_range_loop_variables_are_tensors(interpreter_probe):
    assert interpreter_probe(RANGE_PROBE, "install") == {"right": True}
