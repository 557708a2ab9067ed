"""Verdicts to and from the JSON kept in the store (`Verdict.to_json` is the wire format)."""

from __future__ import annotations

import dataclasses
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
    values = _known(Verdict, data)
    values["stage"] = Stage(values["stage"])
    values["reasons"] = tuple(Reason(**_known(Reason, r)) for r in values.get("reasons", ()))
    values["cases"] = tuple(_case(c) for c in values.get("cases", ()))
    values["versions"] = dict(values.get("versions", {}))
    return Verdict(**values)


def _known(record: type, data: dict[str, Any]) -> dict[str, Any]:
    """The keys `record` has: to_json's derived keys (timed, speedups) are recomputed."""
    names = {f.name for f in dataclasses.fields(record)}
    return {k: v for k, v in data.items() if k in names}


def _case(data: dict[str, Any]) -> CaseResult:
    correctness = data.get("correctness")
    timing = data.get("timing")
    return CaseResult(
        case=dict(data.get("case", {})),
        correctness=_correctness(correctness) if isinstance(correctness, dict) else None,
        timing=_timing(timing) if isinstance(timing, dict) else None,
    )


def _correctness(data: dict[str, Any]) -> CaseCorrectness:
    fields = _known(CaseCorrectness, data)
    fields["distributions"] = tuple(fields.get("distributions", ()))
    return CaseCorrectness(**fields)


def _stat(data: dict[str, Any] | None) -> Stat | None:
    return Stat(**_known(Stat, data)) if isinstance(data, dict) else None


def _timing(data: dict[str, Any]) -> CaseTiming:
    fields = _known(CaseTiming, data)
    for name in (
        "candidate_graph",
        "candidate_plain",
        "eager_graph",
        "eager_plain",
        "compile_graph",
        "compile_plain",
        "compile_max_autotune_graph",
    ):
        if name in fields:
            fields[name] = _stat(fields[name])
    return CaseTiming(**fields)
