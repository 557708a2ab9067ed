"""`kbot optimize PROBLEM.py`: search for a faster, correct Triton kernel for one problem file.

Writes `<work-dir>/runs/<run_id>/` (problem.py, target.json, best_candidate.py, kernel.py,
report.json, report.md). With `--json`, progress goes to stderr as JSON lines and stdout holds
only the envelope, whose data names the winning candidate file.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import shlex
import sys
from pathlib import Path
from typing import Any

from kbot.errors import ExitCode, Interrupted, UsageError
from kbot.output import CommandResult, to_jsonable

HELP = "evolve a faster Triton kernel for a problem file; writes <work-dir>/runs/<run_id>/"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "problem", nargs="?", help="KernelBench-format problem file (optional with --resume)"
    )
    parser.add_argument("--device", choices=("auto", "cpu", "cuda"), help="default: auto")
    parser.add_argument("--gpus", help="GPU indices for the evaluator, e.g. 0,1")
    parser.add_argument("--proposers", help="comma-separated, e.g. codegen,tune")
    parser.add_argument("--generations", type=int, help="generations of the search")
    parser.add_argument("--time-budget", help='wall time, e.g. "10m", "90s", "600"')
    parser.add_argument("--max-candidates", type=int, help="candidates to evaluate at most")
    parser.add_argument("--islands", type=int, help="populations evolving apart (default 4)")
    parser.add_argument("--work-dir", help="where runs/ and kbot.sqlite go (default: .kbot)")
    parser.add_argument("--resume", metavar="RUN_ID", help="continue a killed or stopped run")
    parser.add_argument(
        "--target",
        metavar="JSON",
        help="scan finding to record as target.json (default: <problem>.target.json beside it)",
    )
    parser.add_argument("--config", metavar="FILE", help="use this .kbot.yml")
    add_llm_arguments(parser)


def add_llm_arguments(parser: argparse.ArgumentParser) -> None:
    """The llm proposer's endpoint (docs/llm.md); `kbot run` takes the same flags."""
    group = parser.add_argument_group("llm proposer")
    group.add_argument(
        "--llm-base-url",
        metavar="URL",
        help="OpenAI-compatible endpoint, e.g. http://localhost:30000/v1",
    )
    group.add_argument("--llm-model", metavar="NAME", help="model name the endpoint serves")
    group.add_argument(
        "--llm-api-key-env",
        metavar="VAR",
        help="NAME of the environment variable holding the key (default OPENAI_API_KEY); never the key",
    )


def llm_overrides(args: argparse.Namespace) -> dict[str, Any]:
    return {
        "llm.base_url": args.llm_base_url,
        "llm.model": args.llm_model,
        "llm.api_key_env": args.llm_api_key_env,
    }


def run(args: argparse.Namespace) -> CommandResult:
    from kbot.config import load_config
    from kbot.problem import load_problem
    from kbot.search import Budget, StopReason, load_run_options, optimize
    from kbot.search.options import options_from_config
    from kbot.search.problem_check import check_problem_builds
    from kbot.search.progress import progress_for

    if args.problem is None and args.resume is None:
        raise UsageError("`kbot optimize` needs a PROBLEM.py, or --resume RUN_ID")
    anchor = Path(args.problem) if args.problem else Path(".")
    if args.problem and not anchor.is_file():
        raise UsageError(f"problem file {args.problem} does not exist")
    config = load_config(anchor, cli=_config_overrides(args), config_file=args.config)
    work_dir = Path(args.work_dir).resolve() if args.work_dir else config.work_dir
    target = _target(args.target, args.problem)
    notes: list[str] = []
    if args.resume:
        stored, problem_path, problem_sha = load_run_options(work_dir, args.resume)
        problem = _resume_problem(args.problem, problem_path, problem_sha, work_dir, args.resume)
        budget = Budget(
            generations=args.generations or stored.budget.generations,
            time_s=config.search.time_budget_s if args.time_budget else stored.budget.time_s,
            max_candidates=args.max_candidates or stored.budget.max_candidates,
            max_tokens=stored.budget.max_tokens,
            max_usd=stored.budget.max_usd,
        )
        options = dataclasses.replace(stored, budget=budget)
    else:
        problem = load_problem(args.problem)
        options = options_from_config(config, notes)
    check_problem_builds(problem)  # a get_inputs that raises: said now, not after the search
    progress = progress_for(args.json, sys.stderr)
    for note in notes:
        progress.note(note)
    runs_before = _run_ids(work_dir, problem)
    try:
        result = optimize(
            problem, options, work_dir, target, resume_run_id=args.resume, progress=progress
        )
    except KeyboardInterrupt:  # a second Ctrl-C: the run stops where it is (the store is kept)
        started = args.resume or next(
            (r for r in _run_ids(work_dir, problem) if r not in runs_before), None
        )
        if started is None:
            message = "interrupted before the run started; run the same command again"
            raise Interrupted(message) from None
        raise Interrupted(
            f"interrupted; resume with `{_resume_command(started, work_dir)}`"
        ) from None
    data: dict[str, Any] = {
        "run_id": result.run_id,
        "run_dir": result.run_dir,
        "status": result.status,
        "message": result.message,
        "stop_reason": result.stop_reason,
        "best_candidate": result.best_candidate_path,
        "kernel": result.kernel_path,
        "report_json": result.report_json_path,
        "report_md": result.report_md_path,
        "fitness": result.fitness,
        "candidates": result.candidates,
        "accepted": result.accepted,
        "fresh_evaluations": result.fresh_evaluations,
        "verdict": to_jsonable(result.verdict) if result.verdict else None,
        "notes": notes,
    }
    # a run stopped by a signal wrote its report, but did not finish: exit 130 for Ctrl-C,
    # 1 for SIGTERM (docs/search.md)
    interrupted = result.stop_reason is StopReason.INTERRUPTED
    code = ExitCode.OK if result.has_winner and not interrupted else ExitCode.REJECTED
    notice = ""
    if interrupted and result.stop_signal != "SIGTERM":
        code = ExitCode.INTERRUPTED
        notice = (
            f"interrupted; what it measured is kept; resume with "
            f"`{_resume_command(result.run_id, work_dir)}`"
        )
    return CommandResult(code, _text(result), data, notice)


