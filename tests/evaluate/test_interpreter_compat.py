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
