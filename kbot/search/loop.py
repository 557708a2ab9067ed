"""The main loop: propose, evaluate, archive, generation after generation. The only writer of
the store.

Resuming is replay: a generation's proposals are recorded before any is evaluated and every
verdict is committed as it arrives, so running the loop again over the same run id takes the
recorded proposals and cached verdicts of finished work (no proposer call, no evaluation) and
continues where the killed process stopped. Parent selection uses one seeded generator per
(generation, island), so the replayed archive and islands are the ones the first process had.
"""

from __future__ import annotations

import dataclasses
import functools
import random
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol, TypeVar

from kbot.evaluate.verdict import Verdict
from kbot.problem import ProblemSpec
from kbot.propose.base import Proposal, ProposeContext, ProposeOutcome, Proposer
from kbot.search.archive import Archive, Entry
from kbot.search.budget import BudgetTracker, StopReason, StopRequest
from kbot.search.fitness import fitness_of
from kbot.search.inflight import Abandoned, call_bounded
from kbot.search.islands import Islands
from kbot.search.options import OptimizeOptions
from kbot.search.overlap import Answered, Ask, BackgroundAsks, overlaps_evaluation
from kbot.search.progress import NullProgress, Progress, Snapshot
from kbot.search.proposing import ProposerStanding, as_parent, inherit_schedule, left
from kbot.search.selection import select_parents
from kbot.search.store import GenerationRecord, RunCandidate, Store
from kbot.search.trajectories import TrajectoryLog, step_record

T = TypeVar("T")


class CandidateEvaluator(Protocol):
    """The part of `kbot.evaluate.Evaluator` the search uses."""

    def evaluate(
        self, problem: ProblemSpec, candidate_source: str, candidate_name: str = "candidate.py"
    ) -> Verdict: ...

    def evaluate_many(self, problem: ProblemSpec, sources: list[str]) -> Sequence[Verdict]: ...

    def remeasure(self, problem: ProblemSpec, sources: list[str]) -> Sequence[Verdict]: ...

    def evaluate_sweep(
        self, problem: ProblemSpec, candidate_source: str, candidate_name: str = "candidate.py"
    ) -> Verdict: ...


