"""What one reference call reads: the bytes behind the roofline's `bytes_moved`.

A buffer indexed by a gather (RoPE's `cos_sin_cache[positions]`, `index_select`, `embedding`,
`gather`) is read by its gathered rows, not in full: at T=1 RoPE reads one row of a 4 MiB
cache. The reference runs once on meta tensors (shapes, dtypes and strides, no data, no device
memory) under a TorchDispatchMode that records, per input, parameter and buffer, the elements
each op reads: a gather op its gathered rows, any other op the whole view it is given (so
`cache[:T]` counts T rows), a view op nothing. This runs on the judge's side, on the problem's
own `Model`: trusted code.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

_aten = torch.ops.aten
# op -> (position of the indexed tensor, position of the values written, or None for a read)
_GATHERS: dict[Any, tuple[int, int | None]] = {
    _aten.index.Tensor: (0, None),
    _aten.index_select.default: (0, None),
    _aten.embedding.default: (0, None),
    _aten.gather.default: (0, None),
    _aten.index_put.default: (0, 2),
    _aten.index_put_.default: (0, 2),
}


def _nbytes(tensor: torch.Tensor) -> int:
    return tensor.numel() * tensor.element_size()


def _meta(tensor: torch.Tensor) -> torch.Tensor:
    return torch.empty_strided(
        tensor.shape, tensor.stride(), dtype=tensor.dtype, device="meta"
    ).requires_grad_(False)


class _ReadCounter(TorchDispatchMode):
    def __init__(self, roots: dict[int, int]) -> None:
        super().__init__()
        self.roots = roots  # storage of a tracked meta tensor -> its index
        self.gathered: dict[int, int] = defaultdict(int)
        self.views: dict[int, dict[tuple, int]] = defaultdict(dict)

    def _root(self, value: Any) -> int | None:
        if not isinstance(value, torch.Tensor):
            return None
        return self.roots.get(value.untyped_storage()._cdata)

    def _read_whole(self, tensor: torch.Tensor) -> None:
        root = self._root(tensor)
        if root is not None:
            key = (tensor.storage_offset(), tuple(tensor.shape), tuple(tensor.stride()))
            self.views[root][key] = _nbytes(tensor)

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        if getattr(func, "is_view", False):
            return out
        skip: set[int] = set()
        gather = _GATHERS.get(func)
        if gather is not None and len(args) > gather[0]:
            source, written = args[gather[0]], gather[1]
            root = self._root(source)
            if root is not None:
                moved = args[written] if written is not None and len(args) > written else out
                if isinstance(moved, torch.Tensor):
                    self.gathered[root] += _nbytes(moved)
                    skip.add(id(source))
        for value in tree_flatten((args, kwargs))[0]:
            if isinstance(value, torch.Tensor) and id(value) not in skip:
                self._read_whole(value)
        return out


def read_bytes(
    model: torch.nn.Module, inputs: list, tensors: Iterable[torch.Tensor]
) -> dict[int, int] | None:
    """Bytes one call of `model(*inputs)` reads of each of `tensors` (inputs, parameters,
    buffers), keyed by `id(tensor)`: a tensor no op reads counts 0, and none counts more than
    its size. None when the call cannot run on meta tensors (it reads values: `.item()`, a
    boolean mask): the caller then counts every tensor in full."""
    tensors = list(tensors)
    meta_of: dict[int, torch.Tensor] = {}
    for tensor in tensors:
        if id(tensor) not in meta_of:
            meta_of[id(tensor)] = _meta(tensor)
    roots = {meta.untyped_storage()._cdata: key for key, meta in meta_of.items()}
    state = {
        name: meta_of[id(t)]
        for name, t in [
            *model.named_parameters(remove_duplicate=False),
            *model.named_buffers(remove_duplicate=False),
        ]
        if id(t) in meta_of
    }
    args = tuple(meta_of.get(id(v), v) if isinstance(v, torch.Tensor) else v for v in inputs)
    counter = _ReadCounter(roots)
    try:
        with torch.no_grad(), counter:
            torch.func.functional_call(model, state, args)
    except Exception:  # a data-dependent op (or anything meta cannot run): count in full
        return None
    sizes = {id(t): _nbytes(t) for t in tensors}
    return {
        key: min(sizes[key], counter.gathered.get(key, 0) + sum(counter.views[key].values()))
        for key in sizes
    }
