"""Verdicts to and from the JSON kept in the store (`Verdict.to_json` is the wire format)."""

from __future__ import annotations

import json
from typing import Any

from kbot.evaluate.verdict import (
    CaseCorrectness,
    CaseResult,
    CaseTiming,
    Reason,
    Stage,
    Stat,
    Verdict,
)


def verdict_to_text(verdict: Verdict) -> str:
    # allow_nan keeps inf/nan error figures exact across a round trip
    return json.dumps(verdict.to_json(), allow_nan=True, sort_keys=True)


def verdict_from_text(text: str) -> Verdict:
    return verdict_from_json(json.loads(text))


def verdict_from_json(data: dict[str, Any]) -> Verdict:
    return Verdict(
        accepted=bool(data["accepted"]),
        stage=Stage(data["stage"]),
        reasons=tuple(Reason(**r) for r in data.get("reasons", ())),
        device=data.get("device", ""),
        cases=tuple(_case(c) for c in data.get("cases", ())),
        seeds=int(data.get("seeds", 0)),
        wall_s=float(data.get("wall_s", 0.0)),
        worker_output=data.get("worker_output", ""),
        versions=dict(data.get("versions", {})),
    )


def _case(data: dict[str, Any]) -> CaseResult:
    correctness = data.get("correctness")
    timing = data.get("timing")
    return CaseResult(
        case=dict(data.get("case", {})),
        correctness=_correctness(correctness) if isinstance(correctness, dict) else None,
        timing=_timing(timing) if isinstance(timing, dict) else None,
    )


def _correctness(data: dict[str, Any]) -> CaseCorrectness:
    fields = dict(data)
    fields["distributions"] = tuple(fields.get("distributions", ()))
    return CaseCorrectness(**fields)


def _stat(data: dict[str, Any] | None) -> Stat | None:
    return Stat(**data) if isinstance(data, dict) else None


def _timing(data: dict[str, Any]) -> CaseTiming:
    fields = dict(data)
    for name in (
        "candidate_graph",
        "candidate_plain",
        "eager_graph",
        "eager_plain",
        "compile_graph",
        "compile_plain",
        "compile_max_autotune_graph",
    ):
        fields[name] = _stat(fields.get(name))
    return CaseTiming(**fields)
