"""`kbot run` again over the same work directory: a target whose problem version, target,
options and environment match a finished run is not searched again; one whose run was killed or
interrupted continues that run (`optimize(..., resume_run_id=...)`), so a long run over many
targets picks up where it stopped."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kbot.evaluate.verdict import NOT_TIMED
from kbot.problem import ProblemSpec
from kbot.search.artifacts import run_dir_of
from kbot.search.environment import environment_key, resolve_device
from kbot.search.options import OptimizeOptions
from kbot.search.runner import (
    STORE_NAME,
    evaluation_options,
    options_from_json,
    options_to_json,
)
from kbot.search.store import Store


@dataclass(frozen=True)
class EarlierRun:
    run_id: str
    run_dir: Path
    finished: bool  # False: killed or interrupted, to be resumed
    accepted: bool
    summary: str  # the winner's fitness in words, or why there is none


def earlier_run(
    work_dir: Path, problem: ProblemSpec, options: OptimizeOptions, target: dict[str, Any] | None
) -> EarlierRun | None:
    """The newest run in `work_dir`'s store of this very problem source and target, made with
    the same options on the same device, kbot evaluator, torch and Triton; None when there is
    none (a changed problem, budget or GPU starts a new run)."""
    path = Path(work_dir) / STORE_NAME
    if not path.is_file():
        return None
    device, device_name = resolve_device(options.device, options.gpus)
    env_key = environment_key(device_name, evaluation_options(device, options.gpus, options.seeds))
    wanted = _normal(options_to_json(options))
    with Store(path) as store:
        for run in store.runs_of_problem(problem.source_sha256):
            if run.env_key != env_key or run.target != target:
                continue
            if _normal(options_to_json(options_from_json(run.options))) != wanted:
                continue
            return _describe(run.run_id, run_dir_of(work_dir, run.run_id), run.status)
    return None


def _normal(options: dict[str, Any]) -> str:
    return json.dumps(options, sort_keys=True, default=str)


def _describe(run_id: str, run_dir: Path, status: str) -> EarlierRun:
    report_path = run_dir / "report.json"
    if status != "finished" or not report_path.is_file():
        return EarlierRun(run_id, run_dir, finished=False, accepted=False, summary="")
    report = json.loads(report_path.read_text(encoding="utf-8"))
    winner = report.get("winner")
    accepted = bool(winner) and (run_dir / "best_candidate.py").is_file()
    if not accepted:
        summary = f"{report.get('message', 'no candidate accepted')} ({run_dir})"
    elif not report.get("timed"):
        summary = f"accepted, {NOT_TIMED}"
    else:
        summary = winner["fitness"]
    return EarlierRun(run_id, run_dir, finished=True, accepted=accepted, summary=summary)
