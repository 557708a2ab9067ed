"""The Action's job summaries (`$GITHUB_STEP_SUMMARY`), one per mode, rendered from the
templates the PR body uses: the performance table is templates/performance.md.j2 in both.

- scan: every finding and whether it got an optimize job (templates/job_summary_scan.md.j2);
- optimize: the one op's outcome and its table (job_summary_optimize.md.j2);
- publish and run: one line per op (speedup, % of roofline, PR link), then each op's table
  (job_summary_publish.md.j2), the combined summary of the whole workflow run.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kbot.action.matrix import TargetMatrix
from kbot.evaluate.verdict import NOT_MEASURED, NOT_TIMED, Verdict
from kbot.publish.artifacts import performance_context
from kbot.publish.render import percent, render
from kbot.publish.rundir import RunDirError, load_run_dir
from kbot.publish.summary import RunRow


@dataclass(frozen=True)
class OptimizeSummary:
    op: str
    target: str
    kind: str
    gpu_model: str
    outcome: str  # "kernel accepted", "no kernel accepted", "failed"
    message: str
    candidates: int | None
    accepted: int | None
    fresh: int | None
    stop_reason: str
    cache_hit: bool
    artifact: str
    run_dir: Path | None


def render_scan_summary(matrix: TargetMatrix) -> str:
    targets = sum(1 for row in matrix.rows if not row.job.startswith("skipped"))
    return render(
        "job_summary_scan.md.j2",
        files_scanned=matrix.files_scanned,
        targets=targets,
        include=matrix.include,
        max_targets=matrix.max_targets,
        rows=matrix.rows,
    )


def render_optimize_summary(summary: OptimizeSummary) -> str:
    verdict = _accepted_verdict(summary.run_dir)
    return render(
        "job_summary_optimize.md.j2",
        op=summary.op,
        target=summary.target,
        kind=summary.kind,
        gpu_model=summary.gpu_model,
        outcome=summary.outcome,
        message=summary.message,
        candidates=summary.candidates,
        accepted=summary.accepted,
        fresh=summary.fresh,
        stop_reason=summary.stop_reason,
        cache_hit=summary.cache_hit,
        performance=performance_context(verdict) if verdict else None,
        artifact=summary.artifact,
    )


def render_publish_summary(mode: str, rows: Sequence[RunRow], pushed: bool) -> str:
    table = []
    sections = []
    for row in rows:
        verdict = _accepted_verdict(Path(row.run_dir)) if row.run_dir else None
        table.append(
            {
                "op": row.op,
                "target": row.target,
                "result": row.result,
                "speedup": _speedup(verdict),
                "roofline": _roofline(verdict),
                "pull_request": _pull_request(row),
            }
        )
        if verdict is not None:
            sections.append(
                {"op": row.op, "result": row.result, "performance": performance_context(verdict)}
            )
    return render(
        "job_summary_publish.md.j2",
        mode=mode,
        published=sum(1 for r in rows if r.stage == "published"),
        rows=table,
        sections=sections,
        pushed=pushed,
    )


def _accepted_verdict(run_dir: Path | None) -> Verdict | None:
    if run_dir is None or not run_dir.is_dir():
        return None
    try:
        return load_run_dir(run_dir).verdict
    except RunDirError:
        return None


def _speedup(verdict: Verdict | None) -> str:
    if verdict is None:
        return "–"
    geomean = verdict.speedup_geomean("compile")
    return f"{geomean:.2f}x" if geomean is not None else _untimed(verdict)


def _roofline(verdict: Verdict | None) -> str:
    if verdict is None:
        return "–"
    fractions = [c.timing.roofline_fraction for c in verdict.cases if c.timing is not None]
    fractions = [f for f in fractions if f is not None and not math.isnan(f)]
    if not fractions:
        return _untimed(verdict) if not verdict.timed else NOT_MEASURED
    low, high = percent(min(fractions)), percent(max(fractions))
    return low if low == high else f"{low}–{high}"


def _untimed(verdict: Verdict) -> str:
    return NOT_TIMED if not verdict.timed else NOT_MEASURED


def _pull_request(row: RunRow) -> str:
    if row.pr_url:
        number = row.pr_url.rstrip("/").rsplit("/", 1)[-1]
        label = f"#{number}" if number.isdigit() else "PR"
        return f"[{label}]({row.pr_url}) ({row.action})"
    if row.action == "dry_run":
        return f"dry run: {row.detail}"
    if row.stage == "published":
        return f"{row.action}: {row.detail}"
    return f"{row.action}: {row.detail}" if row.detail else row.action


def summary_context(data: dict[str, Any]) -> list[RunRow]:
    """RunRows back from an envelope's `data.targets` (JSON of `kbot run` or `kbot publish`)."""
    fields = RunRow.__dataclass_fields__
    rows = []
    for item in data.get("targets") or []:
        if isinstance(item, dict):
            rows.append(RunRow(**{k: str(item.get(k) or "") for k in fields}))
    return rows
