"""Gathering a generation's candidates: who is asked (seeds, then parents per island), in line
or in the background (kbot.search.overlap), each answer's spending counted and its model calls
cached, the proposals recorded before any is evaluated; and the notes that account for every
proposer in the run's message.

Parent selection uses one seeded generator per (generation, island), so a resumed run that
replays the archive selects the parents the first process did.
"""

from __future__ import annotations

import functools
import random
from dataclasses import dataclass, field

from kbot.problem import ProblemSpec
from kbot.propose.base import Proposal, ProposeContext, ProposeOutcome, Proposer
from kbot.search.archive import Entry
from kbot.search.budget import BudgetTracker, StopRequest
from kbot.search.inflight import Abandoned, call_bounded
from kbot.search.options import OptimizeOptions
from kbot.search.overlap import Answered, Ask, BackgroundAsks, ContextFor, overlaps_evaluation
from kbot.search.population import Population
from kbot.search.progress import Progress
from kbot.search.proposing import ProposerStanding, as_parent, inherit_schedule, left
from kbot.search.selection import select_parents
from kbot.search.store import RunCandidate, Store


@dataclass(eq=False)  # compared by identity: one per run
class Gathering:
    """Asks the proposers for the run's candidates, generation by generation; keeps the notes
    on them that end in the run's message."""

    store: Store
    run_id: str
    problem: ProblemSpec
    device: str
    options: OptimizeOptions
    proposers: list[Proposer]
    population: Population
    tracker: BudgetTracker
    stop_request: StopRequest
    progress: Progress
    notes: list[str] = field(init=False, default_factory=list)  # skipped reasons and failures
    # "time" or "stop" once a proposer was given up mid-call (see _ask)
    abandoned: str | None = field(init=False, default=None)
    standing: ProposerStanding = field(init=False, default_factory=ProposerStanding)
    # this generation's asks to proposers that wait on a model (kbot.search.overlap)
    background: BackgroundAsks | None = field(init=False, default=None)
    _background_generation: int = field(init=False, default=0)
    # seeds of slow proposers that work beside the search (inductor compiling the problem):
    # their candidates join whichever generation is running when they come, and a generation
    # waits for them only when it has nothing else to evaluate
    detached: BackgroundAsks | None = field(init=False, default=None)
    recorded_late: int = field(init=False, default=0)  # the background asks' candidates
    # slow seeders started before the evaluator's preparation (start_detached)
    started_early: list[Proposer] = field(init=False, default_factory=list)

    def propose(self, generation: int) -> list[RunCandidate]:
        """Asks the proposers in line and returns their candidates, recorded; asks to
        proposers that wait on a model start in the background (self.background) and their
        candidates join the generation as they come (`harvest`)."""
        placed: list[tuple[int, Proposal]] = []
        later: list[Ask] = []
        detached: list[Ask] = []
        self.recorded_late = 0
        # Seeds: every proposer once, without parents; spread over the islands.
        for index, proposer in enumerate(self._seeders(generation)):
            if overlaps_evaluation(proposer):
                slow = getattr(proposer, "late_seed", False)
                if slow and proposer in self.started_early:
                    continue  # asked already, while the evaluator was being prepared
                (detached if slow else later).append(
                    Ask(proposer, (), -1, self.options.islands * 2)
                )
                continue
            proposals = self._ask(proposer, (), generation, index, self.options.islands * 2)
            placed.extend((i % self.options.islands, p) for i, p in enumerate(proposals))
        if generation > 0:
            population = self.population
            for island in range(self.options.islands):
                rng = random.Random(f"{self.options.seed}/{generation}/{island}")
                parents = select_parents(
                    population.islands.members(island),
                    population.archive,
                    population.rejected,
                    rng,
                    self.options.exploit_probability,
                )
                if not parents:
                    continue
                for proposer in self.proposers:
                    if self.standing.is_dry(proposer.name) or self._seeds_only(proposer):
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
        if later and not self.abandoned:
            self.background = BackgroundAsks(later, self._context_for(generation)).start()
            self._background_generation = generation
        if detached and not self.abandoned:
            self.detached = BackgroundAsks(detached, self._context_for(generation)).start()
        return recorded

    def start_detached(self) -> None:
        """Generation 0's slow seeds that work beside the search (inductor compiling the
        problem), started now: before the evaluator's preparation, so that they compile while
        its baselines are built instead of after the time budget's clock has started."""
        slow = [
            p for p in self._seeders(0) if overlaps_evaluation(p) and self._seeds_only(p)
        ]  # fmt: skip
        if slow and self.detached is None and not self.abandoned:
            asks = [Ask(p, (), -1, self.options.islands * 2) for p in slow]
            self.detached = BackgroundAsks(asks, self._context_for(0)).start()
            self.started_early = slow

    def _context_for(self, generation: int) -> ContextFor:
        tokens, usd = self.tracker.tokens, self.tracker.usd

        def context_for(ask: Ask, spent_tokens: int, spent_usd: float) -> ProposeContext:
            island = ask.island if ask.island >= 0 else 0
            return self._context(
                ask.parents, generation, island, ask.max_proposals,
                tokens + spent_tokens, usd + spent_usd,
            )  # fmt: skip

        return context_for

    def _seeds_only(self, proposer: Proposer) -> bool:
        """A slow seeder working beside the search (inductor) is asked for its seeds only."""
        return getattr(proposer, "late_seed", False) and overlaps_evaluation(proposer)

    def harvest(self, generation: int) -> tuple[list[RunCandidate], list[RunCandidate]]:
        """The candidates of the background asks answered since the last look, recorded in this
        generation: (the detached seeds', this generation's asks'). The loop evaluates the
        detached seeds next: torch.compile's own kernel, the inductor proposer's, is what keeps
        the winner from being slower than torch.compile, and a short budget may not reach the
        end of the queue."""
        found: list[list[RunCandidate]] = []
        for asks in (self.detached, self.background):
            placed: list[tuple[int, Proposal]] = []
            for answered in asks.take_ready() if asks is not None else []:
                placed.extend(self._placed(answered, generation))
            recorded = (
                self.store.record_proposals(self.run_id, generation, placed) if placed else []
            )
            self.recorded_late += len(recorded)
            found.append(recorded)
        if self.background is not None and self.background.finished:
            self.background = None
        if self.detached is not None and self.detached.finished:
            self.detached = None
        return found[0], found[1]

    def _placed(self, answered: Answered, generation: int) -> list[tuple[int, Proposal]]:
        ask = answered.ask
        if answered.outcome is None:
            self.note(f"{ask.proposer.name}: failed in generation {generation}: {answered.error}")
            return []
        proposals = self._answered(
            ask.proposer, ask.parents, generation, ask.max_proposals, answered.outcome
        )
        if ask.island >= 0:
            return [(ask.island, p) for p in proposals]
        return [(i % self.options.islands, p) for i, p in enumerate(proposals)]  # seeds

    def waiting(self, with_detached: bool) -> BackgroundAsks | None:
        """The asks a generation with nothing left to evaluate waits for: its own background
        asks, else (`with_detached`: it had no candidates of its own) the detached seeds."""
        return self.background or (self.detached if with_detached else None)

    def wait_for_model(self, asks: BackgroundAsks) -> str | None:
        """Nothing left to evaluate but `asks` under way: waits for the next answer.
        "time" or "stop" when the run must end first (the asks are then cancelled)."""
        why = asks.wait_next(
            self.tracker.deadline(), lambda: self.stop_request.requested, self.tracker.clock
        )
        if why == "time":
            names = ", ".join(asks.proposer_names) or "a proposer"
            self.note(f"{names}: still proposing when the time budget ran out")
        return why

    def drain_background(self) -> None:
        """At the run's end: no further ask starts, the ones in flight are told to stop, and
        what was answered (paid for) is recorded, so a resumed run finds those replies in the
        store."""
        for asks in (self.background, self.detached):
            if asks is None:
                continue
            asks.cancel()
            names = ", ".join(asks.proposer_names)
            if not asks.finished and not any(n.startswith(f"{names}:") for n in self.notes):
                self.note(f"{names}: still proposing when the run ended")
            generation = self._background_generation
            for answered in asks.take_ready():
                if answered.outcome is not None:
                    self._answered(
                        answered.ask.proposer, answered.ask.parents, generation,
                        answered.ask.max_proposals, answered.outcome,
                    )  # fmt: skip
        self.background = self.detached = None

    def _seeders(self, generation: int) -> list[Proposer]:
        """Proposers asked for seeds in this generation: all in generation 0, except slow ones
        (`late_seed`: inductor compiles the problem first), which seed in generation 1 so that
        codegen's seeds are measured first — unless the run has one generation only, or the
        slow one works beside the evaluations (`overlaps_evaluation`) and so delays nothing."""
        late = [
            p
            for p in self.proposers
            if getattr(p, "late_seed", False) and not overlaps_evaluation(p)
        ]
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
        if self.abandoned:
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
                self.note(f"{proposer.name}: still proposing when the time budget ran out")
            self.abandoned = abandoned.why
            return []
        except Exception as exc:  # a proposer bug costs its proposals, never the run
            self.note(f"{proposer.name}: failed in generation {generation}: {exc}")
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
            if proposal.source_sha256 not in self.population.entries
        ]
        self.standing.record(
            proposer.name, len(outcome.proposals), len(proposals), outcome.skipped_reason
        )
        return proposals

    def note(self, text: str) -> None:
        if text not in self.notes:
            self.notes.append(text)
            self.progress.note(text)

    def account_for_proposers(self) -> None:
        """Every proposer is accounted for in the run's message: why one offered nothing, and
        one that offered candidates none of which was evaluated, or that was never asked before
        the run stopped (inductor seeds in generation 1), says so beside the others' reasons."""
        for name, reason in self.standing.skipped.items():
            self.note(f"{name}: {reason}")
        evaluated = {entry.proposer for entry in self.population.entries.values()}
        for proposer in self.proposers:
            name = proposer.name
            if name in evaluated or any(n.startswith(f"{name}:") for n in self.notes):
                continue
            if name in self.standing.productive:
                self.note(f"{name}: its candidates were not evaluated before the run stopped")
            else:
                late = (
                    " (it seeds in generation 1)" if getattr(proposer, "late_seed", False) else ""
                )
                self.note(f"{name}: not asked before the run stopped{late}")
