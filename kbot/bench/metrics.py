"""KernelBench's metrics over a benchmark's rows.

fast_p (KernelBench's definition): the share of *all* problems that are correct and whose
speedup over the baseline is greater than p. fast_0 is the share correct; it needs no timing.
The headline baseline is the faster of eager and torch.compile, per case; fast_p is also given
vs eager and vs torch.compile. Geomeans are over the correct, timed problems. Without a GPU
every timing-based figure is None ("not measured"), never a number.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from kbot.bench.outcome import geomean
from kbot.bench.records import ProblemResult

THRESHOLDS = (1.0, 1.2)
BASELINES = {
    "best": "speedup_vs_best",
    "eager": "speedup_vs_eager",
    "compile": "speedup_vs_compile",
}


@dataclass(frozen=True)
class FailureClass:
    failure: str
    problems: tuple[str, ...]  # keys, e.g. ("L1/23", "L2/40")
    example: str  # one problem's message


@dataclass(frozen=True)
class Summary:
    problems: int
    correct: int
    timed: int  # correct problems with timings
    fast_0: float | None
    # fast_p by baseline ("best", "eager", "compile") then threshold ("1.0", "1.2");
    # None when the benchmark was not timed (no GPU)
    fast: dict[str, dict[str, float | None]]
    geomean: dict[str, float | None]  # by baseline, over correct timed problems
    by_status: dict[str, int]
    failures: tuple[FailureClass, ...]  # most frequent first


def summarize(rows: list[ProblemResult], timed_run: bool) -> Summary:
    """`timed_run`: the benchmark ran on a GPU, so problems without a timing count as not
    fast; on a CPU every timing-based figure is None."""
    n = len(rows)
    correct = [r for r in rows if r.correct]
    timed = [r for r in correct if r.timed]
    fast: dict[str, dict[str, float | None]] = {}
    means: dict[str, float | None] = {}
    for name, field in BASELINES.items():
        values = [getattr(r, field) for r in timed]
        known = [v for v in values if v is not None]
        fast[name] = {
            f"{p:.1f}": (sum(1 for v in known if v > p) / n if n and timed_run else None)
            for p in THRESHOLDS
        }
        means[name] = geomean(known) if known else None
    by_status: dict[str, int] = defaultdict(int)
    for row in rows:
        by_status[row.status.value] += 1
    return Summary(
        problems=n,
        correct=len(correct),
        timed=len(timed),
        fast_0=len(correct) / n if n else None,
        fast=fast,
        geomean=means,
        by_status=dict(by_status),
        failures=failure_classes(rows),
    )


def failure_classes(rows: list[ProblemResult]) -> tuple[FailureClass, ...]:
    groups: dict[str, list[ProblemResult]] = defaultdict(list)
    for row in rows:
        if not row.correct:
            groups[row.failure or row.status.value].append(row)
    ranked = sorted(groups.items(), key=lambda item: (-len(item[1]), item[0]))
    return tuple(
        FailureClass(
            failure, tuple(r.key for r in members), " ".join(members[0].message.split())[:240]
        )
        for failure, members in ranked
    )
