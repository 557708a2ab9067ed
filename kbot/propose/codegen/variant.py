"""One variant of a schedule: a label, the function that emits it, and the launch choices the
tune proposer and the report read (family, block, warps, rows)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch

from kbot.propose.codegen.emitted import Emitted

Emit = Callable[..., Emitted]  # (traced, schedule, sizes, op[, extern_args]) -> Emitted


@dataclass(frozen=True)
class Variant:
    label: str
    emit: Emit
    family: str = ""  # pointwise | flat | pairs | one pass | looped | split | tiled ("" for GEMM)
    block: int = 0  # columns (inner elements) per program step; 0 when the row decides
    warps: int = 0
    rows: int = 1  # rows per program
    optional: bool = False  # skipped, not fatal, when it cannot be emitted for the problem
    by_size: bool = False  # a decode launch up to DECODE_MAX_ROWS rows and a prefill one above


def hint(size: object) -> int:
    if isinstance(size, torch.SymInt):
        return int(size.node.hint)
    return int(size)


def pow2(n: int) -> int:
    return 1 << max(0, (n - 1).bit_length())
