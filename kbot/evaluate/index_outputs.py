"""Index outputs whose ties torch leaves unordered: a candidate may pick another of the tied.

`torch.topk`, `sort` (not stable), `kthvalue` and `mode` return indices, and where values tie
(the judge's `grid` and `outliers` inputs make ties common; bf16 router logits have them in
real use) torch does not say which of the tied positions comes first: a correct kernel can
return [3, 7] where torch returned [7, 3]. Comparing those indices exactly rejected correct
top-k kernels (MoE routing) depending on the seed.

`IndexSources` is a dispatch mode around the reference's forward: it notes which outputs are
such indices, the tensor they index and along which dim (through dtype casts of them, such as
`topk_ids.to(torch.int32)`). The comparison then accepts a candidate's different indices when
they pick the same values from that tensor (NaN matching NaN) and, for top-k and sort, name
each position once per row. Anything the mode did not see stays compared exactly.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch.utils._python_dispatch import TorchDispatchMode


@dataclass(frozen=True)
class IndexSource:
    """What an index output indexes: `source` along `dim`; `reduced`: the indexed dim was
    dropped from the index tensor (argmax without keepdim); `distinct`: each position at most
    once per row (top-k, sort)."""

    source: torch.Tensor
    dim: int
    reduced: bool
    distinct: bool

    def same_choice(self, candidate: torch.Tensor, reference: torch.Tensor) -> bool:
        """Whether the candidate's indices pick what the reference's pick."""
        if candidate.shape != reference.shape or candidate.is_floating_point():
            return False
        mine, theirs = candidate.long(), reference.long()
        if self.reduced:
            mine, theirs = mine.unsqueeze(self.dim), theirs.unsqueeze(self.dim)
        size = self.source.shape[self.dim] if self.source.dim() else 1
        if mine.numel() and (int(mine.min()) < 0 or int(mine.max()) >= size):
            return False
        try:
            picked = self.source.gather(self.dim, mine.to(self.source.device))
            wanted = self.source.gather(self.dim, theirs.to(self.source.device))
        except RuntimeError:  # shapes gather cannot pair: not indices of this tensor
            return False
        same = picked == wanted
        if picked.is_floating_point():
            same |= picked.isnan() & wanted.isnan()
        if not bool(same.all()):
            return False
        if self.distinct and mine.shape[self.dim] > 1:
            ordered = mine.sort(dim=self.dim).values
            if bool((ordered.diff(dim=self.dim) == 0).any()):
                return False
        return True


# aten op -> (position of the indices among its results, whether they are distinct per row).
# Only ops whose tie order torch leaves open: argmax, argmin and max/min over a dim document
# the first of the tied, and a stable sort keeps the input's order (compared exactly).
_INDEX_OPS = {
    "topk": (1, True),
    "sort": (1, True),
    "argsort": (0, True),
    "kthvalue": (1, False),
    "mode": (1, False),
}
_CASTS = frozenset({"_to_copy", "to", "clone", "contiguous", "alias"})


class IndexSources(TorchDispatchMode):
    """Notes the index outputs of ops whose ties torch leaves unordered (see the module)."""

    def __init__(self) -> None:
        super().__init__()
        self.found: dict[int, tuple[torch.Tensor, IndexSource]] = {}

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        result = func(*args, **kwargs)
        name = func.overloadpacket.__name__
        try:
            if name in _INDEX_OPS:
                self._note(name, func, args, kwargs, result)
            elif name in _CASTS and args and id(args[0]) in self.found:
                if isinstance(result, torch.Tensor) and not result.is_floating_point():
                    self.found[id(result)] = (result, self.found[id(args[0])][1])
        except (IndexError, TypeError, ValueError, RuntimeError):
            pass  # an overload this does not know: those indices stay compared exactly
        return result

    def _note(self, name, func, args, kwargs, result) -> None:
        position, distinct = _INDEX_OPS[name]
        results = result if isinstance(result, (tuple, list)) else (result,)
        if position >= len(results) or not isinstance(args[0], torch.Tensor):
            return
        indices, source = results[position], args[0]
        schema = [a.name for a in func._schema.arguments]
        bound = dict(zip(schema, args))
        bound.update(kwargs)
        if bound.get("stable"):
            return  # a stable sort orders ties by position: one right answer
        dim = bound.get("dim", -1 if name in ("topk", "sort", "argsort") else None)
        if dim is None:  # argmax over all elements: an index into the flattened tensor
            source, dim, reduced = source.reshape(-1), 0, indices.dim() == 0
        else:
            dim = int(dim) % max(source.dim(), 1)
            reduced = indices.dim() < source.dim()
        if not isinstance(indices, torch.Tensor) or indices.is_floating_point():
            return
        self.found[id(indices)] = (
            indices,
            IndexSource(source.detach().clone(), dim, reduced, distinct),
        )

    def for_outputs(self, outputs: tuple) -> dict[int, IndexSource]:
        """Output position -> what it indexes, for the outputs that are such indices."""
        return {
            position: self.found[id(value)][1]
            for position, value in enumerate(outputs)
            if id(value) in self.found and self.found[id(value)][0] is value
        }
