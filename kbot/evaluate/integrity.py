"""Detecting a candidate that changed the worker's torch, triton or timers at run time.

The static rules forbid assignments to module attributes; this is the dynamic backstop for
anything they miss: a fingerprint of the public callables the evaluator itself relies on,
taken when the worker starts and compared after every job. A change rejects the candidate
and retires the worker (its state can no longer be trusted).
"""

from __future__ import annotations

import builtins
import math
import time


def _namespaces() -> dict[str, object]:
    import torch
    import torch.nn.functional as F
    import triton
    import triton.language as tl

    spaces: dict[str, object] = {
        "torch": torch,
        "torch.Tensor": torch.Tensor,
        "torch._C.TensorBase": torch.Tensor.__mro__[1],
        "torch.nn.Module": torch.nn.Module,
        "torch.nn.functional": F,
        "torch.cuda": torch.cuda,
        "torch.testing": torch.testing,
        "triton": triton,
        "triton.language": tl,
        "time": time,
        "math": math,
        "builtins": builtins,
    }
    if hasattr(torch.cuda, "Event"):
        spaces["torch.cuda.Event"] = torch.cuda.Event
        spaces["torch.cuda.CUDAGraph"] = torch.cuda.CUDAGraph
    return spaces


def fingerprint() -> dict[str, int]:
    """id() of every public attribute of the namespaces the evaluator uses."""
    prints: dict[str, int] = {}
    for prefix, space in _namespaces().items():
        if isinstance(space, type):
            # Raw class dict entries: getattr would build a fresh bound method each time.
            for name, value in vars(space).items():
                prints[f"{prefix}.{name}"] = id(value)
            continue
        for name in dir(space):
            if name.startswith("__"):
                continue
            try:
                prints[f"{prefix}.{name}"] = id(getattr(space, name))
            except Exception:  # lazy attributes that fail to load are not ours to judge
                continue
    return prints


def changed(before: dict[str, int]) -> list[str]:
    """Names whose object changed, plus attributes added to the classes (a new `Tensor.sum`
    shadows the C one). New module attributes are normal: submodules load lazily."""
    after = fingerprint()
    classes = tuple(f"{p}." for p, space in _namespaces().items() if isinstance(space, type))
    altered = [name for name, ident in before.items() if after.get(name) != ident]
    added = [name for name in after if name not in before and name.startswith(classes)]
    return sorted(altered + added)
