"""Per-size winners: which accepted candidate serves each case (size) of the problem.

One configuration rarely wins at every size: at decode sizes launch and SM fill decide, at
prefill sizes streaming memory does. The archive keeps the best candidate of each case
(`best_by_case`); here each case is given to its best candidate when that candidate beats the
overall winner *at that case* above the noise floor, else to the overall winner, so a module
is composed (kbot.search.compose) only where a size gains from it.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kbot.evaluate.verdict import CaseTiming, Verdict, measured

if TYPE_CHECKING:  # the archive scores cases with this module
    from kbot.search.archive import Entry


@dataclass(frozen=True)
class CaseScore:
    """One candidate at one case: its speedup over `baseline` and the noise of its timing."""

    speedup: float
    baseline: str  # "torch.compile" or "eager"
    spread: float  # relative IQR of the candidate's graph timing at this case


@dataclass(frozen=True)
class CaseWinner:
    case: dict[str, Any]
    label: str
    entry: Entry
    verdict: Verdict  # the serving candidate's verdict (re-measured when it was a finalist)
    score: CaseScore | None  # None when not timed


def case_label(case: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in case.items()) or "default"


def case_timing(verdict: Verdict, label: str) -> CaseTiming | None:
    for case in verdict.cases:
        if case_label(case.case) == label:
            return case.timing
    return None


def case_score(verdict: Verdict, label: str) -> CaseScore | None:
    """The speedup of an accepted verdict at one case: vs torch.compile when measured, else
    vs eager. None when the case was not timed."""
    if not verdict.accepted:
        return None
    timing = case_timing(verdict, label)
    if timing is None:
        return None
    spread = timing.candidate_graph.spread
    spread = spread if math.isfinite(spread) else 0.0
    if timing.speedup_vs_compile is not None and measured(timing.speedup_vs_compile):
        return CaseScore(timing.speedup_vs_compile, "torch.compile", spread)
    if measured(timing.speedup_vs_eager):
        return CaseScore(timing.speedup_vs_eager, "eager", spread)
    return None


def beats_at_case(challenger: CaseScore | None, held: CaseScore | None) -> bool:
    """True when `challenger` is faster at this case than `held` by more than the noise of
    either (the rule Fitness.beats applies to geomeans), over the same baseline."""
    if challenger is None:
        return False
    if held is None:
        return True
    if challenger.baseline != held.baseline:
        return False  # not comparable: keep what is held
    return challenger.speedup > held.speedup * (1.0 + max(challenger.spread, held.spread))


def per_case_winners(
    cases: Iterable[dict[str, Any]],
    overall: tuple[Entry, Verdict],
    contenders: Iterable[tuple[Entry, Verdict]],
) -> list[CaseWinner]:
    """Each case with the candidate that serves it. `overall` is the run's winner (its
    re-measured verdict on a GPU); `contenders` the archive's per-case bests and the
    finalists. Untimed runs (a CPU) give every case to the overall winner."""
    winner_entry, winner_verdict = overall
    pool = [(e, v) for e, v in contenders if v.accepted and e.sha256 != winner_entry.sha256]
    served: list[CaseWinner] = []
    for case in cases:
        label = case_label(case)
        entry, verdict = winner_entry, winner_verdict
        score = case_score(winner_verdict, label)
        for challenger, challenger_verdict in pool:
            challenger_score = case_score(challenger_verdict, label)
            if beats_at_case(challenger_score, score):
                entry, verdict, score = challenger, challenger_verdict, challenger_score
        served.append(CaseWinner(dict(case), label, entry, verdict, score))
    return served


def distinct_entries(winners: list[CaseWinner]) -> list[Entry]:
    """The candidates that serve at least one case, in case order, each once."""
    seen: dict[str, Entry] = {}
    for winner in winners:
        seen.setdefault(winner.entry.sha256, winner.entry)
    return list(seen.values())
