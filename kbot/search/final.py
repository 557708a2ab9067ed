"""Choosing the final kernel of a run: the best finalist, or the module that dispatches by
size to the per-size winners when the evaluator accepts it and the single best does not beat
it above the noise floor."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kbot.evaluate.verdict import Verdict
from kbot.problem import ProblemSpec
from kbot.propose.base import source_hash
from kbot.search.archive import Entry
from kbot.search.budget import StopReason
from kbot.search.by_size import (
    COMPOSE_PROPOSER,
    SizePlan,
    by_size_report,
    plan_by_size,
    single_plan,
)
from kbot.search.fitness import Fitness, fitness_of
from kbot.search.inflight import Abandoned, call_bounded
from kbot.search.sweep import SweepPoint, run_sweep

if TYPE_CHECKING:
    from kbot.search.evaluating import CandidateEvaluator
    from kbot.search.loop import LoopResult, SearchLoop
    from kbot.search.store import Store

COMPOSE_KIND = "compose"  # the store's verdict kind of a module composed of per-size winners
# How far past the time budget the shape sweep may run: a share of the budget, and at least
# SWEEP_GRACE_MIN_S. Its checks decide what the PR's guard admits (kbot.search.sweep): cut
# short, the guard pins the kernel to the run's own sizes (a 40 s budget left 4 s, and no
# point was checked in the real-repository bench of 2026-12-03).
SWEEP_GRACE_SHARE = 0.1
SWEEP_GRACE_MIN_S = 30.0
# ... and at least this many of the run's evaluations (the median's wall time): the per-size
# module's judgement is its correctness trials, then its timing beside the winner's (H100,
# gelu_tanh_and_mul at a 150 s budget, 2026-12-07: 22-33 s an evaluation; a 30 s grace
# abandoned the module, and a 0.96x prefill case stayed where the same run had measured an
# extraction of torch.compile's kernel at 1.00x).
GRACE_EVALUATIONS = 1.5
Ranked = tuple[Fitness, Entry, Verdict]


@dataclass(frozen=True)
class Fallback:
    """A final kernel specialised to the problem's sizes and the generic one that serves every
    other size beside it (kbot.search.fallback)."""

    specialised: Entry
    generic: Entry

    def to_json(self) -> dict[str, Any]:
        """report.json's `by_size.fallback`."""
        return {
            role: {"sha256": entry.sha256, "proposer": entry.proposer}
            for role, entry in (("specialised", self.specialised), ("generic", self.generic))
        }


@dataclass(frozen=True)
class BySize:
    plan: SizePlan
    composed: Ranked | None  # the accepted module dispatching by size, when it won
    fallback: Fallback | None = None  # when `composed` is a specialised winner's fallback module


def best_finalist(
    result: LoopResult, finalists: list[tuple[Entry, Verdict]], count: int
) -> Ranked | None:
    """The best accepted contender: the re-measured finalists on a GPU; untimed (CPU) runs
    re-measure nothing, so the first verdicts of the elites stand, as they do for a run
    stopped by a signal or by its time budget before the re-measurement. A kernel specialised
    to the problem's own sizes wins only by beating the best generic one above the noise
    floor: at equal speed the PR gets the kernel that serves other models' sizes too."""
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
    if not ranked:
        return None
    generic = next((r for r in ranked if not specialised(r[1])), None)
    if specialised(ranked[0][1]) and generic is not None and not ranked[0][0].beats(generic[0]):
        return generic
    return ranked[0]


def specialised(entry: Entry) -> bool:
    """torch.compile's own kernels (the inductor proposers): compiled for the problem's model
    sizes, only the dims its cases vary left dynamic (kbot.propose.inductor.capture), so the
    shape sweep fails them at other hidden sizes; a winner of theirs gets a generic fallback
    (kbot.search.fallback), else the PR's guard pins the size."""
    return entry.params.get("schedule") == "inductor"


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
    plan = sized.plan if sized is not None else single_plan(problem, (winner[1], winner[2]), "")
    # a generic fallback alone composes no sizes: `fallback` says what it adds
    composed = sized is not None and sized.composed is not None and len(plan.variants) > 1
    report = by_size_report(
        problem, plan, winner[2], composed=composed, original_path=original_path
    )
    if sized is not None and sized.fallback is not None:
        report["fallback"] = sized.fallback.to_json()
    return report


