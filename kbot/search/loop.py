"""The main loop: propose, evaluate, archive, generation after generation. The only writer of
the store: it gathers a generation's candidates (kbot.search.gathering), evaluates them
(kbot.search.evaluating) and admits each verdict (kbot.search.population).

Resuming is replay: a generation's proposals are recorded before any is evaluated and every
verdict is committed as it arrives, so running the loop again over the same run id takes the
recorded proposals and cached verdicts of finished work (no proposer call, no evaluation) and
continues where the killed process stopped. Parent selection uses one seeded generator per
(generation, island), so the replayed archive and islands are the ones the first process had.
"""

from __future__ import annotations

import functools
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field

from kbot.problem import ProblemSpec
from kbot.propose.base import Proposer
from kbot.search.archive import Archive, Entry
from kbot.search.budget import BudgetTracker, StopReason, StopRequest, early_stop
from kbot.search.evaluating import BoundedEvaluator, CandidateEvaluator
from kbot.search.gathering import Gathering
from kbot.search.inflight import Abandoned
from kbot.search.options import OptimizeOptions
from kbot.search.population import GenerationSummary, Population
from kbot.search.progress import NullProgress, Progress
from kbot.search.store import RunCandidate, Store
from kbot.search.trajectories import TrajectoryLog


@dataclass
class LoopResult:
    stop_reason: StopReason
    archive: Archive
    entries: dict[str, Entry]
    generations: list[GenerationSummary]
    fresh_evaluations: int  # evaluator calls made by this process
    cached_verdicts: int  # verdicts taken from the store
    notes: list[str] = field(default_factory=list)  # proposers' skipped reasons and failures
    elapsed_s: float = 0.0
    first_accepted_s: float | None = None  # run time when the first candidate was accepted


