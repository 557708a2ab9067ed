"""What a schedule emitter hands to the candidate writer."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kbot.propose.codegen.kernel import KernelSource


@dataclass(frozen=True)
class Tunable:
    name: str  # module-level constant, e.g. BLOCK_N
    value: int
    why: str  # the comment written beside it


@dataclass
class Emitted:
    kernels: list[KernelSource]
    launcher: list[str]  # lines after the outputs are allocated
    tunables: list[Tunable] = field(default_factory=list)
    params: dict[str, Any] = field(default_factory=dict)
    note: str = ""
