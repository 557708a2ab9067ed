"""Which variants of a schedule to offer: block sizes, warps, rows per program, loop vs one pass.

The choices follow the hidden size: a row that fits in one block is read once in registers
(one pass); wider rows loop; narrow rows pack several per program so a program moves enough
bytes to hide latency (the H200 anchors: at T <= 64 launch cost dominates, at prefill the
kernel must stream at copy bandwidth).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch

from kbot.problem import ProblemSpec
from kbot.propose.codegen.classify import Schedule, ScheduleKind
from kbot.propose.codegen.emit_pointwise import emit_pointwise
from kbot.propose.codegen.emitted import Emitted
from kbot.propose.codegen.sizes import SizeNames
from kbot.propose.codegen.trace import TracedProblem


@dataclass(frozen=True)
class Variant:
    label: str
    emit: Callable[[TracedProblem, Schedule, SizeNames, str], Emitted]


def _hint(size: object) -> int:
    if isinstance(size, torch.SymInt):
        return int(size.node.hint)
    return int(size)


def _pow2(n: int) -> int:
    return 1 << max(0, (n - 1).bit_length())


def variants_for(traced: TracedProblem, schedule: Schedule, spec: ProblemSpec) -> list[Variant]:
    n_cols = _hint(schedule.iter_shape[schedule.col_dim])
    if schedule.kind == ScheduleKind.POINTWISE:
        return _pointwise_variants(n_cols)
    from kbot.propose.codegen.variants_more import more_variants

    return more_variants(traced, schedule, spec, n_cols)


def _pointwise_variants(n_cols: int) -> list[Variant]:
    full = min(_pow2(n_cols), 4096)
    choices = [
        (1, full, 4 if full <= 1024 else 8),
        (1, min(full, 1024), 4),
        (max(1, 4096 // full), full, 8),
        (1, min(full, 2048), 8),
    ]
    seen, out = set(), []
    for rows, block, warps in choices:
        rows = min(rows, 16)
        if (rows, block, warps) in seen:
            continue
        seen.add((rows, block, warps))
        out.append(
            Variant(
                f"pointwise r{rows} b{block} w{warps}",
                lambda t, s, z, op, r=rows, b=block, w=warps: emit_pointwise(
                    t, s, z, op, rows=r, block_n=b, num_warps=w
                ),
            )
        )
    return out
