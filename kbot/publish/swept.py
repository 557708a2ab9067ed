"""What report.json's `sweep` (kbot.search.sweep: the winner checked at other models' sizes)
lets the publisher admit: the dimensions and Model attributes the sweep changed, with the sizes
that passed. Read once into typed records; kbot.publish.guard turns them into guard terms and
kbot.publish.artifacts into the parity test's extra cases."""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class CheckedSize:
    """One point of the sweep as report.json records it."""

    size: int  # the size as the run's problem has it
    to: int  # what the point changed it to
    status: str  # passed | failed | not applicable (the reference refused) | not checked
    # the point's first-case input shapes (None for a non-tensor), or None when unknown
    shapes: tuple[tuple[int, ...] | None, ...] | None
    scalars: dict[str, Any]  # Model's plain scalar attributes at that size

    @property
    def passed(self) -> bool:
        return self.status == "passed"

    @property
    def refused(self) -> bool:
        return self.status == "not applicable"

    def changed(self, position: int, ndim: int, dim: int, size: int) -> int | None:
        """The size this point gave forward argument `position`'s dimension `dim`, when it
        changed it."""
        shape = self.shapes[position] if self.shapes and position < len(self.shapes) else None
        if shape is None or len(shape) != ndim or shape[dim] == size:
            return None
        return shape[dim]


def checked_sizes(sweep: dict[str, Any] | None) -> tuple[CheckedSize, ...]:
    points = (sweep or {}).get("points") or []
    return tuple(
        CheckedSize(
            size=int(p.get("size", 0)),
            to=int(p.get("to", 0)),
            status=str(p.get("status", "")),
            shapes=_shapes(p.get("shapes")),
            scalars=dict(p.get("scalars") or {}),
        )
        for p in points
        if isinstance(p, dict) and p.get("kind", "size") == "size"
    )


def rows_split_positions(sweep: dict[str, Any] | None) -> tuple[int, ...]:
    """The forward arguments the sweep's rows point (kbot.search.sweep) split into two leading
    dims, where it passed: the kernel then takes them as [batch, seqlen, ...] as well as
    [rows, ...]. () where there was no such point or it did not pass."""
    for p in (sweep or {}).get("points") or []:
        if isinstance(p, dict) and p.get("kind") == "rows" and p.get("status") == "passed":
            return tuple(int(i) for i in p.get("tokens") or ())
    return ()


def _shapes(value: Any) -> tuple[tuple[int, ...] | None, ...] | None:
    if not isinstance(value, list):
        return None
    return tuple(tuple(int(d) for d in s) if isinstance(s, list) else None for s in value)


def passed_sizes(report: dict[str, Any]) -> list[tuple[int, int]]:
    """(size, to) of each point the kernel passed."""
    return [(p.size, p.to) for p in checked_sizes(report.get("sweep")) if p.passed]


@dataclass(frozen=True)
class SweptDim:
    """One dimension the shape sweep changed."""

    dim: int
    sizes: tuple[int, ...]  # the sizes that passed, the cases' own included
    clean: bool  # every swept size of it passed (or was refused by the reference)
    # Where the reference refused some sizes (16 heads of 128 cannot be 3000 wide): the
    # greatest common divisor of the sizes that passed, which every admitted size must divide
    # by (the original code raises at the others; the kernel must not answer them). 1: none.
    step: int = 1


@dataclass(frozen=True)
class SweptValue:
    """One Model attribute the shape sweep changed."""

    values: tuple[Any, ...]  # the values that passed, the run's own first (numbers sorted)
    clean: bool  # every point that changed it passed


def _blind_failure(points: tuple[CheckedSize, ...]) -> bool:
    """A point the kernel ran at, did not pass and whose shapes are unknown may have changed
    any dimension: no dimension is then free of a failure."""
    return any(not p.refused and not p.passed and p.shapes is None for p in points)


def swept_dims(
    position: int, shapes: tuple[tuple[int, ...], ...], sweep: dict[str, Any] | None
) -> tuple[SweptDim, ...]:
    """Each dimension of forward argument `position` (its `shapes` per case) that every case
    gave one size and some sweep point changed."""
    if not shapes or len({len(s) for s in shapes}) != 1:
        return ()
    points = checked_sizes(sweep)
    partial = bool((sweep or {}).get("partial"))  # cut short: only the sizes checked
    ran = [p for p in points if not p.refused]
    refused = [p for p in points if p.refused]
    first = shapes[0]
    out = []
    for dim, size in enumerate(first):
        if any(s[dim] != size for s in shapes):
            continue  # the cases vary it: free already
        passed, clean, changed = {size}, not _blind_failure(points) and not partial, False
        for point in ran:
            to = point.changed(position, len(first), dim, size)
            if to is None:
                continue
            changed = True
            if point.passed:
                passed.add(to)
            else:
                clean = False
        if not changed:
            continue
        refused_here = any(  # a refused point of unknown shapes may have changed this one
            p.shapes is None or p.changed(position, len(first), dim, size) is not None
            for p in refused
        )
        step = functools.reduce(math.gcd, passed) if refused_here else 1
        out.append(SweptDim(dim, tuple(sorted(passed)), clean, step))
    return tuple(out)


def swept_scalars(
    sweep: dict[str, Any] | None, scalars: tuple[tuple[str, Any], ...]
) -> dict[str, SweptValue]:
    """Model's scalar attributes (`scalars`, as the run built Model) that the shape sweep
    changed."""
    points = checked_sizes(sweep)
    partial = bool((sweep or {}).get("partial"))  # cut short: only the values checked
    out: dict[str, SweptValue] = {}
    for name, value in scalars:
        passed, clean, changed = [value], not _blind_failure(points) and not partial, False
        for point in points:
            if point.refused or point.scalars.get(name, value) == value:
                continue
            changed = True
            if point.passed:
                if point.scalars[name] not in passed:
                    passed.append(point.scalars[name])
            else:
                clean = False
        if changed:
            numbers = all(isinstance(v, (int, float)) for v in passed)
            out[name] = SweptValue(tuple(sorted(passed)) if numbers else tuple(passed), clean)
    return out
