"""How the search calls the evaluator: every call bounded by the time budget and stop requests
(kbot.search.inflight), uncached candidates batched one per GPU, verdicts the store already
holds taken from it."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol, TypeVar

from kbot.evaluate.verdict import Verdict
from kbot.problem import ProblemSpec
from kbot.search.budget import BudgetTracker, StopRequest
from kbot.search.inflight import Abandoned, call_bounded
from kbot.search.options import OptimizeOptions
from kbot.search.store import RunCandidate, Store

T = TypeVar("T")


class CandidateEvaluator(Protocol):
    """The part of `kbot.evaluate.Evaluator` the search uses."""

    def evaluate(
        self, problem: ProblemSpec, candidate_source: str, candidate_name: str = "candidate.py"
    ) -> Verdict: ...

    def evaluate_many(self, problem: ProblemSpec, sources: list[str]) -> Sequence[Verdict]: ...

    def remeasure(self, problem: ProblemSpec, sources: list[str]) -> Sequence[Verdict]: ...

    def evaluate_sweep(
        self,
        problem: ProblemSpec,
        candidate_source: str,
        candidate_name: str = "candidate.py",
        upcoming: int = 0,
    ) -> Verdict: ...


@dataclass(eq=False)  # compared by identity: one per run
class BoundedEvaluator:
    """The run's evaluator, shared by the loop and what follows it (finalists, per-size module,
    shape sweep). Once a call is abandoned the evaluator is closed (`closed`)."""

    evaluator: CandidateEvaluator
    store: Store
    problem: ProblemSpec
    env_key: str
    options: OptimizeOptions
    tracker: BudgetTracker
    stop_request: StopRequest
    closed: bool = field(default=False, init=False)  # a call was abandoned, the evaluator closed
    stopped_during: str = field(default="", init=False)  # its phase then ("check x.py for 40 s")

    def bounded(self, call: Callable[[], T]) -> T:
        """`call()` (an evaluator call), abandoned at the time budget's end or on a stop
        request, when the evaluator is closed (kbot.search.inflight)."""
        if self.closed:  # a closed evaluator would start new workers for nothing
            raise Abandoned("stop" if self.stop_request.requested else "time")
        try:
            return call_bounded(
                call,
                self.tracker.deadline(),
                lambda: self.stop_request.requested,
                # killed at once: a busy worker cannot take a polite shutdown
                getattr(self.evaluator, "abort", None) or getattr(self.evaluator, "close", None),
                self.tracker.clock,
            )
        except Abandoned as abandoned:
            self.closed = True
            during = getattr(self.evaluator, "aborted_during", None)
            if during:  # where the evaluation in flight was, for the run's notes
                self.stopped_during = "; ".join(during)
            raise abandoned

    def cached(self, candidate: RunCandidate) -> Verdict | None:
        return self.store.cached_verdict(candidate.sha256, self.problem.source_sha256, self.env_key)

    def batch(self, pending: list[RunCandidate], index: int) -> list[RunCandidate]:
        """Uncached candidates to evaluate together: one per GPU of the pool (one on a CPU),
        never more than the candidate budget has left."""
        size = max(1, len(self.options.gpus))
        budget = self.options.budget.max_candidates
        if budget is not None:
            size = max(1, min(size, budget - self.tracker.candidates))
        batch = [pending[index]]
        for candidate in pending[index + 1 :]:
            if len(batch) >= size or self.cached(candidate) is not None:
                break
            batch.append(candidate)
        return batch

    def evaluate(self, batch: list[RunCandidate]) -> Sequence[Verdict]:
        if len(batch) == 1:
            name = f"candidate_{batch[0].sha256[:12]}.py"
            return [self.evaluator.evaluate(self.problem, batch[0].source, name)]
        return self.evaluator.evaluate_many(self.problem, [c.source for c in batch])
