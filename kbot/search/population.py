"""What a run has evaluated: every entry by hash, the archive, the islands and the rejected.

Admitting a verdict puts its entry where it belongs, records the parent -> child step for
fine-tuning and reports progress; closing a generation writes its summary to the store.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from kbot.evaluate.verdict import Verdict
from kbot.problem import ProblemSpec
from kbot.search.archive import Archive, Entry
from kbot.search.budget import BudgetTracker
from kbot.search.fitness import fitness_of
from kbot.search.islands import Islands
from kbot.search.options import OptimizeOptions
from kbot.search.progress import Progress, Snapshot
from kbot.search.store import GenerationRecord, RunCandidate, Store
from kbot.search.trajectories import TrajectoryLog, step_record


@dataclass(frozen=True)
class GenerationSummary:
    generation: int
    best_sha256: str | None
    best_fitness: str  # Fitness.describe() of the best so far
    best_speedup: float | None
    evaluated: int
    accepted: int


@dataclass(eq=False)  # compared by identity: one per run
class Population:
    """The run's evaluated entries; `admit` is the only way in."""

    store: Store
    run_id: str
    problem: ProblemSpec
    options: OptimizeOptions
    tracker: BudgetTracker
    progress: Progress
    trajectories: TrajectoryLog | None
    archive: Archive = field(init=False, default_factory=Archive)
    islands: Islands = field(init=False)
    entries: dict[str, Entry] = field(init=False, default_factory=dict)
    rejected: list[Entry] = field(init=False, default_factory=list)
    first_accepted_s: float | None = field(init=False, default=None)  # when the first was accepted

    def __post_init__(self) -> None:
        self.islands = Islands(self.options.islands)

    def admit(self, generation: int, candidate: RunCandidate, verdict: Verdict) -> bool:
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

    def close_generation(self, generation: int) -> GenerationSummary:
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

    def has_generation(self, generation: int) -> bool:
        return any(e.generation == generation for e in self.entries.values())
