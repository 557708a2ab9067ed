"""What the lowering modules share, below all of them: an index along one dim (`Ix`), a
node's shape, and the part of a kernel body that op and view lowerings call back into
(`Lowering`, which `lowering.KernelBody` implements). ops.py and views.py depend on this
module only; lowering.py depends on them: one way, no circle."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import torch
import torch.fx


@dataclass(frozen=True)
class Ix:
    """An index along one dim: a Triton expression and the conditions that keep it in bounds."""

    expr: str
    guards: tuple[str, ...] = ()
    wide: bool = False  # already int64 (row indices are), so `ix * stride` cannot overflow
    # (flat, sizes, k) when this is digit k of `flat` split by a reshape into `sizes`; merging
    # the same digits back gives `flat` itself instead of `(flat // 128) * 128 + flat % 128`.
    origin: tuple = ()
    # (expr, start, end, base) where `expr`, read here, lies in [start, end) (size names) and
    # is start + base: the pairs schedule's column of one piece of a cat. A cat along this
    # dim whose piece spans exactly that reads the piece at `base`, with no select. Valid only
    # while the index is that expression: a view that rewrites `expr` leaves it stale, unused.
    span: tuple = ()


ZERO = Ix("0")


def shape_of(node: object) -> tuple:
    if isinstance(node, torch.fx.Node):
        val = node.meta.get("val")
        if isinstance(val, torch.Tensor):
            return tuple(val.shape)
    return ()


class Lowering(Protocol):
    """The kernel body as op and view lowerings see it."""

    helpers: set[str]  # @triton.jit helpers the kernel calls
    gpu_math: bool  # the twin that calls libdevice (GPU only)
    exact_division: bool  # IEEE division (`tl.div_rn`): the graph casts to fp8
    scan_tile: tuple[Ix, ...] | None  # the one-pass tile's index, where scans can be computed

    def value(self, node: object, idx: tuple[Ix, ...]) -> str: ...

    def size(self, value: object) -> str: ...

    def scalar(self, value: object) -> str: ...

    def fresh(self, base: str) -> str: ...

    def emit(self, line: str) -> None: ...

    def comment_source(self, node: torch.fx.Node) -> None: ...

    def rounded(self, expr: str, dtype: torch.dtype, before_sum: bool = False) -> str: ...

    @staticmethod
    def product_before_sum(value: object, rounded: torch.fx.Node) -> bool: ...
