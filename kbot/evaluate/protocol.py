"""What crosses the pipe between the evaluator and its worker: one JSON object per line.

JSON rather than pickle in both directions: the worker runs untrusted candidates, and the
parent must never unpickle what such a process wrote.

parent -> worker: a `Job`.
worker -> parent: {"event": "ready", ...} once; {"event": "phase", "name", "timeout_s"} before
each stage (the parent's hard deadline follows the phase); {"event": "result", ...} per job.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from typing import Any

from kbot.evaluate.verdict import CaseCorrectness, CaseResult, CaseTiming, Reason, Stage, Stat

PROTOCOL_VERSION = 2


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
    candidates: tuple[CandidateJob, ...] = ()
    seeds: int = 5
    time: bool = False
    compile_baselines: bool = True
    candidate_timeout_s: float = 120.0
    baseline_timeout_s: float = 900.0
    timing_budget_s: float = 1.5
    base_seed: int = 0

    def to_line(self) -> bytes:
        return (json.dumps(asdict(self)) + "\n").encode()

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Job:
        data = dict(data)
        data["cases"] = tuple(data.get("cases", ()))
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
            "cases": [_finite(asdict(c)) for c in self.cases],
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> CandidateOutcome:
        return cls(
            accepted=bool(data["accepted"]),
            stage=Stage(data["stage"]),
            reasons=tuple(Reason(**r) for r in data["reasons"]),
            notes=tuple(Reason(**r) for r in data.get("notes", ())),
            cases=tuple(_case(c) for c in data["cases"]),
            output=str(data.get("output", "")),
        )


def _finite(value: Any) -> Any:
    """JSON has no NaN/inf: unmeasured figures travel as null and come back as NaN."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value


def _float(value: Any) -> float:
    return float("nan") if value is None else float(value)


def _stat(data: dict[str, Any] | None) -> Stat | None:
    if data is None:
        return None
    return Stat(
        median_us=_float(data["median_us"]), iqr_us=_float(data["iqr_us"]), runs=int(data["runs"])
    )


def _case(data: dict[str, Any]) -> CaseResult:
    correctness = None
    if data.get("correctness") is not None:
        c = data["correctness"]
        correctness = CaseCorrectness(
            case=dict(c["case"]),
            trials=int(c["trials"]),
            distributions=tuple(c["distributions"]),
            max_abs_error=_float(c["max_abs_error"]),
            max_rel_norm_error=_float(c["max_rel_norm_error"]),
            atol=_float(c["atol"]),
            rtol=_float(c["rtol"]),
            passed=bool(c["passed"]),
            float32_reference_trials=int(c.get("float32_reference_trials", 0)),
        )
    timing = None
    if data.get("timing") is not None:
        t = dict(data["timing"])
        stats = {
            k: _stat(v)
            for k, v in t.items()
            if isinstance(v, dict) or (v is None and k.endswith(("_graph", "_plain")))
        }
        scalars = {k: v for k, v in t.items() if k not in stats}
        for key in ("roofline_fraction", "speedup_vs_eager"):
            scalars[key] = _float(scalars.get(key))
        if scalars.get("speedup_vs_compile") is not None:
            scalars["speedup_vs_compile"] = float(scalars["speedup_vs_compile"])
        timing = CaseTiming(**stats, **scalars)
    return CaseResult(case=dict(data["case"]), correctness=correctness, timing=timing)


def encode(message: dict[str, Any]) -> bytes:
    return (json.dumps(_finite(message)) + "\n").encode()
