"""`kbot run PATH`: scan, extract, optimize every eligible op and publish each as a PR
(a dry run by default outside CI: branches and PR drafts under the work directory)."""

from __future__ import annotations

import argparse
import os
import shlex
from pathlib import Path

from kbot.errors import ExitCode, Interrupted, UsageError
from kbot.output import CommandResult

HELP = "scan a repository, optimize every eligible op and open (or draft) a PR for each"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("path", metavar="PATH", help="the repository folder to scan")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument(
        "--dry-run",
        action="store_true",
        help="leave branches and PR drafts in the work directory; send nothing (the default outside CI)",
    )
    mode.add_argument("--push", action="store_true", help="push branches and open or update PRs")
    parser.add_argument(
        "--work-dir", metavar="DIR", help="default: work_dir from .kbot.yml (.kbot)"
    )
    parser.add_argument("--config", metavar="FILE", help="a .kbot.yml to use instead of searching")
    parser.add_argument(
        "--model-config",
        metavar="PATH|PRESET",
        help="a Hugging Face config.json or a preset: inputs for targets without (scan.model_config)",
    )
    from kbot.commands.optimize import add_llm_arguments

    add_llm_arguments(parser)


def run(args: argparse.Namespace) -> CommandResult:
    from kbot.config import load_config
    from kbot.publish.pipeline import PROGRESS_FILE, run_pipeline
    from kbot.publish.publisher import PublishSettings, should_push
    from kbot.publish.summary import summary_table

    path = Path(args.path)
    if not path.is_dir():
        raise UsageError(f"PATH {args.path} is not a folder; give the repository to scan")
    from kbot.commands.optimize import llm_overrides

    cli = llm_overrides(args)
    if args.model_config:
        cli["scan.model_config"] = args.model_config
    config = load_config(path, cli=cli, config_file=args.config)
    work_dir = Path(args.work_dir).resolve() if args.work_dir else config.work_dir
    settings = PublishSettings.from_config(config.publish)
    push = should_push(args.dry_run, args.push, settings, os.environ)
    from kbot.publish.gitops import locate_repo

    locate_repo(path)  # no repository: said before any search, not after it
    # Run again, finished searches are reused and a stopped one resumes (kbot.search.earlier).
    again = f"run `{_rerun_command(args, work_dir)}` again to continue"
    try:
        rows = run_pipeline(path, config, work_dir, push)
    except KeyboardInterrupt:  # Ctrl-C while scanning or publishing, or a second one
        progress = work_dir / PROGRESS_FILE
        raise Interrupted(f"interrupted; {again} (targets done so far: {progress})") from None
    published = [r for r in rows if r.stage == "published"]
    mode = (
        "pushed" if push and published else "nothing pushed" if push else "dry run (nothing sent)"
    )
    text = f"{summary_table(rows)}\n\n{len(published)} of {len(rows)} targets published; {mode}; work directory {work_dir}"
    data = {"work_dir": work_dir, "pushed": push, "targets": rows}
    if any(r.stage == "optimize" and r.result == "interrupted" for r in rows):
        return CommandResult(ExitCode.INTERRUPTED, text, data, f"interrupted; {again}")
    return CommandResult(ExitCode.OK if published else ExitCode.REJECTED, text, data)


def _rerun_command(args: argparse.Namespace, work_dir: Path) -> str:
    """This `kbot run` as given, with the work directory it resolved to."""
    words = ["kbot", "run", args.path, "--work-dir", str(work_dir)]
    flags = {
        "--config": args.config,
        "--model-config": args.model_config,
        "--llm-base-url": args.llm_base_url,
        "--llm-model": args.llm_model,
        "--llm-api-key-env": args.llm_api_key_env,
    }
    for flag, value in flags.items():
        if value:
            words += [flag, value]
    if args.push:
        words.append("--push")
    return shlex.join(words)
