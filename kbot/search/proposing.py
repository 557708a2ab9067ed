"""What the search loop keeps about its proposers between calls, and how a parent and a
proposal pass between the archive and a proposer."""

from __future__ import annotations

import dataclasses
from typing import Any

from kbot.propose.base import Parent, Proposal
from kbot.search.archive import Entry
from kbot.search.feedback import verdict_details

DRY_CALLS_BEFORE_SKIP = 2


class ProposerStanding:
    """Per proposer: how many calls in a row offered only known candidates (codegen, which
    ignores parents, is then not asked again: each call can cost a trace), whether it ever
    offered any, and why it offered nothing (reported only for proposers that never offered
    any: tune skips generation 0, which has no parents, as a matter of course)."""

    def __init__(self) -> None:
        self._dry_calls: dict[str, int] = {}
        self.skipped: dict[str, str] = {}
        self.productive: set[str] = set()

    def is_dry(self, name: str) -> bool:
        return self._dry_calls.get(name, 0) >= DRY_CALLS_BEFORE_SKIP

    def record(self, name: str, offered: int, kept: int, skipped_reason: str | None) -> None:
        """A call offered `offered` proposals, `kept` of them new to the run."""
        if offered:
            self.skipped.pop(name, None)
            self.productive.add(name)
        elif skipped_reason and name not in self.productive:
            self.skipped[name] = skipped_reason
        if offered and not kept:
            self._dry_calls[name] = self._dry_calls.get(name, 0) + 1
        elif kept:
            self._dry_calls[name] = 0


def left(limit: float | None, spent: float) -> Any:
    """What a budget has left for a proposer (None: no limit)."""
    return None if limit is None else max(0, limit - spent)


def as_parent(entry: Entry) -> Parent:
    return Parent(
        source=entry.source,
        source_sha256=entry.sha256,
        proposer=entry.proposer,
        accepted=entry.fitness.accepted,
        fitness=entry.fitness.speedup,
        feedback=tuple(str(r) for r in entry.verdict.reasons),
        fitness_text=entry.fitness.describe(),
        stage=entry.verdict.stage.value,
        details=verdict_details(entry.verdict),
    )


def inherit_schedule(proposal: Proposal, parents: dict[str, Entry]) -> Proposal:
    """A mutation keeps its parent's schedule kind, so the MAP-Elites grid can place it."""
    if "schedule" in proposal.params or not proposal.parent_sha256:
        return proposal
    parent = parents.get(proposal.parent_sha256[0])
    if parent is None or "schedule" not in parent.params:
        return proposal
    params = {"schedule": parent.params["schedule"], **proposal.params}
    return dataclasses.replace(proposal, params=params)