def by_size_candidate(
    store: Store,
    run_id: str,
    problem: ProblemSpec,
    env_key: str,
    loop: SearchLoop,
    result: LoopResult,
    finalists: list[tuple[Entry, Verdict]],
    count: int,
    fresh_evaluator: Callable[[], AbstractContextManager[CandidateEvaluator]],
) -> BySize | None:
    """Per-size winners; when more than one candidate serves, their composed module is
    checked by the evaluator like any candidate (on a GPU timed in one worker beside the
    overall winner, as finalists are) and wins unless the overall winner beats it above the
    noise floor. It decides whether the PR is slower than the path it replaces at any size,
    so like the shape sweep it may run past the time budget by the sweep's grace
    (`judge_in_grace`; a 150 s budget on the H100 once spent its last seconds re-measuring
    and left a 0.85x prefill case that a composed module would have served at 1.00x).
    Raises Abandoned."""
    winner = best_finalist(result, finalists, count)
    if winner is None:
        return None
    plan = plan_by_size(problem, (winner[1], winner[2]), result.archive, finalists)
    if plan.note:
        result.notes.append(plan.note)
    source = plan.composed_source
    if source is None:
        return BySize(plan, None)
    verdict, single = judge_in_grace(store, run_id, problem, env_key, loop, source, winner,
                                     fresh_evaluator, "composed_by_size.py")  # fmt: skip
    fitness = fitness_of(verdict, source)
    why = refused(verdict, fitness, single, "the overall winner")
    if why:
        note = f"per-size module not used: {why}"
        result.notes.append(note)
        return BySize(single_plan(problem, (single[1], single[2]), note), None)
    params = {"schedule": "by_size", "variants": {v.tag: v.sha256[:12] for v in plan.variants}}
    entry = composed_entry(result, source, tuple(v.sha256 for v in plan.variants), params,
                           verdict)  # fmt: skip
    return BySize(plan, (fitness, entry, verdict))


def refused(verdict: Verdict, fitness: Fitness, held: Ranked, held_as: str) -> str:
    """Why a composed module is not used ("" when it is): the evaluator rejected it, or what
    it would replace (`held`, described as `held_as`) beat it above the noise floor."""
    if not verdict.accepted:
        return f"the evaluator rejected it ({'; '.join(str(r) for r in verdict.reasons[:2])})"
    if held[0].beats(fitness):
        return f"{held_as} ({held[0].describe()}) beat it ({fitness.describe()})"
    return ""


def judge_composed(
    store: Store,
    run_id: str,
    problem: ProblemSpec,
    env_key: str,
    source: str,
    winner: Ranked,
    judge: CandidateEvaluator,
    bounded: Callable[[Callable[[], Any]], Any],
    name: str,
) -> tuple[Verdict, Ranked]:
    """A composed module's verdict (the store's, when a resumed run has it) and the winner it
    is compared with: on a GPU the two timed in one worker (`judge.remeasure`), the winner's
    new verdict returned with it. Each call runs under `bounded` (raises Abandoned)."""
    sha = source_hash(source)
    verdict = store.cached_verdict(sha, problem.source_sha256, env_key, kind=COMPOSE_KIND)
    if verdict is not None:
        return verdict, winner
    single = winner
    if winner[2].timed:
        pair = [source, winner[1].source]
        verdict, again = bounded(lambda: judge.remeasure(problem, pair))
        single = (fitness_of(again, winner[1].source), winner[1], again)
    else:
        verdict = bounded(lambda: judge.evaluate(problem, source, name))
    store.put_verdict(run_id, sha, problem.source_sha256, env_key, verdict, kind=COMPOSE_KIND)
    return verdict, single


def judge_in_grace(
    store: Store,
    run_id: str,
    problem: ProblemSpec,
    env_key: str,
    loop: SearchLoop,
    source: str,
    winner: Ranked,
    fresh_evaluator: Callable[[], AbstractContextManager[CandidateEvaluator]],
    name: str,
) -> tuple[Verdict, Ranked]:
    """`judge_composed` on the run's evaluator, or on a fresh one when the budget's end closed
    it, bounded by the sweep's grace (`grace_deadline`) and stop requests."""
    tracker = loop.tracker
    reuse = not loop.evaluation.closed
    with nullcontext(loop.evaluation.evaluator) if reuse else fresh_evaluator() as judge:
        cancel = getattr(judge, "abort", None) or getattr(judge, "close", None)

        def bounded(call: Callable[[], Any]) -> Any:
            return call_bounded(call, grace_deadline(loop), lambda: loop.stop_request.requested,
                                cancel, tracker.clock)  # fmt: skip

        try:
            return judge_composed(store, run_id, problem, env_key, source, winner, judge,
                                  bounded, name)  # fmt: skip
        except Abandoned:
            if reuse:  # cancelled: the steps after this one start a fresh evaluator
                loop.evaluation.closed = True
            raise


