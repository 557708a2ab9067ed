"""The proposer seam: a small Protocol each proposer implements, and the records it trades in."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any, Protocol

from kbot.problem import ProblemSpec


def source_hash(source: str) -> str:
    """The key a candidate is stored and cached under."""
    return hashlib.sha256(source.encode()).hexdigest()


@dataclass(frozen=True)
class Parent:
    """A candidate offered to a proposer as a starting point, with the evaluator's feedback."""

    source: str
    source_sha256: str
    proposer: str
    accepted: bool
    fitness: float | None  # speedup geomean vs torch.compile on a GPU; None when not timed
    feedback: tuple[str, ...] = ()  # the verdict's reasons, as text


@dataclass(frozen=True)
class ProposeContext:
    problem: ProblemSpec
    parents: tuple[Parent, ...]
    device: str  # "cpu" or "cuda"
    seed: int
    max_proposals: int = 8


@dataclass(frozen=True)
class Proposal:
    source: str  # a complete candidate file defining ModelNew
    proposer: str
    parent_sha256: tuple[str, ...] = ()
    params: dict[str, Any] = field(default_factory=dict)  # tunables chosen, schedule kind, ...
    note: str = ""

    @property
    def source_sha256(self) -> str:
        return source_hash(self.source)


@dataclass(frozen=True)
class ProposeOutcome:
    """What a proposer returned: proposals, or why it has none (e.g. "no codegen schedule: ...")."""

    proposals: tuple[Proposal, ...]
    skipped_reason: str | None = None
    tokens_used: int = 0


class Proposer(Protocol):
    """`name` keys the registry. A proposer whose seeds are slow to make may also set
    `late_seed = True`: the search then asks it for seeds in generation 1, after the others'
    seeds are measured (search/loop.py)."""

    name: str

    def propose(self, context: ProposeContext) -> ProposeOutcome: ...
