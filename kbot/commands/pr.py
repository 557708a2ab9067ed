"""`kbot pr RUN_DIR`: publish one optimized op as a pull request (a dry run by default)."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from kbot.errors import ExitCode, UsageError
from kbot.output import CommandResult

HELP = "publish an optimize run as a PR: kernel, integration, parity test, benchmark, body"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run_dir", metavar="RUN_DIR", help="an optimize run directory")
    parser.add_argument(
        "--repo",
        metavar="PATH",
        help="the scanned repository folder (default: the run's recorded root, else the current folder)",
    )
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument(
        "--dry-run",
        action="store_true",
        help="write the branch, patch, title and body to the work directory; send nothing (the default outside CI)",
    )
    mode.add_argument(
        "--push", action="store_true", help="push the branch and open or update the PR"
    )
    parser.add_argument("--fork", metavar="OWNER/REPO", help="push the branch to this fork")
    parser.add_argument("--adapter", default="auto", help="override the integration adapter")
    parser.add_argument("--config", metavar="FILE", help="a .kbot.yml to use instead of searching")


def run(args: argparse.Namespace) -> CommandResult:
    from kbot.config import load_config
    from kbot.publish.publisher import PublishSettings, publish_run, should_push
    from kbot.publish.rundir import load_run_dir
    from kbot.publish.summary import outcome_text

    if args.fork and "/" not in args.fork:
        raise UsageError(f"--fork {args.fork!r}: write it as OWNER/REPO")
    run_dir = Path(args.run_dir)
    run = load_run_dir(run_dir)
    repo = Path(args.repo) if args.repo else _recorded_root(run) or Path.cwd()
    config = load_config(repo, config_file=args.config)
    settings = PublishSettings.from_config(config.publish, fork=args.fork)
    push = should_push(args.dry_run, args.push, settings, os.environ)
    outcome = publish_run(run_dir, repo, config.work_dir, settings, push=push, adapter=args.adapter)
    title = (outcome.drafts_dir / "pr_title.txt").read_text(encoding="utf-8").strip()
    body = (outcome.drafts_dir / "pr_body.md").read_text(encoding="utf-8")
    data = {"outcome": outcome, "title": title, "pushed": push}
    return CommandResult(ExitCode.OK, outcome_text(outcome, title, body), data)


def _recorded_root(run) -> Path | None:
    root = run.target.root if run.target else None
    return Path(root) if root and Path(root).is_dir() else None