def _run_ids(work_dir: Path, problem: Any) -> list[str]:
    """The store's runs of this problem, newest first (none while there is no store)."""
    from kbot.search.runner import STORE_NAME
    from kbot.search.store import Store

    if not (work_dir / STORE_NAME).is_file():
        return []
    with Store(work_dir / STORE_NAME) as store:
        return [run.run_id for run in store.runs_of_problem(problem.source_sha256)]


def _resume_command(run_id: str, work_dir: Path) -> str:
    return f"kbot optimize --resume {run_id} --work-dir {shlex.quote(str(work_dir))}"


def _config_overrides(args: argparse.Namespace) -> dict[str, Any]:
    overrides: dict[str, Any] = {
        "device": args.device,
        "search.generations": args.generations,
        "search.time_budget_s": args.time_budget,
        "search.max_candidates": args.max_candidates,
        "search.islands": args.islands,
        **llm_overrides(args),
    }
    if args.gpus:
        try:
            overrides["gpus"] = [int(g) for g in args.gpus.split(",") if g.strip()]
        except ValueError:
            raise UsageError(f"--gpus {args.gpus!r}: write GPU indices like 0,1") from None
    if args.proposers:
        overrides["search.proposers"] = [p.strip() for p in args.proposers.split(",") if p.strip()]
    return overrides


def _resume_problem(
    given: str | None, stored_path: str, stored_sha: str, work_dir: Path, run_id: str
) -> Any:
    from kbot.problem import load_problem
    from kbot.search.artifacts import run_dir_of

    if given:
        return load_problem(given)
    for path in (Path(stored_path), run_dir_of(work_dir, run_id) / "problem.py"):
        if path.is_file():
            problem = load_problem(path)
            if problem.source_sha256 == stored_sha:
                return problem
    raise UsageError(f"--resume {run_id}: the run's problem file is gone; pass it as PROBLEM.py")


def _target(text: str | None, problem: str | None) -> dict[str, Any] | None:
    """The scan finding the run records: --target, else the `<name>.target.json` that
    `kbot scan --emit-problems` wrote beside the problem file (so `kbot pr` knows what to patch)."""
    if text is None:
        beside = Path(problem).with_suffix(".target.json") if problem else None
        if beside is None or not beside.is_file():
            return None
        text = str(beside)
    path = Path(text)
    if not path.is_file() and not _inline_json(text):
        raise UsageError(
            f"--target {text}: no such file; give the scan's <name>.target.json or a JSON object"
        )
    try:
        raw = path.read_text() if path.is_file() else text
        value = json.loads(raw)
    except (OSError, json.JSONDecodeError) as exc:
        raise UsageError(f"--target: not a JSON object or a JSON file ({exc})") from None
    if not isinstance(value, dict):
        raise UsageError('--target must be a JSON object like {"file": ..., "line": ...}')
    return value


def _inline_json(text: str) -> bool:
    """`{...}` or `[...]` given on the command line, as opposed to a file's path."""
    return text.lstrip().startswith(("{", "["))


def _text(result: Any) -> str:
    lines = [result.message, f"run: {result.run_id} ({result.run_dir})"]
    if result.best_candidate_path:
        lines.append(f"best candidate: {result.best_candidate_path}")
    if result.kernel_path:
        lines.append(f"kernel module: {result.kernel_path}")
    if result.report_md_path:
        lines.append(f"report: {result.report_md_path}")
    return "\n".join(lines)