@dataclass(frozen=True)
class GenerationSummary:
    generation: int
    best_sha256: str | None
    best_fitness: str  # Fitness.describe() of the best so far
    best_speedup: float | None
    evaluated: int
    accepted: int


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
        self.device = device
        self.options = options
        self.proposers = list(proposers)
        self.evaluator = evaluator
        self.progress = progress or NullProgress()
        self.tracker = BudgetTracker(options.budget, spent_before_s=spent_before_s)
        spent = store.ledger.usage(run_id)  # a resumed run's earlier sessions paid these
        self.tracker.tokens, self.tracker.usd = spent.tokens, spent.usd
        self.trajectories = trajectories
        # "time" or "stop" once a proposer was given up mid-call (see _ask)
        self.proposing_abandoned: str | None = None
        self.archive = Archive()
        self.islands = Islands(options.islands)
        self.entries: dict[str, Entry] = {}
        self.rejected: list[Entry] = []
        self.notes: list[str] = []
        self.fresh = 0
        self.first_accepted_s: float | None = None
        self.cached = 0
        self.summaries: list[GenerationSummary] = []
        self.stop_request = stop_request or StopRequest()
        self.evaluator_closed = False  # an evaluation was abandoned and the evaluator closed
        self.standing = ProposerStanding()
        # this generation's asks to proposers that wait on a model (kbot.search.overlap)
        self.background: BackgroundAsks | None = None
        self._background_generation = 0
        self._recorded_late = 0  # candidates the background asks brought this generation

    def run(self) -> LoopResult:
        try:
            with self.stop_request:
                stop = self._generations()
        except KeyboardInterrupt:  # a second Ctrl-C, or one outside the main thread's handler
            stop = StopReason.INTERRUPTED
        self._drain_background()
        for name, reason in self.standing.skipped.items():
            self._note(f"{name}: {reason}")
        self._note_unheard_proposers()
        self.store.update_run(self.run_id, spent_s=self.tracker.elapsed_s())
        return LoopResult(
            stop_reason=stop,
            archive=self.archive,
            entries=self.entries,
            generations=self.summaries,
            fresh_evaluations=self.fresh,
            cached_verdicts=self.cached,
            notes=self.notes,
            elapsed_s=self.tracker.elapsed_s(),
            first_accepted_s=self.first_accepted_s,
        )

    def _note_unheard_proposers(self) -> None:
        """Every proposer is accounted for in the run's message: one that offered candidates
        none of which was evaluated, or that was never asked before the run stopped (inductor
        seeds in generation 1), says so beside the others' reasons."""
        evaluated = {entry.proposer for entry in self.entries.values()}
        for proposer in self.proposers:
            name = proposer.name
            if name in evaluated or any(n.startswith(f"{name}:") for n in self.notes):
                continue
            if name in self.standing.productive:
                self._note(f"{name}: its candidates were not evaluated before the run stopped")
            else:
                late = (
                    " (it seeds in generation 1)" if getattr(proposer, "late_seed", False) else ""
                )
                self._note(f"{name}: not asked before the run stopped{late}")

    def _generations(self) -> StopReason:
        recorded: dict[int, list[RunCandidate]] = defaultdict(list)
        for candidate in self.store.run_candidates(self.run_id):
            recorded[candidate.generation].append(candidate)
        stale_generations = 0
        generations = self.options.budget.generations
        for generation in range(generations):
            self.progress.generation_started(generation, generations)
            candidates = recorded.get(generation)
            if candidates is None:
                stop = self.tracker.exhausted()
                if stop:
                    return stop
                candidates = self._propose(generation)
                if self.stop_request.requested or self.proposing_abandoned == "stop":
                    return StopReason.INTERRUPTED
                if self.proposing_abandoned == "time":
                    return StopReason.TIME
                if not candidates and self.background is None:
                    return StopReason.EXHAUSTED
            improved, stop = self._evaluate_all(generation, candidates)
            if not stop and not candidates and not self._recorded_late:
                return StopReason.EXHAUSTED  # the model's asks brought nothing either
            if stop:
                # a generation cut short still shows in the report
                if any(e.generation == generation for e in self.entries.values()):
                    self.summaries.append(self._close_generation(generation))
                return stop
            self.summaries.append(self._close_generation(generation))
            if (generation + 1) % self.options.migration_interval == 0:
                self.islands.migrate()
            stale_generations = 0 if improved else stale_generations + 1
            stop = self._early_stop(stale_generations)
            if stop:
                return stop
        return StopReason.GENERATIONS

    # proposing

    def _propose(self, generation: int) -> list[RunCandidate]:
        """Asks the proposers in line and returns their candidates, recorded; asks to
        proposers that wait on a model start in the background (self.background) and their
        candidates join the generation as they come (_evaluate_all)."""
        placed: list[tuple[int, Proposal]] = []
        later: list[Ask] = []
        self._recorded_late = 0
        # Seeds: every proposer once, without parents; spread over the islands.
        for index, proposer in enumerate(self._seeders(generation)):
            if overlaps_evaluation(proposer):
                later.append(Ask(proposer, (), -1, self.options.islands * 2))
                continue
            proposals = self._ask(proposer, (), generation, index, self.options.islands * 2)
            placed.extend((i % self.options.islands, p) for i, p in enumerate(proposals))
        if generation > 0:
            for island in range(self.options.islands):
                rng = random.Random(f"{self.options.seed}/{generation}/{island}")
                parents = select_parents(
                    self.islands.members(island),
                    self.archive,
                    self.rejected,
                    rng,
                    self.options.exploit_probability,
                )
                if not parents:
                    continue
                for proposer in self.proposers:
                    if self.standing.is_dry(proposer.name):
                        continue
                    if overlaps_evaluation(proposer):
                        later.append(
                            Ask(proposer, parents, island, self.options.proposals_per_island)
                        )
                        continue
                    proposals = self._ask(
                        proposer, parents, generation, island, self.options.proposals_per_island
                    )
                    placed.extend((island, p) for p in proposals)
        recorded = self.store.record_proposals(self.run_id, generation, placed)
        if later and not self.proposing_abandoned:
            tokens, usd = self.tracker.tokens, self.tracker.usd

            def context_for(ask: Ask, spent_tokens: int, spent_usd: float) -> ProposeContext:
                island = ask.island if ask.island >= 0 else 0
                return self._context(
                    ask.parents, generation, island, ask.max_proposals,
                    tokens + spent_tokens, usd + spent_usd,
                )  # fmt: skip

            self.background = BackgroundAsks(later, context_for).start()
            self._background_generation = generation
        return recorded

    def _harvest(self, generation: int) -> list[RunCandidate]:
        """The candidates of the background asks answered since the last look, recorded."""
        if self.background is None:
            return []
        placed: list[tuple[int, Proposal]] = []
        for answered in self.background.take_ready():
            placed.extend(self._placed(answered, generation))
        if self.background.finished:
            self.background = None
        if not placed:
            return []
        recorded = self.store.record_proposals(self.run_id, generation, placed)
        self._recorded_late += len(recorded)
        return recorded

    def _placed(self, answered: Answered, generation: int) -> list[tuple[int, Proposal]]:
        ask = answered.ask
        if answered.outcome is None:
            self._note(f"{ask.proposer.name}: failed in generation {generation}: {answered.error}")
            return []
        proposals = self._answered(
            ask.proposer, ask.parents, generation, ask.max_proposals, answered.outcome
        )
        if ask.island >= 0:
            return [(ask.island, p) for p in proposals]
        return [(i % self.options.islands, p) for i, p in enumerate(proposals)]  # seeds

    def _wait_for_model(self) -> str | None:
        """Nothing left to evaluate but background asks under way: waits for the next answer.
        "time" or "stop" when the run must end first (the asks are then cancelled)."""
        assert self.background is not None
        why = self.background.wait_next(
            self.tracker.deadline(), lambda: self.stop_request.requested, self.tracker.clock
        )
        if why == "time":
            self._note(f"{self._waiting_names()}: still proposing when the time budget ran out")
        return why

    def _waiting_names(self) -> str:
        names = self.background.proposer_names if self.background is not None else []
        return ", ".join(names) or "a proposer"

    def _drain_background(self) -> None:
        """At the run's end: no further ask starts, and what was answered (paid for) is
        recorded, so a resumed run finds those replies in the store."""
        if self.background is None:
            return
        self.background.cancel()
        generation = self._background_generation
        for answered in self.background.take_ready():
            if answered.outcome is not None:
                self._answered(
                    answered.ask.proposer, answered.ask.parents, generation,
                    answered.ask.max_proposals, answered.outcome,
                )  # fmt: skip
        self.background = None

    def _seeders(self, generation: int) -> list[Proposer]:
        """Proposers asked for seeds in this generation: all in generation 0, except slow ones
        (`late_seed`: inductor compiles the problem first), which seed in generation 1 so that
        codegen's seeds are measured first — unless the run has one generation only."""
        late = [p for p in self.proposers if getattr(p, "late_seed", False)]
        if self.options.budget.generations == 1:
            late = []
        if generation == 0:
            return [p for p in self.proposers if p not in late]
        return late if generation == 1 else []

    def _ask(
        self,
        proposer: Proposer,
        parents: tuple[Entry, ...],
        generation: int,
        island: int,
        max_proposals: int,
    ) -> list[Proposal]:
        if self.proposing_abandoned:
            return []
        context = self._context(
            parents, generation, island, max_proposals, self.tracker.tokens, self.tracker.usd
        )
        try:
            # A proposer's own work (codegen tracing a multi-GB reference, inductor compiling
            # it) counts against the time budget like an evaluation: past the deadline its
            # proposals are given up (its thread is left to end with the run).
            outcome = call_bounded(
                functools.partial(proposer.propose, context),
                self.tracker.deadline(),
                lambda: self.stop_request.requested,
                None,
                self.tracker.clock,
                grace_s=0.0,
            )
        except Abandoned as abandoned:
            if abandoned.why == "time":
                self._note(f"{proposer.name}: still proposing when the time budget ran out")
            self.proposing_abandoned = abandoned.why
            return []
        except Exception as exc:  # a proposer bug costs its proposals, never the run
            self._note(f"{proposer.name}: failed in generation {generation}: {exc}")
            return []
        return self._answered(proposer, parents, generation, max_proposals, outcome)

    def _context(
        self,
        parents: tuple[Entry, ...],
        generation: int,
        island: int,
        max_proposals: int,
        tokens_spent: int,
        usd_spent: float,
    ) -> ProposeContext:
        return ProposeContext(
            problem=self.problem,
            parents=tuple(as_parent(p) for p in parents),
            device=self.device,
            seed=self.options.seed * 1_000_003 + generation * 101 + island,
            max_proposals=max_proposals,
            replies=self.store.ledger.for_run(self.run_id),
            tokens_left=left(self.options.budget.max_tokens, tokens_spent),
            usd_left=left(self.options.budget.max_usd, usd_spent),
        )

    def _answered(
        self,
        proposer: Proposer,
        parents: tuple[Entry, ...],
        generation: int,
        max_proposals: int,
        outcome: ProposeOutcome,
    ) -> list[Proposal]:
        """What an answer brings: its spending counted, its model calls cached, the proposals
        not yet in the run."""
        self.tracker.tokens += outcome.tokens_used
        self.tracker.usd += outcome.usd_spent
        if outcome.calls:  # cached at once: a run killed after this never pays for them again
            self.store.ledger.record(self.run_id, generation, outcome.calls)
        by_sha = {p.sha256: p for p in parents}
        proposals = [
            inherit_schedule(proposal, by_sha)
            for proposal in outcome.proposals[:max_proposals]
            if proposal.source_sha256 not in self.entries
        ]
        self.standing.record(
            proposer.name, len(outcome.proposals), len(proposals), outcome.skipped_reason
        )
        return proposals

    def _note(self, text: str) -> None:
        if text not in self.notes:
            self.notes.append(text)
            self.progress.note(text)

    # evaluating

    def _evaluate_all(
        self, generation: int, candidates: list[RunCandidate]
    ) -> tuple[bool, StopReason | None]:
        improved = False
        pending = [c for c in candidates if c.sha256 not in self.entries]
        index = 0
        while True:
            queued = {c.sha256 for c in pending}
            pending += [c for c in self._harvest(generation) if c.sha256 not in queued]
            if index >= len(pending):
                if self.background is None:
                    break
                why = self._wait_for_model()
                if why is not None:
                    return improved, StopReason.TIME if why == "time" else StopReason.INTERRUPTED
                continue
            if self.stop_request.requested:
                return improved, StopReason.INTERRUPTED
            candidate = pending[index]
            verdict = self._cached(candidate)
            if verdict is not None:
                budget = self.options.budget.max_candidates
                if budget is not None and self.tracker.candidates >= budget:
                    return improved, StopReason.CANDIDATES
                self.cached += 1
                improved |= self._admit(generation, candidate, verdict)
                index += 1
                continue
            stop = self.tracker.exhausted(spending=False)  # what was paid for is evaluated
            if stop:
                return improved, stop
            batch = self._batch(pending, index)
            started = self.tracker.clock()
            try:
                verdicts = self.bounded(functools.partial(self._evaluate, batch))
            except Abandoned as abandoned:  # the budget ran out or a signal came mid-evaluation
                return improved, (
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
                improved |= self._admit(generation, member, verdict)
            index += len(batch)
        return improved, None

    def bounded(self, call: Callable[[], T]) -> T:
        """`call()` (an evaluator call), abandoned at the time budget's end or on a stop
        request, when the evaluator is closed (kbot.search.inflight)."""
        if self.evaluator_closed:  # a closed evaluator would start new workers for nothing
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
        except Abandoned:
            self.evaluator_closed = True
            raise

    def _cached(self, candidate: RunCandidate) -> Verdict | None:
        return self.store.cached_verdict(candidate.sha256, self.problem.source_sha256, self.env_key)

    def _batch(self, pending: list[RunCandidate], index: int) -> list[RunCandidate]:
        """Uncached candidates to evaluate together: one per GPU of the pool (one on a CPU),
        never more than the candidate budget has left."""
        size = max(1, len(self.options.gpus))
        budget = self.options.budget.max_candidates
        if budget is not None:
            size = max(1, min(size, budget - self.tracker.candidates))
        batch = [pending[index]]
        for candidate in pending[index + 1 :]:
            if len(batch) >= size or self._cached(candidate) is not None:
                break
            batch.append(candidate)
        return batch

    def _evaluate(self, batch: list[RunCandidate]) -> Sequence[Verdict]:
        if len(batch) == 1:
            name = f"candidate_{batch[0].sha256[:12]}.py"
            return [self.evaluator.evaluate(self.problem, batch[0].source, name)]
        return self.evaluator.evaluate_many(self.problem, [c.source for c in batch])

    def _admit(self, generation: int, candidate: RunCandidate, verdict: Verdict) -> bool:
        """Adds an evaluated candidate to the archive and islands; True if it improved the best."""
        self.tracker.candidates += 1
        entry = Entry(
            sha256=candidate.sha256,
            source=candidate.source,
            proposer=candidate.proposer,
            parents=candidate.parents,
            params=candidate.params,
            generation=generation,
            island=candidate.island,
            verdict=verdict,
            fitness=fitness_of(verdict, candidate.source),
        )
        self.entries[entry.sha256] = entry
        improved = self.archive.add(entry)
        self._record_step(entry)
        if entry.fitness.accepted:
            if self.first_accepted_s is None:
                self.first_accepted_s = self.tracker.elapsed_s()
            self.islands.add(candidate.island, entry)
        else:
            self.rejected.append(entry)
        self.store.update_run(self.run_id, spent_s=self.tracker.elapsed_s())
        self.progress.verdict(self._snapshot(generation, entry))
        return improved

    def _record_step(self, child: Entry) -> None:
        """The parent -> child step, for fine-tuning (kbot.search.trajectories)."""
        parent = self.entries.get(child.parents[0]) if child.parents else None
        if self.trajectories is None or parent is None:
            return
        self.trajectories.append(
            step_record(self.run_id, self.problem.name, self.problem.source_sha256, parent, child)
        )

    def _snapshot(self, generation: int, entry: Entry) -> Snapshot:
        best = self.archive.best
        return Snapshot(
            generation=generation,
            generations=self.options.budget.generations,
            evaluated=len(self.entries),
            accepted=sum(1 for e in self.entries.values() if e.fitness.accepted),
            best_speedup=best.fitness.speedup if best else None,
            best_roofline_fraction=best.fitness.roofline_fraction if best else None,
            best_fitness=best.fitness.describe() if best else "nothing accepted yet",
            eta_s=self.tracker.eta_s(generation),
            elapsed_s=self.tracker.elapsed_s(),
            last_sha256=entry.sha256,
            last_proposer=entry.proposer,
            last_accepted=entry.fitness.accepted,
            tokens=self.tracker.tokens,
            usd=self.tracker.usd,
        )

    def _close_generation(self, generation: int) -> GenerationSummary:
        best = self.archive.best
        in_generation = [e for e in self.entries.values() if e.generation == generation]
        summary = GenerationSummary(
            generation=generation,
            best_sha256=best.sha256 if best else None,
            best_fitness=best.fitness.describe() if best else "nothing accepted yet",
            best_speedup=best.fitness.speedup if best else None,
            evaluated=len(in_generation),
            accepted=sum(1 for e in in_generation if e.fitness.accepted),
        )
        self.store.record_generation(
            self.run_id,
            GenerationRecord(
                generation=generation,
                best_sha256=summary.best_sha256,
                best_fitness=dataclasses.asdict(best.fitness) if best else None,
                evaluated=summary.evaluated,
                accepted=summary.accepted,
            ),
        )
        return summary

    def _early_stop(self, stale_generations: int) -> StopReason | None:
        best = self.archive.best
        if best is not None and best.fitness.roofline_fraction is not None:
            if best.fitness.roofline_fraction >= self.options.roofline_stop_fraction:
                return StopReason.ROOFLINE
        if stale_generations >= self.options.patience:
            return StopReason.PATIENCE
        return None
