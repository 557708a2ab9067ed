"""The proposer seam: a small Protocol each proposer implements, and the records it trades in."""

from __future__ import annotations

import hashlib
import threading
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
    fitness_text: str = ""  # Fitness.describe(): "1.31x vs torch.compile, 62% of roofline"
    stage: str = ""  # the verdict's stage: where a rejected candidate stopped
    details: tuple[str, ...] = ()  # per-case correctness and timing, one line each


class ReplyLookup(Protocol):
    """Model replies kept in the run's store, by prompt hash (a resumed run never pays twice)."""

    def reply(self, prompt_sha256: str) -> tuple[str, str | None] | None:
        """(text, finish_reason) of a reply to this exact prompt, or None."""
        ...


@dataclass(frozen=True)
class ProposeContext:
    problem: ProblemSpec
    parents: tuple[Parent, ...]
    device: str  # "cpu" or "cuda"
    seed: int
    max_proposals: int = 8
    replies: ReplyLookup | None = None  # the store's reply cache; None: nothing cached
    tokens_left: int | None = None  # of the run's token budget; None: no limit
    usd_left: float | None = None  # of the run's money budget; None: no limit
    # set when the run no longer wants this call's answer (a background ask past the budget):
    # a proposer with a child process of its own stops it
    cancelled: threading.Event | None = None


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
class ModelCall:
    """One request a proposer sent to a model, or answered from the store's reply cache, and
    what came of it. The search loop writes it to the store (reply cache and ledger)."""

    prompt_sha256: str
    model: str
    base_url: str
    mode: str  # seed | rewrite | diff | crossover | repair | kernelbench
    messages: tuple[dict[str, str], ...]
    status: str  # "ok" (a candidate), a ParseStatus or a CallStatus value
    message: str  # what went wrong, masked; "" when a candidate came of it
    cached: bool  # answered from the store: nothing paid
    reply: str = ""
    finish_reason: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    usd: float = 0.0  # what this call cost; 0 when cached or the model has no price
    attempts: int = 0
    wall_s: float = 0.0
    candidate_sha256: str | None = None

    @property
    def answered(self) -> bool:
        """The model replied (whatever the reply held): worth caching."""
        return self.attempts > 0 and self.status not in _TRANSPORT_FAILURES


_TRANSPORT_FAILURES = frozenset(
    {"rate_limited", "server_error", "timeout", "connection", "refused", "no_sdk", "budget"}
)


@dataclass(frozen=True)
class ProposeOutcome:
    """What a proposer returned: proposals, or why it has none (e.g. "no codegen schedule: ...")."""

    proposals: tuple[Proposal, ...]
    skipped_reason: str | None = None
    tokens_used: int = 0  # paid for in this call (cached replies cost nothing)
    usd_spent: float = 0.0
    calls: tuple[ModelCall, ...] = ()


class Proposer(Protocol):
    """`name` keys the registry. A proposer whose seeds are slow to make may also set
    `late_seed = True`: the search then asks it for seeds in generation 1, after the others'
    seeds are measured (search/gathering.py). One that waits on a remote model may set
    `overlaps_evaluation = True`: the search then asks it in a background thread while it
    evaluates the others' candidates (search/overlap.py), seeds in generation 0 even when it is
    also a late seeder, and sets `context.cancelled` when the answer is no longer wanted; its
    `propose` must then be safe to call off the main thread (it is, when it only reads
    `context`), and anything it runs on the GPU must hold the measurement lock
    (kbot.evaluate.gpu_lock) around its own timing."""

    name: str

    def propose(self, context: ProposeContext) -> ProposeOutcome: ...