class SearchLoop:
    def __init__(
        self,
        store: Store,
        run_id: str,
        problem: ProblemSpec,
        env_key: str,
        device: str,
        options: OptimizeOptions,
        proposers: Sequence[Proposer],
        evaluator: CandidateEvaluator,
        progress: Progress | None = None,
        spent_before_s: float = 0.0,
        stop_request: StopRequest | None = None,
        trajectories: TrajectoryLog | None = None,
    ) -> None:
        self.store = store
        self.run_id = run_id
        self.problem = problem
        self.env_key = env_key
        self.options = options
        self.progress = progress or NullProgress()
        self.tracker = BudgetTracker(options.budget, spent_before_s=spent_before_s)
        spent = store.ledger.usage(run_id)  # a resumed run's earlier sessions paid these
        self.tracker.tokens, self.tracker.usd = spent.tokens, spent.usd
        self.stop_request = stop_request or StopRequest()
        self.population = Population(
            store, run_id, problem, options, self.tracker, self.progress, trajectories
        )
        self.gathering = Gathering(
            store, run_id, problem, device, options, list(proposers), self.population,
            self.tracker, self.stop_request, self.progress,
        )  # fmt: skip
        self.evaluation = BoundedEvaluator(
            evaluator, store, problem, env_key, options, self.tracker, self.stop_request
        )
        self.fresh = 0
        self.cached = 0
        self._next_generation = 0  # the generation after the last one started
        self.summaries: list[GenerationSummary] = []

    def start_slow_seeds(self) -> None:
        """A fresh run's slow seeds start before the evaluator is prepared (Gathering.
        start_detached); a resumed run that recorded generation 0 already does not ask again."""
        if not any(c.generation == 0 for c in self.store.run_candidates(self.run_id)):
            self.gathering.start_detached()

    def run(self) -> LoopResult:
        self.tracker.start_clock()  # the evaluator's preparation is not the search's time
        try:
            with self.stop_request:
                stop = self._generations()
                stop = self._last_seeds(stop)
        except KeyboardInterrupt:  # a second Ctrl-C, or one outside the main thread's handler
            stop = StopReason.INTERRUPTED
        self.gathering.drain_background()
        if self.evaluation.stopped_during:
            self.gathering.note(
                f"evaluation stopped at the run's end during {self.evaluation.stopped_during}"
            )
        self.gathering.account_for_proposers()
        self.store.update_run(self.run_id, spent_s=self.tracker.elapsed_s())
        return LoopResult(
            stop_reason=stop,
            archive=self.population.archive,
            entries=self.population.entries,
            generations=self.summaries,
            fresh_evaluations=self.fresh,
            cached_verdicts=self.cached,
            notes=self.gathering.notes,
            elapsed_s=self.tracker.elapsed_s(),
            first_accepted_s=self.population.first_accepted_s,
        )

    def _generations(self) -> StopReason:
        recorded: dict[int, list[RunCandidate]] = defaultdict(list)
        for candidate in self.store.run_candidates(self.run_id):
            recorded[candidate.generation].append(candidate)
        gathering, population = self.gathering, self.population
        stale_generations = 0
        generations = self.options.budget.generations
        for generation in range(generations):
            self._next_generation = generation + 1
            self.progress.generation_started(generation, generations)
            candidates = recorded.get(generation)
            if candidates is None:
                stop = self.tracker.exhausted()
                if stop:
                    return stop
                candidates = gathering.propose(generation)
                if self.stop_request.requested or gathering.abandoned == "stop":
                    return StopReason.INTERRUPTED
                if gathering.abandoned == "time":
                    return StopReason.TIME
                if not candidates and gathering.waiting(with_detached=True) is None:
                    return StopReason.EXHAUSTED
            improved, stop = self._evaluate_all(generation, candidates)
            if not stop and not candidates and not gathering.recorded_late:
                return StopReason.EXHAUSTED  # the model's asks brought nothing either
            if stop:
                # a generation cut short still shows in the report
                if population.has_generation(generation):
                    self.summaries.append(population.close_generation(generation))
                return stop
            self.summaries.append(population.close_generation(generation))
            if (generation + 1) % self.options.migration_interval == 0:
                population.islands.migrate()
            stale_generations = 0 if improved else stale_generations + 1
            best = population.archive.best
            stop = early_stop(best.fitness if best else None, stale_generations, self.options)
            if stop:
                return stop
        return StopReason.GENERATIONS

    def _last_seeds(self, stop: StopReason) -> StopReason:
        """A search that ends on its own (generations, patience, nothing left) while detached
        seeds are still coming (the inductor proposer compiling the problem) waits for them,
        inside the time budget, and evaluates them as one more generation: torch.compile's own
        kernel is the candidate most likely to hold its ground at every size."""
        if stop not in (StopReason.GENERATIONS, StopReason.PATIENCE, StopReason.EXHAUSTED):
            return stop
        if self.gathering.detached is None:
            return stop
        generation = self._next_generation
        self.progress.generation_started(generation, generation + 1)
        _, late_stop = self._evaluate_all(generation, [])
        if self.population.has_generation(generation):
            self.summaries.append(self.population.close_generation(generation))
        return late_stop or stop

    def _evaluate_all(
        self, generation: int, candidates: list[RunCandidate]
    ) -> tuple[bool, StopReason | None]:
        gathering, evaluation = self.gathering, self.evaluation
        improved = False
        pending = [c for c in candidates if c.sha256 not in self.population.entries]
        index = 0
        while True:
            queued = {c.sha256 for c in pending}
            first, later = gathering.harvest(generation)
            pending[index:index] = [c for c in first if c.sha256 not in queued]
            pending += [c for c in later if c.sha256 not in queued]
            if index >= len(pending):
                # a generation of its own candidates does not wait for the detached seeds
                asks = gathering.waiting(with_detached=not candidates)
                if asks is None:
                    break
                why = gathering.wait_for_model(asks)
                if why is not None:
                    return improved, StopReason.TIME if why == "time" else StopReason.INTERRUPTED
                continue
            if self.stop_request.requested:
                return improved, StopReason.INTERRUPTED
            candidate = pending[index]
            verdict = evaluation.cached(candidate)
            if verdict is not None:
                budget = self.options.budget.max_candidates
                if budget is not None and self.tracker.candidates >= budget:
                    return improved, StopReason.CANDIDATES
                self.cached += 1
                improved |= self.population.admit(generation, candidate, verdict)
                index += 1
                continue
            stop = self.tracker.exhausted(spending=False)  # what was paid for is evaluated
            if stop:
                if stop is not StopReason.CANDIDATES:
                    improved |= self._admit_stored(generation, pending[index + 1 :])
                return improved, stop
            batch = evaluation.batch(pending, index)
            started = self.tracker.clock()
            try:
                verdicts = evaluation.bounded(functools.partial(evaluation.evaluate, batch))
            except Abandoned as abandoned:  # the budget ran out or a signal came mid-evaluation
                stored = self._admit_stored(generation, pending[index + len(batch) :])
                return improved | stored, (
                    StopReason.TIME if abandoned.why == "time" else StopReason.INTERRUPTED
                )
            timed = any(v.timed for v in verdicts)
            self.tracker.observe(
                self.tracker.clock() - started, self.options.finalists if timed else 0
            )
            if self.stop_request.requested:  # these verdicts are dropped (see StopRequest)
                return improved, StopReason.INTERRUPTED
            for member, verdict in zip(batch, verdicts):
                self.store.put_verdict(
                    self.run_id, member.sha256, self.problem.source_sha256, self.env_key, verdict
                )
                self.fresh += 1
                improved |= self.population.admit(generation, member, verdict)
            index += len(batch)
        return improved, None

    def _admit_stored(self, generation: int, rest: list[RunCandidate]) -> bool:
        """At a stop, the candidates still queued whose verdicts the store already holds: a
        killed process evaluated them out of the recorded order (torch.compile's kernel, a
        detached seed, jumps the queue), and a resumed run whose budget was spent stopped at
        the first candidate without one. nano-vllm's silu_and_mul resumed so lost its 1.00x
        inductor candidate and reported codegen's 0.76x."""
        improved = False
        for candidate in rest:
            if candidate.sha256 in self.population.entries:
                continue
            verdict = self.evaluation.cached(candidate)
            if verdict is not None:
                self.cached += 1
                improved |= self.population.admit(generation, candidate, verdict)
        return improved
