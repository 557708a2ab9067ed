"""What a candidate's process compares after every call (host_session): ModelNew's tensors byte
for byte, and the plain Python values it and its module keep, so a kernel cannot carry a call
counter or a cache from one call to the next."""

from __future__ import annotations

import types
from typing import Any

import torch

_PLAIN = (bool, int, float, str, bytes, type(None))


def plain_copy(value: object, depth: int = 0) -> object:
    """A copy of a plain Python value (numbers, strings, and lists, tuples, dicts and sets of
    them), or a marker for anything else (a function, a tensor: compared elsewhere)."""
    if isinstance(value, _PLAIN):
        return value
    if depth > 4:
        return ("deep", type(value).__name__)
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, tuple(plain_copy(v, depth + 1) for v in value))
    if isinstance(value, (set, frozenset)):
        items = sorted(repr(plain_copy(v, depth + 1)) for v in value)
        return (type(value).__name__, tuple(items))
    if isinstance(value, dict):
        return ("dict", tuple((repr(k), plain_copy(v, depth + 1)) for k, v in value.items()))
    return ("object", type(value).__name__)


def python_state(model: torch.nn.Module | None, module: Any) -> dict[str, object]:
    """The plain Python values ModelNew's modules and the candidate's module keep."""
    state: dict[str, object] = {}
    if model is not None:
        for prefix, sub in model.named_modules():
            for name, value in vars(sub).items():
                if not name.startswith("_") and not isinstance(value, torch.Tensor):
                    state[f"{prefix}.{name}" if prefix else name] = plain_copy(value)
    for name, value in vars(module).items() if module is not None else ():
        if not name.startswith("__") and isinstance(value, (list, dict, set)):
            state[f"module-level {name}"] = plain_copy(value)
    for name, function in module_functions(module):
        # A mutable default argument or a closed-over list outlives the call just the same.
        state[f"{name}'s default arguments"] = plain_copy(
            (function.__defaults__, function.__kwdefaults__)
        )
        for index, cell in enumerate(function.__closure__ or ()):
            try:
                contents = cell.cell_contents
            except ValueError:  # a cell not yet filled
                continue
            if not isinstance(contents, torch.Tensor):
                state[f"{name}'s closure cell {index}"] = plain_copy(contents)
    return state


def module_functions(module: Any):
    """(name, function) for the candidate module's functions and its classes' methods (the
    kernels' Python wrappers too: a JITFunction keeps the function as `fn`)."""
    if module is None:
        return
    for name, value in vars(module).items():
        if isinstance(value, types.FunctionType):
            yield name, value
        elif isinstance(getattr(value, "fn", None), types.FunctionType):
            yield name, value.fn
        elif isinstance(value, type) and value.__module__ == module.__name__:
            for attribute, member in vars(value).items():
                member = getattr(member, "__func__", member)  # static and class methods
                if isinstance(member, types.FunctionType):
                    yield f"{name}.{attribute}", member


def own_tensors(model: torch.nn.Module):
    """(name, tensor) of every parameter and buffer (non-persistent ones included) and of every
    tensor kept as a plain attribute of a module, alone or in a list, tuple or dict."""
    yield from model.named_parameters()
    yield from model.named_buffers()
    for prefix, module in model.named_modules():
        for name, value in vars(module).items():
            if name.startswith("_"):
                continue  # nn.Module's own tables (_parameters, _buffers, ...), seen above
            where = f"{prefix}.{name}" if prefix else name
            if isinstance(value, torch.Tensor):
                yield where, value
            elif isinstance(value, (list, tuple)):
                for index, item in enumerate(value):
                    if isinstance(item, torch.Tensor):
                        yield f"{where}[{index}]", item
            elif isinstance(value, dict):
                for key, item in value.items():
                    if isinstance(item, torch.Tensor):
                        yield f"{where}[{key!r}]", item


def same_bits(a: torch.Tensor, b: torch.Tensor) -> bool:
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if a.numel() == 0:
        return True
    if a.is_complex() or a.dtype == torch.bool:
        return torch.equal(a, b)
    # Bytes, not values: NaN equals itself, -0.0 differs from 0.0.
    return torch.equal(_bytes(a), _bytes(b))


def _bytes(t: torch.Tensor) -> torch.Tensor:
    return t.reshape(-1).contiguous().view(torch.uint8)  # 1-d first: a 0-d tensor has no byte view
