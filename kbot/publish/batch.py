"""`kbot publish RUN_DIR...`: publish the run directories of many optimize jobs at once, under
the same limits as `kbot run` (one RunState: `max_prs_per_run`, `max_open_prs`), one row each.

This is the Action's publish job: every optimize job of the matrix uploaded its run directory
as an artifact, the publish job downloaded them all, and here each becomes a PR (or a draft).
A run without an accepted kernel, and a target of the scan's matrix whose job left no run
directory, each get a row saying so; neither stops the others.
"""

from __future__ import annotations

import hashlib
import json
import tempfile
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kbot.errors import KbotError
from kbot.evaluate.verdict import NOT_TIMED
from kbot.publish.lifecycle import RunState
from kbot.publish.publisher import PublishOutcome, PublishSettings, publish_run
from kbot.publish.rundir import RunDirError
from kbot.publish.summary import RunRow

REPORT = "report.json"
# Where the Action's optimize step leaves `kbot optimize --json`'s envelope, in the run dir.
OPTIMIZE_ENVELOPE = "optimize.json"

PublishFn = Callable[..., PublishOutcome]


@dataclass(frozen=True)
class FoundRun:
    path: Path
    name: str  # the scan's name of the target (target.json `name`), else the folder's name
    target: str  # "file.py::Qualname", "" when the run has no target.json
    report: dict[str, Any]


def find_run_dirs(paths: Iterable[Path]) -> list[FoundRun]:
    """Each path is a run directory (it holds report.json) or a folder of them, one or two levels
    down (download-artifact puts each artifact in a folder named after it). Sorted by name."""
    found: dict[Path, FoundRun] = {}
    for path in paths:
        if not path.is_dir():
            raise KbotError(f"{path} is not a folder; give run directories or a folder of them")
        if (path / REPORT).is_file():
            candidates = [path]
        else:
            candidates = sorted(p.parent for p in path.glob(f"*/{REPORT}"))
            candidates += sorted(p.parent for p in path.glob(f"*/*/{REPORT}"))
        for run_dir in candidates:
            found.setdefault(run_dir.resolve(), _found(run_dir))
    return sorted(found.values(), key=lambda run: (run.name, str(run.path)))


def _found(run_dir: Path) -> FoundRun:
    target = _json(run_dir / "target.json")
    name = str(target.get("name") or "") or run_dir.name
    label = f"{target['file']}::{target['qualname']}" if target.get("file") else ""
    return FoundRun(run_dir, name, label, _json(run_dir / REPORT))


def _json(path: Path) -> dict[str, Any]:
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}


def run_result(report: dict[str, Any]) -> str:
    """The winner's fitness in words, as `kbot run` says it; else why there is none."""
    verdict = report.get("verdict")
    winner = report.get("winner") or {}
    if not isinstance(verdict, dict) or not verdict.get("accepted"):
        return str(report.get("message") or "no kernel accepted")
    if not report.get("timed"):
        return f"accepted, {NOT_TIMED}"
    return str(winner.get("fitness") or report.get("message") or "accepted")


def checkout_problems(repo: Path, config: Any) -> dict[str, str]:
    """The sha256 of every problem file this checkout's own scan extracts, by op name: what a
    run directory's problem.py must be for it to be published from here. The files go to a
    temporary folder; nothing of the work directory is touched."""
    from kbot.publish.pipeline import extract_targets

    with tempfile.TemporaryDirectory(prefix="kbot-publish-check-") as folder:
        extracted = extract_targets(repo, config, Path(folder))
        return {
            e.name: hashlib.sha256(e.problem.read_bytes()).hexdigest()
            for e in extracted
            if e.problem is not None
        }


def untrusted_problem(run: FoundRun, trusted: dict[str, str]) -> str | None:
    """Why `run`'s problem.py must not be imported here, or None when it is byte for byte the
    problem this checkout extracts for the op. The publish job holds the token and imports the
    problem; a run directory comes from another job's runner, which ran generated code."""
    own = trusted.get(run.name)
    if own is None:
        return (
            f"this checkout's scan extracts no op named {run.name!r}: its problem.py was not "
            "imported; scan, optimize and publish must run on the same commit and configuration"
        )
    actual = hashlib.sha256((run.path / "problem.py").read_bytes()).hexdigest()
    if actual != own:
        return (
            f"problem.py is not this checkout's extraction of {run.name} (sha256 {actual[:12]} "
            f"vs {own[:12]}): not imported, not published; re-run its optimize job on this commit"
        )
    return None


def publish_run_dirs(
    runs: Sequence[FoundRun],
    repo: Path,
    config: Any,
    work_dir: Path,
    push: bool,
    expected: Sequence[dict[str, Any]] = (),
    settings: PublishSettings | None = None,
    publish: PublishFn = publish_run,
    trusted: dict[str, str] | None = None,
) -> list[RunRow]:
    """One row per run directory, then one per expected target (the scan's matrix entries) that
    no run directory answers. With `trusted` (checkout_problems), a run directory whose
    problem.py is not this checkout's own extraction is refused before anything reads it."""
    settings = settings or PublishSettings.from_config(config.publish)
    adapters = {t.name: t.adapter for t in config.targets}
    state = RunState()
    rows: list[RunRow] = []
    for run in runs:
        result = run_result(run.report)
        refused = None
        if trusted is not None and (run.path / "problem.py").is_file():
            refused = untrusted_problem(run, trusted)
        if refused is not None:
            rows.append(
                RunRow(run.target, run.name, "publish", result, "failed", refused, str(run.path))
            )
            continue
        try:
            outcome = publish(
                run.path,
                repo,
                work_dir,
                settings,
                push=push,
                adapter=adapters.get(run.name, "auto"),
                state=state,
            )
        except RunDirError as exc:
            rows.append(
                RunRow(
                    run.target,
                    run.name,
                    "optimize",
                    "no kernel accepted",
                    "skipped",
                    _first_line(str(exc)) if result.startswith("accepted") else result,
                    run_dir=str(run.path),
                )
            )
            continue
        except KbotError as exc:
            rows.append(
                RunRow(
                    run.target,
                    run.name,
                    "publish",
                    result,
                    "failed",
                    _first_line(str(exc)),
                    run_dir=str(run.path),
                )
            )
            continue
        detail = outcome.pr_url or f"branch {outcome.branch}, drafts {outcome.drafts_dir}"
        if outcome.action.value in ("human_edited", "limited", "up_to_date"):
            detail = outcome.message
        rows.append(
            RunRow(
                outcome.target or run.target,
                run.name,
                "published",
                result,
                outcome.action.value,
                detail,
                run_dir=str(run.path),
                pr_url=outcome.pr_url or "",
            )
        )
    answered = {run.name for run in runs}
    for entry in expected:
        name = str(entry.get("op") or entry.get("name") or "")
        if name and name not in answered:
            answered.add(name)
            rows.append(
                RunRow(
                    str(entry.get("target") or ""),
                    name,
                    "optimize",
                    "no run directory",
                    "failed",
                    "its optimize job uploaded no run directory; see that job's log",
                )
            )
    return rows


def _first_line(text: str) -> str:
    return " ".join(text.split())
