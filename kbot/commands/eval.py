"""`kbot eval PROBLEM CANDIDATE`: check one candidate (and time it on a GPU)."""

from __future__ import annotations

import argparse
from pathlib import Path

from kbot.errors import CandidateError, ExitCode, UsageError
from kbot.output import CommandResult

HELP = "check a candidate kernel against a problem (and time it on a GPU)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("problem", help="problem file (KernelBench format, optional CASES/KBOT)")
    parser.add_argument("candidate", help="candidate file defining ModelNew")
    parser.add_argument("--device", default="auto", choices=("auto", "cpu", "cuda"))
    parser.add_argument("--gpus", default="", help="GPU indices for a worker pool, e.g. 0,1")
    parser.add_argument("--seeds", type=int, default=5, help="correctness trials per case (>= 5)")
    parser.add_argument(
        "--timeout", type=float, default=180.0, help="seconds each stage of the candidate may run"
    )
    parser.add_argument(
        "--no-compile-baselines",
        action="store_true",
        help="skip the torch.compile baselines (faster; speedups then vs eager only)",
    )
    parser.add_argument(
        "--allow-unsandboxed",
        action="store_true",
        help="where Linux namespaces are unavailable, run the candidate unconfined even while "
        "a credential is set (also KBOT_ALLOW_UNSANDBOXED=1, which optimize and run read)",
    )


def _gpus(text: str) -> tuple[int, ...]:
    if not text.strip():
        return ()
    try:
        return tuple(int(part) for part in text.split(","))
    except ValueError:
        raise UsageError(
            f"--gpus must be comma-separated GPU indices like 0,1 (got {text!r})"
        ) from None


def run(args: argparse.Namespace) -> CommandResult:
    from kbot.evaluate import EvalOptions, Evaluator
    from kbot.evaluate.report import render_verdict
    from kbot.evaluate.verdict import Stage
    from kbot.problem import load_problem

    problem = load_problem(args.problem)
    path = Path(args.candidate)
    if not path.is_file():
        raise CandidateError(f"candidate file {path} does not exist")
    try:
        source = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise CandidateError(f"{path} is not UTF-8 text; save it as UTF-8") from None
    if args.device == "cuda":
        from kbot.search.environment import resolve_device

        resolve_device("cuda")  # no GPU is the machine's fault, not the candidate's: exit 2
    options = EvalOptions(
        device=args.device,
        gpus=_gpus(args.gpus),
        seeds=args.seeds,
        timeout_s=args.timeout,
        compile_baselines=not args.no_compile_baselines,
        **({"allow_unsandboxed": True} if args.allow_unsandboxed else {}),
    )
    with Evaluator(options) as evaluator:
        verdict = evaluator.evaluate(problem, source, path.name)
    if verdict.accepted:
        code = ExitCode.OK
    elif verdict.stage == Stage.INPUT:
        code = ExitCode.BAD_INPUT
    else:
        code = ExitCode.REJECTED
    return CommandResult(code, render_verdict(verdict, problem.name, path.name), verdict.to_json())
