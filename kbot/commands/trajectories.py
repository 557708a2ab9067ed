"""`kbot trajectories export`: a chat-format SFT file of the search's correctness-preserving,
speed-gaining parent -> child steps (schema in docs/llm.md)."""

from __future__ import annotations

import argparse
from pathlib import Path

from kbot.errors import ExitCode, UsageError
from kbot.output import CommandResult

HELP = "export the search's trajectories as a chat-format fine-tuning (SFT) file"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("action", choices=("export",), help="what to do with the trajectories")
    parser.add_argument(
        "--work-dir", metavar="DIR", help="default: work_dir from .kbot.yml (.kbot)"
    )
    parser.add_argument("--run", metavar="RUN_ID", help="only this run (default: every run)")
    parser.add_argument("--out", metavar="FILE", help="default: <work-dir>/trajectories/sft.jsonl")
    parser.add_argument(
        "--min-gain",
        type=float,
        default=1.0,
        help="smallest child/parent speedup ratio kept (default 1.0: any gain above the noise)",
    )
    parser.add_argument(
        "--include-untimed",
        action="store_true",
        help="also keep correctness-preserving steps that were not timed (CPU runs)",
    )
    parser.add_argument("--config", metavar="FILE", help="use this .kbot.yml")


def run(args: argparse.Namespace) -> CommandResult:
    from kbot.config import load_config
    from kbot.search.sft import export

    if args.work_dir:
        work_dir = Path(args.work_dir).resolve()
    else:
        work_dir = load_config(Path("."), config_file=args.config).work_dir
    if not (work_dir / "kbot.sqlite").is_file():
        raise UsageError(f"no kbot store in {work_dir}; pass the --work-dir of your runs")
    out = Path(args.out) if args.out else work_dir / "trajectories" / "sft.jsonl"
    if out.exists() and not _is_export(out):
        raise UsageError(f"{out} exists and is not a kbot export; pass another --out")
    summary = export(work_dir, out, min_gain=args.min_gain, include_untimed=args.include_untimed,
                     run_id=args.run)  # fmt: skip
    text = (
        f"{summary.exported} of {summary.steps} steps from {summary.runs} run(s) written to "
        f"{summary.out_path} (left out: {summary.skipped_not_preserving} not correctness-"
        f"preserving, {summary.skipped_no_gain} without a speed gain, "
        f"{summary.skipped_missing_source} whose sources are not in the store)"
    )
    data = {
        "out": summary.out_path,
        "steps": summary.steps,
        "exported": summary.exported,
        "skipped": {
            "not_preserving": summary.skipped_not_preserving,
            "no_gain": summary.skipped_no_gain,
            "missing_source": summary.skipped_missing_source,
        },
        "runs": summary.runs,
    }
    return CommandResult(ExitCode.OK if summary.exported else ExitCode.REJECTED, text, data)


def _is_export(path: Path) -> bool:
    """An earlier export (written over), empty or each line kbot's: anything else is the user's."""
    import json

    from kbot.search.sft import SFT_SCHEMA

    if not path.is_file():
        return False
    with path.open("rb") as lines:
        first = lines.readline()
    if not first.strip():
        return path.stat().st_size == 0
    try:
        record = json.loads(first)
    except ValueError:
        return False
    meta = record.get("metadata") if isinstance(record, dict) else None
    return isinstance(meta, dict) and meta.get("schema") == SFT_SCHEMA
