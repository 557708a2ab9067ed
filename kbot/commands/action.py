"""`kbot action prepare|report`: the steps of `action.yml` that are not a kbot command of their
own (docs/action.md). `prepare` picks an optimize job's target and names its store cache;
`report` turns a command's JSON envelope into the step's outputs and job summary."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from kbot.errors import ExitCode, UsageError
from kbot.output import CommandResult

HELP = "GitHub Action steps: prepare an optimize job's target, report a step's outputs"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("step", choices=("prepare", "report"), help="which step to run")
    parser.add_argument(
        "mode",
        nargs="?",
        choices=("run", "scan", "optimize", "publish"),
        help="report: the mode whose command wrote --result",
    )
    parser.add_argument("--result", metavar="FILE", help="the JSON envelope a kbot command wrote")
    parser.add_argument("--exit-code", type=int, default=0, help="that command's exit code")
    parser.add_argument("--scan", metavar="FILE", help="prepare: `kbot scan --json` output")
    parser.add_argument("--target", help="prepare: the matrix entry (JSON) or op name")
    parser.add_argument("--run-key", default="local", help="prepare: run id + attempt")
    parser.add_argument("--gpu-model", default="", help="prepare: default: nvidia-smi's, or cpu")
    parser.add_argument("--artifact-prefix", default="kbot-run-", help="artifact name prefix")
    parser.add_argument("--out", metavar="FILE", help="prepare: write the prepared target here")
    parser.add_argument("--prepared", metavar="FILE", help="report optimize: prepare's --out")
    parser.add_argument("--cache-hit", default="", help="report optimize: the cache step's")
    parser.add_argument("--max-targets", type=int, default=0, help="report scan: matrix cap")
    parser.add_argument("--github-output", metavar="FILE", help="append outputs here")
    parser.add_argument("--summary", metavar="FILE", help="append the job summary here")


def run(args: argparse.Namespace) -> CommandResult:
    if args.step == "prepare":
        return _prepare(args)
    return _report(args)


def _prepare(args: argparse.Namespace) -> CommandResult:
    from kbot.action.outputs import write_outputs
    from kbot.action.prepare import detect_gpu_model, prepare_target

    if not args.scan or not args.target:
        raise UsageError("`kbot action prepare` needs --scan FILE and --target JSON")
    try:
        envelope = json.loads(Path(args.scan).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise UsageError(f"--scan {args.scan}: not a kbot scan JSON result ({exc})") from None
    if not envelope.get("ok") and not envelope.get("data"):
        raise UsageError(f"the scan on this runner failed: {envelope.get('error')}")
    prepared = prepare_target(
        envelope.get("data") or {},
        args.target,
        args.gpu_model or detect_gpu_model(),
        args.run_key,
        args.artifact_prefix,
    )
    record = {
        "op": prepared.op,
        "target": prepared.target,
        "kind": _kind(envelope.get("data") or {}, prepared.op),
        "problem": str(prepared.problem),
        "target_json": str(prepared.target_json),
        "reference_sha256": prepared.reference_sha256,
        "gpu_model": prepared.gpu_model,
        "cache_key": prepared.cache_key,
        "cache_restore_key": prepared.cache_restore_key,
        "artifact": prepared.artifact,
    }
    if args.out:
        Path(args.out).write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    write_outputs(args.github_output, {k.replace("_", "-"): v for k, v in record.items()})
    text = f"{prepared.op}: {prepared.problem} on {prepared.gpu_model}; cache {prepared.cache_key}"
    return CommandResult(ExitCode.OK, text, record)


def _kind(scan_data: dict, op: str) -> str:
    for finding in scan_data.get("findings") or []:
        if finding.get("name") == op:
            return str(finding.get("kind") or "")
    return ""


def _report(args: argparse.Namespace) -> CommandResult:
    from kbot.action.outputs import append_summary, write_outputs
    from kbot.action.report import step_report

    if args.mode is None or not args.result:
        raise UsageError("`kbot action report` needs the MODE and --result FILE")
    if args.mode == "scan" and args.max_targets < 1:
        raise UsageError(f"--max-targets must be at least 1, got {args.max_targets}")
    prepared = {}
    if args.prepared:
        try:
            prepared = json.loads(Path(args.prepared).read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise UsageError(f"--prepared {args.prepared}: {exc}") from None
    report = step_report(
        args.mode,
        Path(args.result),
        args.exit_code,
        max_targets=args.max_targets,
        prepared=prepared,
        cache_hit=args.cache_hit.lower() == "true",
    )
    write_outputs(args.github_output, report.outputs)
    append_summary(args.summary, report.summary)
    code = ExitCode.REJECTED if report.crashed else ExitCode.OK
    return CommandResult(
        code, report.summary, {"outputs": report.outputs, "crashed": report.crashed}
    )
