"""What crosses the pipe between the evaluator and its worker: one JSON object per line.

JSON rather than pickle in both directions: the worker runs untrusted candidates, and the
parent must never unpickle what such a process wrote.

parent -> worker: a `Job`.
worker -> parent: {"event": "ready", ...} once; {"event": "phase", "name", "timeout_s"} before
each stage (the parent's hard deadline follows the phase); {"event": "step", "name"} within a
phase (where it got: an evaluation stopped at a budget's end says so; the deadline stands);
{"event": "result", ...} per job.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any

from kbot.evaluate.verdict import CaseResult, Reason, Stage, finite_json

PROTOCOL_VERSION = 4  # 3: Job.upcoming; 4: Job.extern_ops


@dataclass(frozen=True)
class CandidateJob:
    name: str
    source: str


@dataclass(frozen=True)
class Job:
    kind: str  # "evaluate" (correctness, then timing when asked) or "shutdown"
    problem_path: str = ""
    problem_sha256: str = ""
    cases: tuple[dict[str, Any], ...] = ()
    atol: float | None = None
    rtol: float | None = None
    mutates_inputs: bool = False
    # The ops forward may run with torch (KBOT["extern_ops"]): the candidate's compute guard
    # lets their aten ops through (kbot.evaluate.compute_guard).
    extern_ops: tuple[str, ...] = ()
    scalar_positions: tuple[int, ...] = ()  # forward places that must hold numbers (KBOT)
    candidates: tuple[CandidateJob, ...] = ()
    seeds: int = 5
    time: bool = False
    compile_baselines: bool = True
    candidate_timeout_s: float = 120.0
    baseline_timeout_s: float = 900.0
    timing_budget_s: float = 1.5
    base_seed: int = 0
    # The shape sweep (kbot.search.sweep): ModelNew takes Model's parameters and buffers with
    # Model's shapes, so a kernel is checked at another model's sizes with the op's own state.
    adopt_state: bool = False
    # Jobs of one candidate each that the evaluator will send next (the shape sweep's points
    # after this one): their candidates' processes start with this job's.
    upcoming: int = 0

    def to_line(self) -> bytes:
        return (json.dumps(asdict(self)) + "\n").encode()

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Job:
        data = dict(data)
        data["cases"] = tuple(data.get("cases", ()))
        data["extern_ops"] = tuple(data.get("extern_ops", ()))
        data["candidates"] = tuple(CandidateJob(**c) for c in data.get("candidates", ()))
        return cls(**data)


@dataclass(frozen=True)
class CandidateOutcome:
    """One candidate's result from the worker, before the parent adds output and wall time."""

    accepted: bool
    stage: Stage
    reasons: tuple[Reason, ...]
    cases: tuple[CaseResult, ...] = ()
    notes: tuple[Reason, ...] = field(default_factory=tuple)
    output: str = ""  # what the candidate's process printed, trimmed

    def to_json(self) -> dict[str, Any]:
        return {
            "output": self.output,
            "accepted": self.accepted,
            "stage": self.stage.value,
            "reasons": [asdict(r) for r in self.reasons],
            "notes": [asdict(r) for r in self.notes],
            "cases": [finite_json(asdict(c)) for c in self.cases],
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> CandidateOutcome:
        return cls(
            accepted=bool(data["accepted"]),
            stage=Stage(data["stage"]),
            reasons=tuple(Reason.from_json(r) for r in data["reasons"]),
            notes=tuple(Reason.from_json(r) for r in data.get("notes", ())),
            cases=tuple(CaseResult.from_json(c) for c in data["cases"]),
            output=str(data.get("output", "")),
        )


def encode(message: dict[str, Any]) -> bytes:
    return (json.dumps(finite_json(message)) + "\n").encode()
