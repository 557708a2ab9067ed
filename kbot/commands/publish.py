"""`kbot publish RUN_DIR...`: publish many optimize runs (e.g. the artifacts of an Action's
optimize jobs) as PRs under one set of limits; a dry run by default outside CI."""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
from typing import Any

from kbot.errors import ExitCode, UsageError
from kbot.output import CommandResult

HELP = "publish several optimize run directories (or folders of them) as PRs, one row each"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "runs", nargs="+", metavar="RUN_DIR", help="run directories, or folders holding them"
    )
    parser.add_argument(
        "--repo", metavar="PATH", default=".", help="the scanned repository folder (default: .)"
    )
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument(
        "--dry-run",
        action="store_true",
        help="write branches and PR drafts to the work directory; send nothing (the default outside CI)",
    )
    mode.add_argument("--push", action="store_true", help="push branches and open or update PRs")
    parser.add_argument("--fork", metavar="OWNER/REPO", help="push the branches to this fork")
    parser.add_argument(
        "--expect",
        metavar="JSON",
        help='the scan\'s matrix ({"include": [...]}, or a file holding it): a target without a '
        "run directory gets a row saying its optimize job left none",
    )
    parser.add_argument(
        "--trust-run-dirs",
        action="store_true",
        help="skip re-extracting each op from --repo to check that the run directory's "
        "problem.py is this checkout's own (only for run directories made on this machine)",
    )
    parser.add_argument(
        "--model-config",
        metavar="PATH|PRESET",
        help="the model configuration the scan sized its targets with (scan.model_config), "
        "for the re-extraction that checks each run directory",
    )
    parser.add_argument("--work-dir", metavar="DIR", help="default: work_dir from .kbot.yml")
    parser.add_argument("--config", metavar="FILE", help="a .kbot.yml to use instead of searching")


def run(args: argparse.Namespace) -> CommandResult:
    from kbot.config import load_config
    from kbot.publish.batch import checkout_problems, find_run_dirs, publish_run_dirs
    from kbot.publish.publisher import PublishSettings, should_push
    from kbot.publish.summary import summary_table

    if args.fork and "/" not in args.fork:
        raise UsageError(f"--fork {args.fork!r}: write it as OWNER/REPO")
    repo = Path(args.repo)
    if not repo.is_dir():
        raise UsageError(f"--repo {args.repo} is not a folder; give the scanned repository")
    missing = [p for p in args.runs if not Path(p).is_dir()]
    if missing:
        raise UsageError(f"{', '.join(missing)}: not a folder; give run directories")
    expected = _expected(args.expect)  # before the slow re-extraction below
    cli = {"scan.model_config": args.model_config} if args.model_config else {}
    config = load_config(repo, cli=cli, config_file=args.config)
    work_dir = Path(args.work_dir).resolve() if args.work_dir else config.work_dir
    settings = PublishSettings.from_config(config.publish, fork=args.fork)
    push = should_push(args.dry_run, args.push, settings, os.environ)
    runs = find_run_dirs(Path(p) for p in args.runs)
    # The run directories come from other jobs' runners, which ran generated code; this one
    # holds the token and imports each problem: only this checkout's own extraction passes.
    trusted = None if args.trust_run_dirs or not runs else checkout_problems(repo, config)
    rows = publish_run_dirs(
        runs,
        repo,
        config,
        work_dir,
        push,
        expected=expected,
        settings=settings,
        trusted=trusted,
    )
    published = [r for r in rows if r.stage == "published"]
    mode = (
        "pushed" if push and published else "nothing pushed" if push else "dry run (nothing sent)"
    )
    text = (
        f"{summary_table(rows)}\n\n{len(published)} of {len(rows)} targets published; {mode}; "
        f"work directory {work_dir}"
    )
    if not rows:
        text = f"no run directories under {', '.join(args.runs)}; nothing to publish"
    data = {"work_dir": work_dir, "pushed": push, "targets": rows}
    return CommandResult(ExitCode.OK if published else ExitCode.REJECTED, text, data)


def _expected(text: str | None) -> list[dict[str, Any]]:
    if not text or not text.strip():
        return []
    path = Path(text)
    if not path.is_file() and not text.lstrip().startswith(("{", "[")):
        raise UsageError(
            f"--expect {text}: no such file; give the scan's matrix as a JSON file or inline JSON"
        )
    try:
        value = json.loads(path.read_text(encoding="utf-8") if path.is_file() else text)
    except (OSError, ValueError) as exc:
        raise UsageError(f"--expect: not JSON or a JSON file ({exc})") from None
    entries = value.get("include") if isinstance(value, dict) else value
    if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        raise UsageError('--expect must be the scan\'s matrix, like {"include": [{"op": ...}]}')
    return entries
