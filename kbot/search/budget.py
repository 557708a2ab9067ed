"""Budgets and early stops: why a search ended, as a typed value."""

from __future__ import annotations

import enum
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kbot.search.options import Budget, OptimizeOptions

if TYPE_CHECKING:
    from kbot.search.fitness import Fitness


class StopReason(str, enum.Enum):
    GENERATIONS = "generations"  # every generation ran
    TIME = "time"  # the wall-time budget ran out
    CANDIDATES = "candidates"  # the candidate budget ran out
    TOKENS = "tokens"
    MONEY = "money"
    ROOFLINE = "roofline"  # the best candidate reached the roofline stop fraction
    PATIENCE = "patience"  # no improvement above the noise floor for `patience` generations
    EXHAUSTED = "exhausted"  # the proposers had nothing new to offer
    INTERRUPTED = "interrupted"  # SIGINT (Ctrl-C) or SIGTERM; the run can be resumed


STOP_MESSAGES = {
    StopReason.GENERATIONS: "ran all {generations} generations",
    StopReason.TIME: "wall-time budget of {time_s:.0f} s spent",
    StopReason.CANDIDATES: "candidate budget of {max_candidates} spent",
    StopReason.TOKENS: "token budget of {max_tokens} spent",
    StopReason.MONEY: "money budget of ${max_usd} spent",
    StopReason.ROOFLINE: "best candidate reached the roofline stop fraction",
    StopReason.PATIENCE: "no improvement above the noise floor for {patience} generations",
    StopReason.EXHAUSTED: "the proposers offered no new candidates",
    StopReason.INTERRUPTED: "interrupted; resume with --resume",
}


# The largest share of a time budget kept back for what follows the loop: the last evaluation,
# the finalists' re-measurement and the per-size module. A quarter left a 150 s budget (an
# 18 s evaluation on the H100, 2026-12-07) no time for the per-size module.
RESERVE_SHARE = 0.35


