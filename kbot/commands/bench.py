"""`kbot bench kernelbench --root PATH`: the optimizer over a KernelBench checkout.

Problem files are used where they are, unchanged (fp32, as published results are). Each
problem gets its own optimize run and budget; its row is appended to
`<work-dir>/kernelbench.jsonl` as it finishes, so `--resume` continues a killed run without
running finished problems again. Reports: `<work-dir>/kernelbench.{json,md}` and, with
matplotlib installed, `kernelbench_speedups.png`. docs/kernelbench.md says what each metric is.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path
from typing import Any

from kbot.errors import ExitCode, UsageError
from kbot.output import CommandResult, to_jsonable

HELP = "run kbot over a benchmark suite (KernelBench) and report KernelBench's metrics"
SUITES = ("kernelbench",)
# cuBLAS/cuDNN calls a candidate may keep beside its Triton kernels (docs/kernelbench.md)
DEFAULT_EXTERN_OPS = (
    "matmul,linear,bmm,conv1d,conv2d,conv3d,conv_transpose1d,conv_transpose2d,conv_transpose3d"
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("suite", choices=SUITES, help="the benchmark suite")
    parser.add_argument("--root", required=True, help="your KernelBench checkout")
    parser.add_argument("--level", default="1,2", help="levels, e.g. 1 or 1,2 (default 1,2)")
    parser.add_argument("--problems", default="all", help="numbers and ranges, e.g. 1-20,40")
    parser.add_argument("--proposers", help="comma-separated, e.g. codegen,tune,inductor")
    parser.add_argument(
        "--time-budget-per-problem", default="5m", help='wall time per problem (default "5m")'
    )
    parser.add_argument("--device", choices=("auto", "cpu", "cuda"), help="default: auto")
    parser.add_argument(
        "--extern-ops",
        default=DEFAULT_EXTERN_OPS,
        help=f"extern ops every problem may keep, or 'none' (default {DEFAULT_EXTERN_OPS})",
    )
    parser.add_argument(
        "--work-dir", help="store, results log and reports (default: <work_dir>/kernelbench)"
    )
    parser.add_argument("--resume", action="store_true", help="continue a killed or stopped run")
    parser.add_argument("--config", metavar="FILE", help="use this .kbot.yml")


def run(args: argparse.Namespace) -> CommandResult:
    from kbot.bench.kernelbench import find_problems, parse_ids, parse_levels, suite_dir
    from kbot.bench.suite import BenchSettings, run_benchmark, summary_lines
    from kbot.config import load_config
    from kbot.config_schema import SchemaError, parse_duration_s
    from kbot.problem.spec import EXTERN_OPS
    from kbot.search.environment import resolve_device
    from kbot.search.options import options_from_config

    root = Path(args.root).expanduser().resolve()
    levels = parse_levels(args.level)
    refs = find_problems(root, levels, parse_ids(args.problems))
    try:
        budget_s = parse_duration_s(args.time_budget_per_problem)
    except SchemaError as exc:
        raise UsageError(f"--time-budget-per-problem: {exc}") from None
    extern = _extern_ops(args.extern_ops, EXTERN_OPS)
    overrides: dict[str, Any] = {"device": args.device}
    if args.proposers:
        overrides["search.proposers"] = [p.strip() for p in args.proposers.split(",") if p.strip()]
    config = load_config(Path("."), cli=overrides, config_file=args.config)
    work_dir = (
        Path(args.work_dir).expanduser().resolve() if args.work_dir
        else config.work_dir / "kernelbench"
    )  # fmt: skip
    notes: list[str] = []
    options = options_from_config(config, notes)
    options = dataclasses.replace(
        options, budget=dataclasses.replace(options.budget, time_s=budget_s)
    )
    device, device_name = resolve_device(options.device, options.gpus)
    settings = BenchSettings(
        root=str(root),
        suite_dir=str(suite_dir(root)),
        levels=levels,
        problems=args.problems,
        proposers=options.proposers,
        time_budget_per_problem_s=budget_s,
        device=device,
        extern_ops=extern,
    )
    outcome = run_benchmark(
        refs, settings, options, work_dir, resume=args.resume, device=device,
        device_name=device_name, say=lambda text: print(text, file=sys.stderr, flush=True),
    )  # fmt: skip
    lines = summary_lines(outcome)
    if outcome.interrupted:
        lines.insert(0, "interrupted; continue with the same command and --resume")
    lines.append(f"report: {outcome.report_md}")
    data = {
        "work_dir": work_dir,
        "report_json": outcome.report_json,
        "report_md": outcome.report_md,
        "plot": outcome.plot,
        "interrupted": outcome.interrupted,
        "ran": outcome.ran,
        "summary": to_jsonable(outcome.summary),
        "problems": [row.to_json() for row in outcome.rows],
        "notes": notes,
    }
    code = ExitCode.REJECTED if outcome.interrupted or outcome.summary.correct == 0 else ExitCode.OK
    return CommandResult(code, "\n".join(lines), data)


def _extern_ops(text: str, valid: tuple[str, ...]) -> tuple[str, ...]:
    if text.strip() == "none":
        return ()
    names = tuple(dict.fromkeys(n.strip() for n in text.split(",") if n.strip()))
    unknown = [n for n in names if n not in valid]
    if unknown:
        raise UsageError(
            f"--extern-ops {', '.join(unknown)} not allowed; choose from {', '.join(valid)} "
            "or 'none'"
        )
    return names
