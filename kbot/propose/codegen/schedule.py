"""The schedule records classify.py picks: the iteration space a kernel tiles, which dim its
columns run along, the reductions in dependency order, the outputs and what each one is."""

from __future__ import annotations

import enum
from dataclasses import dataclass

import torch.fx


class ScheduleKind(str, enum.Enum):
    POINTWISE = "pointwise"
    ROW_REDUCTION = "row_reduction"
    MATMUL_EPILOGUE = "matmul_epilogue"
    # A step of an extern program (classify.py): the launcher calls the declared op, no kernel.
    EXTERN = "extern"


class OutputKind(str, enum.Enum):
    FULL = "full"  # the iteration shape
    ROW = "row"  # one value per row (a reduced shape, keepdim or not)


@dataclass(frozen=True)
class Reduction:
    node: torch.fx.Node
    kind: str  # sum | mean | max | min | argmax | argmin | cumsum | cumprod
    level: int  # 1 + the deepest reduction it depends on
    # a sum of integers or booleans (cross-entropy's count of targets it does not ignore), or
    # a max/min of integers: accumulated in int64, exactly, by the one-pass and looped
    # schedules only
    integer: bool = False


@dataclass(frozen=True)
class OnlineSoftmax:
    """`m = amax(x)` and `s = sum(exp(x - m))` computed in one pass (rescaling `s` as `m` grows)."""

    max_node: torch.fx.Node
    sum_node: torch.fx.Node
    source: torch.fx.Node  # x


@dataclass(frozen=True)
class Schedule:
    kind: ScheduleKind
    iter_shape: tuple
    col_dim: int
    reductions: tuple[Reduction, ...] = ()
    outputs: tuple[tuple[torch.fx.Node, OutputKind], ...] = ()
    online: tuple[OnlineSoftmax, ...] = ()
    matmul: torch.fx.Node | None = None  # computed by an extern call (extern=True) or tl.dot
    extern: bool = False
    # Outputs of different shapes: one pointwise sub-schedule (one kernel) per distinct shape.
    groups: tuple[Schedule, ...] = ()
    # A group's outputs keep the names the launcher gives them among all the outputs.
    out_names: tuple[str, ...] = ()
    # Reductions of reductions (stages.py): the kernels that first write the buffers this
    # schedule loads, in launch order (each writes its outputs into `out_names`). In an
    # extern program, also the extern calls (kind EXTERN) and the kernels between them.
    stages: tuple[Schedule, ...] = ()
    # A reduction over several dims (LayerNorm over (C, H, W), a full sum): every reduced dim,
    # ascending; the tile's columns run over them flattened and `col_dim` is the last of them.
    red_dims: tuple[int, ...] = ()

    @property
    def col_dims(self) -> tuple[int, ...]:
        """The dims the tile's columns run over, outermost first."""
        return self.red_dims or (self.col_dim,)

    @property
    def levels(self) -> list[list[Reduction]]:
        depth = max((r.level for r in self.reductions), default=0)
        return [[r for r in self.reductions if r.level == k] for k in range(1, depth + 1)]