def composed_entry(
    result: LoopResult,
    source: str,
    parents: tuple[str, ...],
    params: dict[str, Any],
    verdict: Verdict,
) -> Entry:
    """The composed module as an entry of the run (the compose proposer's), recorded there."""
    sha = source_hash(source)
    entry = Entry(
        sha256=sha,
        source=source,
        proposer=COMPOSE_PROPOSER,
        parents=parents,
        params=params,
        generation=max((e.generation for e in result.entries.values()), default=0),
        island=0,
        verdict=verdict,
        fitness=fitness_of(verdict, source),
    )
    result.entries[sha] = entry
    return entry


def sweep_winner(
    store: Store,
    run_id: str,
    env_key: str,
    loop: SearchLoop,
    result: LoopResult,
    winner: Any,
    points: tuple[list[SweepPoint], str],
    fresh_evaluator: Callable[[], AbstractContextManager[CandidateEvaluator]],
) -> dict[str, Any] | None:
    """report.json's `sweep` (None without a winner): the final kernel checked at other models' sizes (kbot.search.sweep), each point's
    verdict stored like any other, so a resumed run checks no point twice. The checks are what
    the PR's guard admits, so they may run past the time budget by SWEEP_GRACE_SHARE of it and
    at least SWEEP_GRACE_MIN_S (on a fresh evaluator when the budget's end closed the search's);
    a signal, or the grace's end, leaves the guard pinned to the run's own sizes."""
    if winner is None:
        return None
    found, why = points
    if not found:
        return {"points": [], "note": f"not swept: {why}"}
    entry, tracker = winner[1], loop.tracker
    deadline = grace_deadline(loop)
    reuse = not loop.evaluation.closed
    checked: list[dict[str, Any]] = []
    with nullcontext(loop.evaluation.evaluator) if reuse else fresh_evaluator() as sweeper:
        cancel = getattr(sweeper, "abort", None) or getattr(sweeper, "close", None)

        def check(variant: ProblemSpec, source: str, name: str, upcoming: int) -> Verdict:
            return call_bounded(
                lambda: sweeper.evaluate_sweep(variant, source, name, upcoming),
                deadline, lambda: loop.stop_request.requested, cancel, tracker.clock,
            )  # fmt: skip

        try:
            return run_sweep(
                check, entry.source, found,
                cached=lambda v: store.cached_verdict(entry.sha256, v.source_sha256, env_key,
                                                      "sweep"),
                record=lambda v, verdict: store.put_verdict(
                    run_id, entry.sha256, v.source_sha256, env_key, verdict, kind="sweep"),
                checked=checked,
            )  # fmt: skip
        except Abandoned as abandoned:
            why = "its time ran out" if abandoned.why == "time" else "stopped"
            result.notes.append(f"shape sweep not finished: {why}")
            if abandoned.why == "stop":
                result.stop_reason = StopReason.INTERRUPTED
            if not checked:
                return {"points": [], "note": f"not swept: {why}"}
            # What was checked stands; `partial`: the guard admits those sizes only, not the
            # ranges between them (kbot.publish.swept)
            note = f"{len(checked)} of {len(found)} points checked before {why}"
            return {"points": checked, "partial": True, "note": note}


def grace_deadline(loop: SearchLoop) -> float | None:
    """The time budget's end, or SWEEP_GRACE_SHARE of the budget (at least SWEEP_GRACE_MIN_S)
    from now when that is later: what the checks that decide the PR's guard may take."""
    tracker = loop.tracker
    deadline = tracker.deadline()
    if deadline is None:
        return None
    grace = max(
        SWEEP_GRACE_SHARE * (tracker.budget.time_s or 0.0),
        SWEEP_GRACE_MIN_S,
        GRACE_EVALUATIONS * (tracker.median_wall_s or 0.0),
    )
    return max(deadline, tracker.clock() + grace)


def sweep_summary(swept: dict[str, Any]) -> str:
    """`4 passed, 1 not applicable`: how many sweep points ended how."""
    counts = Counter(p["status"] for p in swept.get("points") or [])
    return ", ".join(f"{n} {status}" for status, n in counts.items())
