"""A launch's grid, held to plain ints before Triton reads it inside the lifted launch
(kbot.evaluate.launch_hooks): a grid given as a value, or what a grid function returns."""

from __future__ import annotations

import functools

import torch

from kbot.evaluate.compute_guard import ComputeGuard


def plain_grid(grid: object) -> bool:
    """A grid Triton can read without running code of the candidate's: a tuple, list or
    torch.Size of ints (Triton takes its `len` and adds to it inside the lifted launch)."""
    return type(grid) in (tuple, list, torch.Size) and all(type(n) is int for n in grid)


def checked_grid(grid):
    """A grid function whose result is held to `plain_grid` before Triton reads it."""

    @functools.wraps(grid)
    def checked(*args, **kwargs):
        result = _interpreter_ints(grid(*args, **kwargs))
        if not plain_grid(result):
            wrong = f"the launch grid function returned a {type(result).__name__}"
            guard = _current_guard()
            if guard is not None:
                guard.violations.append(wrong)
            raise RuntimeError(f"kbot: {wrong}, not a tuple of ints")
        return result

    return checked


def _interpreter_ints(result: object) -> object:
    """Triton's interpreter hands a grid function each runtime argument as a one-element
    `tl.tensor` (`meta["n_elements"]`), so `triton.cdiv(meta["n"], meta["BLOCK"])` is one too:
    such an integer, read from its numpy value by class (no method of the candidate's runs), is
    the int a GPU launch would have had. Anything else is left for `plain_grid` to judge."""
    if type(result) is not tuple or all(type(n) is int for n in tuple.__iter__(result)):
        return result  # a GPU launch's grid, or not one to mend
    import numpy as np
    import triton.language as tl

    try:
        from triton.runtime.interpreter import TensorHandle
    except ImportError:
        return result
    ints = []
    for n in tuple.__iter__(result):
        if type(n) is tl.tensor:
            handle = object.__getattribute__(n, "handle")
            data = object.__getattribute__(handle, "data") if type(handle) is TensorHandle else None
            if type(data) is not np.ndarray or data.size != 1 or data.dtype.kind not in "iu":
                return result
            n = int(data.reshape(-1)[0])
        ints.append(n)
    return tuple(ints)


def _current_guard() -> ComputeGuard | None:
    """The guard of the forward call in progress, lifted or not."""
    from kbot.evaluate.compute_guard import _ACTIVE

    return _ACTIVE[-1] if _ACTIVE else None
