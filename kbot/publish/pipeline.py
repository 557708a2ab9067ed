"""`kbot run`: scan -> extract -> optimize each eligible target -> publish, one row per target.

One failing op never stops the run: its row says where it stopped and why. The stages are
passed in as functions so tests can replace the search (minutes) with a fake (milliseconds).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from kbot.errors import KbotError
from kbot.evaluate.verdict import NOT_TIMED
from kbot.output import to_jsonable
from kbot.publish.lifecycle import RunState
from kbot.publish.plan import SlowerEverywhereError
from kbot.publish.publisher import PublishOutcome, PublishSettings, publish_run
from kbot.publish.summary import RunRow


@dataclass(frozen=True)
class Extracted:
    name: str
    target: str  # "file.py::Qualname"
    problem: Path | None  # None: not extracted, `message` says why
    target_json: Path | None
    message: str


@dataclass(frozen=True)
class Optimized:
    run_dir: Path
    accepted: bool
    summary: str  # the winner's fitness in words, or why there is none
    reused: bool = False  # a finished run of an earlier `kbot run` over this work directory
    interrupted: bool = False  # Ctrl-C or SIGTERM: `kbot run` stops; run again to continue


ExtractFn = Callable[[Path, Any, Path], list[Extracted]]
OptimizeFn = Callable[[Path, dict[str, Any], Any, Path], Optimized]
PublishFn = Callable[..., PublishOutcome]


def extract_targets(path: Path, config: Any, work_dir: Path) -> list[Extracted]:
    """The scanner, configured like `kbot scan PATH --emit-problems <work_dir>/problems`."""
    from kbot.commands.scan import options_from_args
    from kbot.scan import scan
    from kbot.scan.extract import emit_problems

    args = argparse.Namespace(
        path=path,
        top=None,
        include_existing=None,
        config=config.config_file,
        profile=None,
        profile_module=None,
        model_config=config.scan.model_config,  # with kbot run's --model-config on top
    )
    options, config_root = options_from_args(args)
    result = scan(path, options, config_root=config_root)
    emitted = emit_problems(result, work_dir / "problems", options)
    return [Extracted(e.name, e.target, e.path, e.target_json, e.message) for e in emitted]


def optimize_target(
    problem_path: Path, target: dict[str, Any], config: Any, work_dir: Path
) -> Optimized:
    """The search with the configured budgets (docs/config.md `search:`). A run of this work
    directory that already searched this problem with these options is reused when it finished
    and continued when it was killed (kbot.search.earlier), so `kbot run` resumes."""
    from kbot.problem import load_problem
    from kbot.search import OptimizeStatus, optimize
    from kbot.search.earlier import earlier_run
    from kbot.search.options import options_from_config

    notes: list[str] = []
    options = options_from_config(config, notes)
    problem = load_problem(problem_path)
    earlier = earlier_run(work_dir, problem, options, target)
    if earlier is not None and earlier.finished:
        return Optimized(earlier.run_dir, earlier.accepted, earlier.summary, reused=True)
    resume = earlier.run_id if earlier is not None else None
    result = optimize(problem, options, work_dir, target, resume_run_id=resume)
    summary = result.fitness if result.has_winner else f"{result.message} ({result.run_dir})"
    if result.has_winner and result.verdict is not None and not result.verdict.timed:
        summary = f"accepted, {NOT_TIMED}"
    interrupted = result.status is OptimizeStatus.INTERRUPTED
    if interrupted:
        summary = f"interrupted; run kbot run again to continue it ({result.run_dir})"
    return Optimized(result.run_dir, result.has_winner and not interrupted, summary,
                     interrupted=interrupted)  # fmt: skip


def run_pipeline(
    path: Path,
    config: Any,
    work_dir: Path,
    push: bool,
    extract: ExtractFn = extract_targets,
    optimize: OptimizeFn = optimize_target,
    publish: PublishFn = publish_run,
    log: TextIO = sys.stderr,
) -> list[RunRow]:
    settings = PublishSettings.from_config(config.publish)
    adapters = {t.name: t.adapter for t in config.targets}
    state = RunState()
    rows: list[RunRow] = []
    targets = extract(path, config, work_dir)
    stale = _stale_targets(path, settings.base_branch, targets)
    for index, item in enumerate(targets):
        _save_progress(work_dir, rows)  # kept if the process dies before it prints them
        if item.problem is None or item.target_json is None:
            rows.append(
                RunRow(item.target, item.name, "extract", "not extracted", "skipped", item.message)
            )
            continue
        if item.name in stale:
            rows.append(RunRow(item.target, item.name, "extract", "not optimized", "skipped",
                               stale[item.name]))  # fmt: skip
            continue
        print(f"kbot run: optimizing {item.name} ({item.target})", file=log, flush=True)
        try:
            target = json.loads(item.target_json.read_text(encoding="utf-8"))
            optimized = optimize(item.problem, target, config, work_dir)
            if optimized.reused:
                print(f"kbot run: {item.name}: reusing finished run {optimized.run_dir}", file=log)
        except KbotError as exc:
            rows.append(RunRow(item.target, item.name, "optimize", "error", "failed", str(exc)))
            continue
        if optimized.interrupted:
            rows.append(RunRow(item.target, item.name, "optimize", "interrupted", "skipped",
                               optimized.summary, run_dir=str(optimized.run_dir)))  # fmt: skip
            rows += [_not_reached(rest) for rest in targets[index + 1 :]]
            break
        if not optimized.accepted:
            rows.append(
                RunRow(
                    item.target,
                    item.name,
                    "optimize",
                    "no kernel accepted",
                    "skipped",
                    optimized.summary,
                    run_dir=str(optimized.run_dir),
                )
            )
            continue
        print(f"kbot run: publishing {item.name}", file=log, flush=True)
        try:
            outcome = publish(
                optimized.run_dir,
                path,
                work_dir,
                settings,
                push=push,
                adapter=adapters.get(item.name, "auto"),
                state=state,
            )
        except SlowerEverywhereError as exc:  # a measured result, not a failure
            rows.append(
                RunRow(item.target, item.name, "publish", optimized.summary, "skipped", str(exc),
                       run_dir=str(optimized.run_dir))
            )  # fmt: skip
            continue
        except KbotError as exc:
            rows.append(
                RunRow(item.target, item.name, "publish", optimized.summary, "failed", str(exc))
            )
            continue
        detail = outcome.pr_url or f"branch {outcome.branch}, drafts {outcome.drafts_dir}"
        if outcome.action.value in ("human_edited", "limited", "up_to_date"):
            detail = outcome.message
        rows.append(
            RunRow(
                item.target,
                outcome.op,
                "published",
                optimized.summary,
                outcome.action.value,
                detail,
                run_dir=str(optimized.run_dir),
                pr_url=outcome.pr_url or "",
            )
        )
    _save_progress(work_dir, rows)
    return rows


def _stale_targets(path: Path, base_branch: str, targets: list[Extracted]) -> dict[str, str]:
    """Why each target whose file differs from the base branch is not optimized (its PR would
    patch the base's code, not the code its kernel was checked against)."""
    from kbot.publish.gitops import changed_since_base

    files: dict[str, Path] = {}
    for item in targets:
        if item.target_json is None:
            continue
        record = json.loads(item.target_json.read_text(encoding="utf-8"))
        if isinstance(record.get("root"), str) and isinstance(record.get("file"), str):
            files[item.name] = Path(record["root"]) / record["file"]
    changed = changed_since_base(path, base_branch, list(files.values()))
    return {
        name: f"{file.name} differs from {changed[file]} (changes not committed or not "
        f"pushed): kbot's branch starts from {changed[file]}, so its PR would patch other code "
        "than the kernel was checked against; commit (and push) them, then run again"
        for name, file in files.items()
        if file in changed
    }


PROGRESS_FILE = "run.json"


def _save_progress(work_dir: Path, rows: list[RunRow]) -> None:
    """`<work_dir>/run.json`: what each target of this `kbot run` came to so far."""
    work_dir.mkdir(parents=True, exist_ok=True)
    partial = work_dir / f"{PROGRESS_FILE}.part"
    partial.write_text(json.dumps(to_jsonable(rows), indent=1), encoding="utf-8")
    partial.replace(work_dir / PROGRESS_FILE)


def _not_reached(item: Extracted) -> RunRow:
    if item.problem is None:
        return RunRow(item.target, item.name, "extract", "not extracted", "skipped", item.message)
    return RunRow(item.target, item.name, "optimize", "not reached", "skipped",
                  "kbot run was stopped before this target; run it again to continue")  # fmt: skip
