"""Turning one optimize run's result into a benchmark row: status, failure class, speedups."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from kbot.bench.kernelbench import ProblemRef
from kbot.bench.records import ProblemResult, Status
from kbot.evaluate.verdict import Verdict, measured


def speedups(verdict: Verdict | None) -> dict[str, float | None]:
    """Geomeans over the timed cases: vs eager, vs torch.compile, and vs the faster of the two
    per case (the smaller of the two speedups), plus the worst case's roofline fraction."""
    empty = dict.fromkeys(
        ("speedup_vs_eager", "speedup_vs_compile", "speedup_vs_best", "roofline_fraction")
    )
    if verdict is None or not verdict.accepted or not verdict.timed:
        return empty
    timings = [c.timing for c in verdict.cases if c.timing is not None]
    eager = [t.speedup_vs_eager for t in timings]
    compiled = [t.speedup_vs_compile for t in timings]
    best = [e if c is None or not measured(c) else min(e, c) for e, c in zip(eager, compiled)]
    roof = [t.roofline_fraction for t in timings if measured(t.roofline_fraction)]
    return {
        "speedup_vs_eager": geomean(eager),
        "speedup_vs_compile": geomean(compiled) if None not in compiled else None,
        "speedup_vs_best": geomean(best),
        "roofline_fraction": min(roof) if roof else None,
    }


def geomean(values: list[float | None]) -> float | None:
    if not values or any(v is None or not measured(v) or v <= 0 for v in values):
        return None
    return math.exp(sum(math.log(v) for v in values) / len(values))  # type: ignore[arg-type]


def _report(path: Path | None) -> dict[str, Any]:
    if path is None or not Path(path).is_file():
        return {}
    try:
        return json.loads(Path(path).read_text())
    except (OSError, json.JSONDecodeError):
        return {}


def failure_class(result: Any, report: dict[str, Any]) -> tuple[Status, str]:
    """(status, one-line failure class) of an optimize run without a winner."""
    notes = [str(n) for n in report.get("notes") or []]
    if result.candidates == 0:
        schedule = [n for n in notes if "no codegen schedule:" in n]
        if result.stop_reason.value == "time":
            return Status.TIMEOUT, "timeout: the budget ran out before a candidate was evaluated"
        if schedule:
            reason = schedule[0].split("no codegen schedule:", 1)[1].strip()
            return Status.NO_SCHEDULE, f"no schedule: {reason[:160]}"
        return Status.NO_SCHEDULE, f"no candidate proposed: {'; '.join(notes)[:160]}"
    rejections = report.get("rejections") or []
    if rejections:
        return Status.REJECTED, f"rejected: {rejections[0]['reason']}"
    return Status.REJECTED, "rejected: see the run's report.md"


def problem_result(ref: ProblemRef, sha256: str, result: Any, elapsed_s: float) -> ProblemResult:
    """The row of a finished optimize run (kbot.search.OptimizeResult)."""
    report = _report(result.report_json_path)
    figures = speedups(result.verdict)
    if result.has_winner:
        status, failure = Status.ACCEPTED, ""
    else:
        status, failure = failure_class(result, report)
    return ProblemResult(
        level=ref.level,
        number=ref.number,
        name=ref.name,
        path=str(ref.path),
        sha256=sha256,
        status=status,
        failure=failure,
        message=result.message,
        run_id=result.run_id,
        timed=bool(result.verdict and result.verdict.timed),
        candidates=result.candidates,
        accepted_candidates=result.accepted,
        elapsed_s=round(elapsed_s, 1),
        best_candidate=str(result.best_candidate_path) if result.best_candidate_path else None,
        **figures,
    )


def not_run(ref: ProblemRef, sha256: str, status: Status, failure: str, why: str) -> ProblemResult:
    """The row of a problem that was skipped or could not be run: `failure` is its class
    (shared by problems failing the same way), `why` the details."""
    return ProblemResult(
        level=ref.level, number=ref.number, name=ref.name, path=str(ref.path), sha256=sha256,
        status=status, failure=failure[:200], message=why[:2000], run_id=None, timed=False,
        speedup_vs_eager=None, speedup_vs_compile=None, speedup_vs_best=None,
        roofline_fraction=None, candidates=0, accepted_candidates=0, elapsed_s=0.0,
        best_candidate=None,
    )  # fmt: skip
