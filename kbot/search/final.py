"""Choosing the final kernel of a run: the best finalist, or the module that dispatches by
size to the per-size winners when the evaluator accepts it and the single best does not beat
it above the noise floor."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kbot.evaluate.verdict import Verdict
from kbot.problem import ProblemSpec
from kbot.propose.base import source_hash
from kbot.search.archive import Entry
from kbot.search.by_size import (
    COMPOSE_PROPOSER,
    SizePlan,
    by_size_report,
    plan_by_size,
    single_plan,
)
from kbot.search.fitness import Fitness, fitness_of

if TYPE_CHECKING:
    from kbot.search.loop import LoopResult, SearchLoop
    from kbot.search.store import Store

COMPOSE_KIND = "compose"  # the store's verdict kind of a module composed of per-size winners
Ranked = tuple[Fitness, Entry, Verdict]


@dataclass(frozen=True)
class BySize:
    plan: SizePlan
    composed: Ranked | None  # the accepted module dispatching by size, when it won


def best_finalist(
    result: LoopResult, finalists: list[tuple[Entry, Verdict]], count: int
) -> Ranked | None:
    """The best accepted contender: the re-measured finalists on a GPU; untimed (CPU) runs
    re-measure nothing, so the first verdicts of the elites stand, as they do for a run
    stopped by a signal or by its time budget before the re-measurement."""
    contenders = finalists or [(e, e.verdict) for e in result.archive.elites(count)]
    ranked = sorted(
        (
            (fitness_of(verdict, entry.source), entry, verdict)
            for entry, verdict in contenders
            if verdict.accepted
        ),
        key=lambda item: item[0].sort_key(),
        reverse=True,
    )
    return ranked[0] if ranked else None


def final_winner(
    result: LoopResult, finalists: list[tuple[Entry, Verdict]], count: int, sized: BySize | None
) -> Ranked | None:
    if sized is not None and sized.composed is not None:
        return sized.composed
    return best_finalist(result, finalists, count)


def final_by_size(
    problem: ProblemSpec,
    winner: Ranked | None,
    sized: BySize | None,
    original_path: str = "eager",
) -> dict[str, Any] | None:
    """report.json's `by_size` for the final winner (kbot.search.by_size.by_size_report)."""
    if winner is None:
        return None
    composed = sized is not None and sized.composed is not None
    plan = sized.plan if sized is not None else single_plan(problem, (winner[1], winner[2]), "")
    return by_size_report(problem, plan, winner[2], composed=composed, original_path=original_path)


def by_size_candidate(
    store: Store,
    run_id: str,
    problem: ProblemSpec,
    env_key: str,
    loop: SearchLoop,
    result: LoopResult,
    finalists: list[tuple[Entry, Verdict]],
    count: int,
) -> BySize | None:
    """Per-size winners; when more than one candidate serves, their composed module is
    checked by the evaluator like any candidate (on a GPU timed in one worker beside the
    overall winner, as finalists are) and wins unless the overall winner beats it above the
    noise floor. Bounded like every evaluation (raises Abandoned)."""
    winner = best_finalist(result, finalists, count)
    if winner is None:
        return None
    plan = plan_by_size(problem, (winner[1], winner[2]), result.archive, finalists)
    if plan.note:
        result.notes.append(plan.note)
    source = plan.composed_source
    if source is None:
        return BySize(plan, None)
    sha = source_hash(source)
    verdict = store.cached_verdict(sha, problem.source_sha256, env_key, kind=COMPOSE_KIND)
    single = winner
    if verdict is None:
        if winner[2].timed:
            pair = [source, winner[1].source]
            verdict, again = loop.bounded(lambda: loop.evaluator.remeasure(problem, pair))
            single = (fitness_of(again, winner[1].source), winner[1], again)
        else:
            verdict = loop.bounded(
                lambda: loop.evaluator.evaluate(problem, source, "composed_by_size.py")
            )
        store.put_verdict(run_id, sha, problem.source_sha256, env_key, verdict, kind=COMPOSE_KIND)
    fitness = fitness_of(verdict, source)
    if not verdict.accepted or single[0].beats(fitness):
        why = (
            f"the evaluator rejected it ({'; '.join(str(r) for r in verdict.reasons[:2])})"
            if not verdict.accepted
            else f"the overall winner ({single[0].describe()}) beat it ({fitness.describe()})"
        )
        note = f"per-size module not used: {why}"
        result.notes.append(note)
        return BySize(single_plan(problem, (single[1], single[2]), note), None)
    entry = Entry(
        sha256=sha,
        source=source,
        proposer=COMPOSE_PROPOSER,
        parents=tuple(v.sha256 for v in plan.variants),
        params={"schedule": "by_size", "variants": {v.tag: v.sha256[:12] for v in plan.variants}},
        generation=max((e.generation for e in result.entries.values()), default=0),
        island=0,
        verdict=verdict,
        fitness=fitness,
    )
    result.entries[sha] = entry
    return BySize(plan, (fitness, entry, verdict))
