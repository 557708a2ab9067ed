"""Sizes between the problem's cases, drawn for each judgement.

A published kernel's guard admits every size up to the largest a case checked (the token
count: `x.shape[0] <= 64`), so the judge checks sizes it admits and no case named: red-team
round fourteen's c01 took a small-batch tile path that was wrong at T = 2-4, checked at T = 1
and 5 only. Each distinct setting of the cases' other values (a dtype) gets one drawn case,
its varying integers drawn log-uniformly between their smallest and largest case values,
never one a case has (small and odd sizes are as likely as large ones; the cost stays near
a small case's). Drawn from the OS: the candidate cannot know them ahead.
"""

from __future__ import annotations

import math
import secrets
from typing import Any

_MAX_DRAWN = 2  # drawn cases per judgement at most
TRIALS = 2  # correctness trials per drawn case


def between_cases(cases: tuple[dict[str, Any], ...]) -> list[dict[str, Any]]:
    """The drawn cases (none where no integer varies or no size lies between)."""
    varying = _varying(cases)
    if not varying:
        return []
    drawn: list[dict[str, Any]] = []
    settings: list[dict[str, Any]] = []
    for case in cases:
        setting = {k: v for k, v in case.items() if k not in varying}
        if setting not in settings:
            settings.append(setting)
    for setting in settings[:_MAX_DRAWN]:
        values = {name: _draw(sizes) for name, sizes in varying.items()}
        if all(v is None for v in values.values()):
            continue
        # a variable with no free size in its range takes a case's own value
        own = next(c for c in cases if all(c.get(k) == v for k, v in setting.items()))
        case = {**own, **{k: v for k, v in values.items() if v is not None}}
        drawn.append(case)
    return drawn


def _varying(cases: tuple[dict[str, Any], ...]) -> dict[str, list[int]]:
    """Each integer every case names, with the values the cases give it, where they differ."""
    if len(cases) < 2:
        return {}
    names = set.intersection(*(set(c) for c in cases))
    varying = {}
    for name in sorted(names):
        values = [c[name] for c in cases]
        if all(isinstance(v, int) and not isinstance(v, bool) for v in values):
            if len(set(values)) > 1:
                varying[name] = sorted(set(values))
    return varying


def _draw(sizes: list[int]) -> int | None:
    """A value strictly between the smallest and largest of `sizes`, none of them, drawn
    log-uniformly (from 0 up: uniformly over the few); None where there is none."""
    low, high = sizes[0], sizes[-1]
    free = (high - low - 1) - sum(1 for s in sizes if low < s < high)
    if free <= 0:
        return None
    for _ in range(64):
        if low >= 1:
            span = math.log(high) - math.log(low + 1)
            value = int(math.exp(math.log(low + 1) + span * secrets.randbelow(1 << 20) / (1 << 20)))
        else:
            value = low + 1 + secrets.randbelow(high - low - 1)
        if low < value < high and value not in sizes:
            return value
    return next(v for v in range(low + 1, high) if v not in sizes)
