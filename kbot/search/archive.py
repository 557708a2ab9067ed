"""The archive: the best candidates (elites) plus a MAP-Elites grid that keeps the best of each
behaviour cell (schedule kind x block-size class x proposer), so diverse designs survive even
while one design leads, and the best candidate of each case (size), from which the final
kernel dispatches by size (kbot.search.per_case)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kbot.evaluate.verdict import Verdict
from kbot.search.fitness import Fitness
from kbot.search.per_case import case_label, case_score


@dataclass(frozen=True)
class Entry:
    """One evaluated candidate of this run."""

    sha256: str
    source: str
    proposer: str
    parents: tuple[str, ...]
    params: dict[str, Any]
    generation: int
    island: int
    verdict: Verdict
    fitness: Fitness


@dataclass(frozen=True)
class Cell:
    schedule: str
    block_class: str
    proposer: str

    def __str__(self) -> str:
        return f"{self.schedule}/{self.block_class}/{self.proposer}"


def block_class(params: dict[str, Any]) -> str:
    """The largest BLOCK* tunable in a proposal's params, bucketed by order of magnitude."""
    sizes = [
        value
        for key, value in _flat_params(params)
        if "BLOCK" in key.upper() and isinstance(value, int) and not isinstance(value, bool)
    ]
    if not sizes:
        return "none"
    largest = max(sizes)
    for limit, name in ((128, "<=128"), (1024, "<=1k"), (8192, "<=8k")):
        if largest <= limit:
            return name
    return ">8k"


def cell_of(entry: Entry) -> Cell:
    schedule = str(entry.params.get("schedule", "unknown"))
    return Cell(schedule, block_class(entry.params), entry.proposer)


def _flat_params(params: dict[str, Any], prefix: str = "") -> list[tuple[str, Any]]:
    flat: list[tuple[str, Any]] = []
    for key, value in params.items():
        if isinstance(value, dict):
            flat.extend(_flat_params(value, f"{prefix}{key}."))
        else:
            flat.append((f"{prefix}{key}", value))
    return flat


class Archive:
    def __init__(self, elite_size: int = 8) -> None:
        self.elite_size = elite_size
        self._elites: list[Entry] = []
        self.cells: dict[Cell, Entry] = {}
        self.best: Entry | None = None
        self.best_by_case: dict[str, Entry] = {}  # case label -> fastest there (timed runs)

    def add(self, entry: Entry) -> bool:
        """Adds an accepted entry; True when it beats the best above the noise floor."""
        if not entry.fitness.accepted:
            return False
        cell = cell_of(entry)
        held = self.cells.get(cell)
        if held is None or entry.fitness.sort_key() > held.fitness.sort_key():
            self.cells[cell] = entry
        if all(e.sha256 != entry.sha256 for e in self._elites):
            self._elites.append(entry)
            self._elites.sort(key=lambda e: e.fitness.sort_key(), reverse=True)
            del self._elites[self.elite_size :]
        self._add_by_case(entry)
        improved = entry.fitness.beats(self.best.fitness if self.best else None)
        if self.best is None or entry.fitness.sort_key() > self.best.fitness.sort_key():
            self.best = entry
        return improved

    def _add_by_case(self, entry: Entry) -> None:
        """Keeps, per timed case, the entry with the highest speedup there (ties: the
        simpler). Untimed verdicts (a CPU) rank nothing per case."""
        for case in entry.verdict.cases:
            label = case_label(case.case)
            score = case_score(entry.verdict, label)
            if score is None:
                continue
            held = self.best_by_case.get(label)
            held_score = case_score(held.verdict, label) if held is not None else None
            if held is None or held_score is None:
                self.best_by_case[label] = entry
            elif (score.speedup, entry.fitness.sort_key()) > (
                held_score.speedup,
                held.fitness.sort_key(),
            ):
                self.best_by_case[label] = entry

    def elites(self, count: int | None = None) -> list[Entry]:
        return list(self._elites[: count or self.elite_size])

    def cell_entries(self) -> list[Entry]:
        return list(self.cells.values())