@dataclass
class BudgetTracker:
    """Counts what a run has spent, including what earlier sessions of a resumed run spent."""

    budget: Budget
    spent_before_s: float = 0.0  # wall time of earlier sessions of this run
    candidates: int = 0
    tokens: int = 0  # paid model tokens (prompt + completion), earlier sessions included
    usd: float = 0.0  # what they cost, from llm.prices
    clock: Callable[[], float] = time.monotonic
    sweep_points: int = 0  # checks of the winner after the loop (kbot.search.sweep)

    def __post_init__(self) -> None:
        self._started = self.clock()
        self._walls: list[float] = []
        self._finalists = 0

    def start_clock(self) -> None:
        """The budget's clock starts now (the search's first step), not at construction."""
        self._started = self.clock()

    def observe(self, wall_s: float, finalists: int) -> None:
        """Records one evaluation's wall time; `finalists` is how many candidates the run will
        re-measure after the loop (0 when nothing is timed)."""
        self._walls.append(wall_s)
        self._finalists = finalists

    @property
    def reserve_s(self) -> float:
        """Wall time kept back from the time budget: the evaluation the loop would start next,
        and when the run is timed the finalists' re-measurement and the per-size module's
        evaluation after it, estimated as (1 + finalists + 1) median evaluations, and the
        shape sweep's untimed one-case checks at a third of one each; at most RESERVE_SHARE of
        the budget. So a run ends near its budget instead of one evaluation and a
        re-measurement past it."""
        median = self.median_wall_s
        if median is None or self.budget.time_s is None:
            return 0.0
        by_size = 1 if self._finalists else 0  # only a timed run composes per-size winners
        evaluations = 1 + self._finalists + by_size + self.sweep_points / 3
        return min(RESERVE_SHARE * self.budget.time_s, evaluations * median)

    @property
    def median_wall_s(self) -> float | None:
        """One evaluation's wall time so far (the median); None before the first."""
        if not self._walls:
            return None
        return sorted(self._walls)[len(self._walls) // 2]

    def short_of_an_evaluation(self) -> tuple[float, float] | None:
        """(seconds left, one evaluation's median wall time) while the time budget has time
        left but less than one evaluation's; None otherwise."""
        deadline, median = self.deadline(), self.median_wall_s
        if deadline is None or median is None:
            return None
        left = deadline - self.clock()
        return (left, median) if 0 < left < median else None

    def elapsed_s(self) -> float:
        return self.spent_before_s + (self.clock() - self._started)

    def deadline(self) -> float | None:
        """When the time budget ends, on `clock`; None without one. An evaluation still in
        flight then is abandoned (kbot.search.inflight)."""
        if self.budget.time_s is None:
            return None
        return self.clock() + (self.budget.time_s - self.elapsed_s())

    def exhausted(self, spending: bool = True) -> StopReason | None:
        """The budget that is spent, if any: checked before each generation's proposals and
        before each evaluation. With `spending=False` (before an evaluation) the token and money
        budgets are left out: candidates already paid for are evaluated, and the run stops
        before it asks a model again."""
        budget = self.budget
        if budget.time_s is not None and self.elapsed_s() + self.reserve_s >= budget.time_s:
            return StopReason.TIME
        if budget.max_candidates is not None and self.candidates >= budget.max_candidates:
            return StopReason.CANDIDATES
        if not spending:
            return None
        if budget.max_tokens is not None and self.tokens >= budget.max_tokens:
            return StopReason.TOKENS
        if budget.max_usd is not None and self.usd >= budget.max_usd:
            return StopReason.MONEY
        return None

    def fraction_used(self, generation: int) -> float:
        """The largest share of any budget spent, for the progress ETA."""
        budget = self.budget
        shares = [generation / budget.generations]
        if budget.time_s:
            shares.append(self.elapsed_s() / budget.time_s)
        if budget.max_candidates:
            shares.append(self.candidates / budget.max_candidates)
        if budget.max_tokens:
            shares.append(self.tokens / budget.max_tokens)
        if budget.max_usd:
            shares.append(self.usd / budget.max_usd)
        return min(1.0, max(shares))

    def eta_s(self, generation: int) -> float | None:
        used = self.fraction_used(generation)
        if used <= 0:
            return None
        return max(0.0, self.elapsed_s() * (1 - used) / used)


def early_stop(
    best: Fitness | None, stale_generations: int, options: OptimizeOptions
) -> StopReason | None:
    """After a generation: the best so far reached the roofline stop fraction, or `patience`
    generations in a row brought no improvement."""
    if best is not None and best.roofline_fraction is not None:
        if best.roofline_fraction >= options.roofline_stop_fraction:
            return StopReason.ROOFLINE
    if stale_generations >= options.patience:
        return StopReason.PATIENCE
    return None


class StopRequest:
    """SIGINT (Ctrl-C) and SIGTERM set a flag; the search abandons the evaluation in flight,
    drops its verdict (never stored, so a resume evaluates it again) and writes its report,
    store and envelope with what it measured. A second signal raises KeyboardInterrupt at once.
    Re-entrant: `optimize()` holds it over the whole run, the loop enters it again."""

    SIGNALS = (signal.SIGINT, signal.SIGTERM)

    def __init__(self) -> None:
        self.requested = False
        self.signal_name: str | None = None
        self._previous: dict[int, object] = {}
        self._depth = 0

    def __enter__(self) -> StopRequest:
        self._depth += 1
        if self._depth == 1 and threading.current_thread() is threading.main_thread():
            for number in self.SIGNALS:
                self._previous[number] = signal.signal(number, self._handle)
        return self

    def __exit__(self, *exc: object) -> None:
        self._depth -= 1
        if self._depth == 0:
            for number, previous in self._previous.items():
                signal.signal(number, previous)  # type: ignore[arg-type]
            self._previous = {}

    def _handle(self, signum: int, frame: object) -> None:
        if self.requested:
            raise KeyboardInterrupt
        self.requested = True
        self.signal_name = signal.Signals(signum).name
