"""A step's outputs and job summary from the JSON envelope of the kbot command it ran.

One function per mode returns a `StepReport`; `kbot action report` writes it to
`$GITHUB_OUTPUT` and `$GITHUB_STEP_SUMMARY`. Every mode sets `exit-code`, `ok`, `error`,
`data` and `result-file`; the rest is the mode's own (docs/action.md, "Outputs").
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kbot.action.matrix import build_matrix
from kbot.publish.batch import OPTIMIZE_ENVELOPE
from kbot.publish.job_summary import (
    OptimizeSummary,
    render_optimize_summary,
    render_publish_summary,
    summary_context,
)
from kbot.publish.render import table_cell

MODES = ("run", "scan", "optimize", "publish")


@dataclass(frozen=True)
class StepReport:
    outputs: dict[str, str]
    summary: str
    crashed: bool = False  # no JSON envelope: kbot died before it could say why
    notes: tuple[str, ...] = field(default=())


def read_envelope(path: Path, exit_code: int) -> tuple[dict[str, Any], bool]:
    try:
        envelope = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(envelope, dict):
            raise ValueError("not an object")
    except (OSError, ValueError):
        # No envelope means kbot crashed; `--debug` on a local run shows the traceback.
        return {
            "ok": False,
            "data": {},
            "error": f"kbot exited {exit_code} without a JSON result",
        }, True
    return envelope, False


def common_outputs(envelope: dict[str, Any], exit_code: int, result_file: Path) -> dict[str, str]:
    data = envelope.get("data") or {}
    return {
        "exit-code": str(exit_code),
        "ok": "true" if envelope.get("ok") else "false",
        "error": " ".join(str(envelope.get("error") or "").split()),
        "data": json.dumps(data, separators=(",", ":"), sort_keys=True),
        "result-file": str(result_file),
    }


def report_scan(envelope: dict[str, Any], max_targets: int) -> tuple[dict[str, str], str]:
    from kbot.publish.job_summary import render_scan_summary

    matrix = build_matrix(envelope.get("data") or {}, max_targets)
    outputs = {
        "targets": json.dumps(matrix.to_json(), separators=(",", ":")),
        "count": str(len(matrix.include)),
    }
    return outputs, render_scan_summary(matrix)


def report_optimize(
    envelope: dict[str, Any], prepared: dict[str, Any], cache_hit: bool
) -> tuple[dict[str, str], str]:
    data = envelope.get("data") or {}
    run_dir = Path(data["run_dir"]) if data.get("run_dir") else None
    if run_dir is not None and run_dir.is_dir():
        # The publish job reads how the search went from here (the artifact is this folder).
        (run_dir / OPTIMIZE_ENVELOPE).write_text(json.dumps(envelope, indent=2) + "\n")
    verdict = data.get("verdict") if isinstance(data.get("verdict"), dict) else {}
    if not envelope.get("ok") and not data:
        outcome, message = "failed", str(envelope.get("error") or "kbot optimize failed")
    elif verdict.get("accepted") and envelope.get("exit_code", 0) == 0:
        outcome, message = "kernel accepted", str(data.get("message") or "")
    else:
        outcome, message = "no kernel accepted", str(data.get("message") or "")
    summary = OptimizeSummary(
        op=str(prepared.get("op") or ""),
        target=str(prepared.get("target") or ""),
        kind=str(prepared.get("kind") or ""),
        gpu_model=str(prepared.get("gpu_model") or "cpu"),
        outcome=outcome,
        message=message,
        candidates=data.get("candidates"),
        accepted=data.get("accepted"),
        fresh=data.get("fresh_evaluations"),
        stop_reason=str(data.get("stop_reason") or ""),
        cache_hit=cache_hit,
        artifact=str(prepared.get("artifact") or ""),
        run_dir=run_dir,
    )
    outputs = {
        "op": summary.op,
        "run-dir": str(run_dir) if run_dir else "",
        "accepted": "true" if outcome == "kernel accepted" else "false",
        "artifact": summary.artifact,
    }
    return outputs, render_optimize_summary(summary)


def report_rows(mode: str, envelope: dict[str, Any]) -> tuple[dict[str, str], str]:
    """run and publish: one row per target, the combined summary with every op's table."""
    data = envelope.get("data") or {}
    rows = summary_context(data)
    published = [r for r in rows if r.stage == "published"]
    compact = [
        {"op": r.op, "target": r.target, "stage": r.stage, "result": r.result,
         "action": r.action, "detail": r.detail, "pr_url": r.pr_url}
        for r in rows
    ]  # fmt: skip
    outputs = {
        "targets": json.dumps(compact, separators=(",", ":")),
        "count": str(len(rows)),
        "published": str(len(published)),
        "pushed": "true" if data.get("pushed") else "false",
        "pr-urls": json.dumps([r.pr_url for r in rows if r.pr_url]),
    }
    summary = render_publish_summary(mode, rows, bool(data.get("pushed")))
    if envelope.get("error"):
        summary = f"## kbot {mode}\n\nError: {table_cell(envelope['error'])}\n"
    return outputs, summary


def step_report(
    mode: str,
    result_file: Path,
    exit_code: int,
    max_targets: int = 0,
    prepared: dict[str, Any] | None = None,
    cache_hit: bool = False,
) -> StepReport:
    if mode not in MODES:
        raise ValueError(f"mode {mode!r}: choose one of {', '.join(MODES)}")
    envelope, crashed = read_envelope(result_file, exit_code)
    outputs = common_outputs(envelope, exit_code, result_file)
    if crashed or (envelope.get("error") and mode in ("scan",)):
        summary = f"## kbot {mode}\n\nError: {table_cell(envelope.get('error') or '')}\n"
        if mode == "scan":
            outputs.update(targets=json.dumps({"include": []}), count="0")
        return StepReport(outputs, summary, crashed)
    if mode == "scan":
        extra, summary = report_scan(envelope, max_targets)
    elif mode == "optimize":
        extra, summary = report_optimize(envelope, prepared or {}, cache_hit)
    else:
        extra, summary = report_rows(mode, envelope)
    outputs.update(extra)
    return StepReport(outputs, summary, crashed)
