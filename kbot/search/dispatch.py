"""Dispatch by size: which size parameter tells the cases apart, and where to cut between them.

The size is read from the inputs the problem builds for each case (on the meta device: no
memory, no compute): the first forward argument whose shape differs between cases, by its one
dimension that differs (`x.shape[0]` for the token count T), or by `numel()` when several do.

The cut rule: cases are sorted by size; between two neighbouring measured sizes a < b served
differently, sizes up to floor(sqrt(a * b)) (their geometric mean, as serving sizes come in
powers of two: T=64 and T=4096 cut at 512) take a's kernel and larger ones b's. The smallest
range has no lower bound and the largest no upper bound, so every size has a kernel.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any

from kbot.problem import ProblemSpec


class DispatchError(Exception):
    """The cases cannot be told apart by one size; the message says why."""


@dataclass(frozen=True)
class SizeKey:
    """The size a launcher dispatches on: forward argument `position`, dimension `dim`
    (None: its number of elements)."""

    position: int
    dim: int | None

    def expression(self, names: Sequence[str]) -> str:
        name = names[self.position]
        return f"{name}.numel()" if self.dim is None else f"{name}.shape[{self.dim}]"

    def to_json(self) -> dict[str, Any]:
        return {"position": self.position, "dim": self.dim}


@dataclass(frozen=True)
class SizeRange:
    """Consecutive cases served alike: sizes above the previous range's `upto` up to this one's
    (inclusive; None: no upper bound)."""

    key: Hashable  # what serves them (a candidate's sha256, or True/False for the original path)
    labels: tuple[str, ...]
    sizes: tuple[int, ...]
    upto: int | None


def size_key(problem: ProblemSpec) -> tuple[SizeKey, dict[str, int]]:
    """The size key of a problem with several cases and each case's size under it."""
    from kbot.problem.runtime import case_inputs, import_file
    from kbot.search.per_case import case_label

    if len(problem.cases) < 2:
        raise DispatchError("the problem has one case: there is no size to dispatch on")
    import torch

    try:
        module = import_file(problem.path, prefix="kbot_dispatch_problem")
        with torch.device("meta"):
            built = [case_inputs(module, dict(case)) for case in problem.cases]
    except Exception as exc:  # the user's get_inputs
        raise DispatchError(
            f"get_inputs could not build the cases on the meta device: {exc}"
        ) from None
    labels = [case_label(c) for c in problem.cases]
    for position in range(min(len(args) for args in built)):
        values = [args[position] for args in built]
        if not all(isinstance(v, torch.Tensor) for v in values):
            continue
        shapes = [tuple(v.shape) for v in values]
        if len(set(shapes)) == 1:
            continue
        varying = (
            [d for d in range(len(shapes[0])) if len({s[d] for s in shapes}) > 1]
            if len({len(s) for s in shapes}) == 1
            else []
        )
        key = SizeKey(position, varying[0] if len(varying) == 1 else None)
        sizes = [s[key.dim] if key.dim is not None else math.prod(s) for s in shapes]
        return key, dict(zip(labels, sizes))
    raise DispatchError("no tensor argument changes shape between the cases")


def cut(smaller: int, larger: int) -> int:
    """The largest size that still takes `smaller`'s kernel: floor of the geometric mean."""
    return math.isqrt(smaller * larger)


def size_ranges(sizes: dict[str, int], served_by: dict[str, Hashable]) -> list[SizeRange]:
    """Cases grouped into ranges of neighbouring sizes served by the same key."""
    order = sorted(sizes, key=lambda label: sizes[label])
    groups: list[list[str]] = []
    for label in order:
        if groups and served_by[groups[-1][-1]] == served_by[label]:
            groups[-1].append(label)
            continue
        if groups and sizes[groups[-1][-1]] == sizes[label]:
            raise DispatchError(
                f"cases {groups[-1][-1]} and {label} have the same size ({sizes[label]}) but "
                "different winners; kbot dispatches by size only"
            )
        groups.append([label])
    ranges = []
    for index, group in enumerate(groups):
        upto = None
        if index + 1 < len(groups):
            upto = cut(sizes[group[-1]], sizes[groups[index + 1][0]])
        ranges.append(
            SizeRange(served_by[group[0]], tuple(group), tuple(sizes[g] for g in group), upto)
        )
    return ranges


def range_condition(expression: str, low: int | None, high: int | None) -> str:
    """`expression` within (low, high]; None is unbounded on that side."""
    if low is None and high is None:
        return "True"
    if low is None:
        return f"{expression} <= {high}"
    if high is None:
        return f"{expression} > {low}"
    return f"{low} < {expression} <= {high}"


def original_path_term(expression: str, ranges: list[SizeRange]) -> str | None:
    """The guard term that sends the sizes of ranges keyed True (no candidate faster than the
    original code there) to the original path; None when no range is, or when all are (then
    the kernel would never run: kbot publishes nothing faster)."""
    if not any(r.key is True for r in ranges) or all(r.key is True for r in ranges):
        return None
    kept, low = [], None
    for r in ranges:
        if r.key is not True:
            kept.append(range_condition(expression, low, r.upto))
        low = r.upto
    return kept[0] if len(kept) == 1 else "(" + " or ".join(kept) + ")"
