"""What isolating each candidate costs: the evaluator's wall time per candidate with every
candidate in a fresh process inside Linux namespaces (the default), and in a fresh plain
process (`sandbox="off"`), on the same honest candidates. Run from the repo root:

    python bench/isolation_cost.py [--device cpu|cuda] [--repeats 3]

Prints a markdown table (append it to bench/results/evaluator.md with the header it prints).
"""

from __future__ import annotations

import argparse
import datetime
import platform
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kbot.evaluate import EvalOptions, Evaluator  # noqa: E402
from kbot.problem import load_problem  # noqa: E402

TESTS = ROOT / "tests" / "evaluate"
PAIRS = [
    ("quick_gelu", "quick_gelu"),
    ("silu_and_mul", "silu_and_mul"),
    ("add_rmsnorm", "add_rmsnorm"),
]


def _started_evaluator(device: str, sandbox: str) -> Evaluator:
    options = EvalOptions(
        device=device,
        sandbox=sandbox,
        compile_baselines=False,
        timing_budget_s=0.2,
        allow_unsandboxed=True,
    )
    evaluator = Evaluator(options)
    # The first evaluation starts the judge (and, on a GPU, measures the device's peaks).
    first = load_problem(TESTS / "problems" / "quick_gelu.py")
    evaluator.evaluate(first, (TESTS / "candidates" / "quick_gelu.py").read_text())
    return evaluator


def _pairs():
    for problem_name, candidate_name in PAIRS:
        problem = load_problem(TESTS / "problems" / f"{problem_name}.py")
        yield problem, (TESTS / "candidates" / f"{candidate_name}.py").read_text()


def _walls(device: str, sandbox: str, repeats: int) -> tuple[list[float], bool]:
    walls, accepted = [], True
    with _started_evaluator(device, sandbox) as evaluator:
        for _ in range(repeats):
            for problem, source in _pairs():
                started = time.perf_counter()
                verdict = evaluator.evaluate(problem, source)
                walls.append(time.perf_counter() - started)
                accepted &= verdict.accepted
    return walls, accepted


def _batch_walls(device: str, sandbox: str, batch: int) -> tuple[list[float], bool]:
    """Seconds per candidate when a search's batch of `batch` candidates of one problem goes
    in one call: the judge starts the next candidates' processes while it checks the current
    one (kbot.evaluate.host_pool)."""
    walls, accepted = [], True
    with _started_evaluator(device, sandbox) as evaluator:
        for problem, source in _pairs():
            sources = [f"{source}\n# copy {k}\n" for k in range(batch)]
            started = time.perf_counter()
            verdicts = evaluator.evaluate_many(problem, sources)
            walls.append((time.perf_counter() - started) / batch)
            accepted &= all(v.accepted for v in verdicts)
    return walls, accepted


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", default="cpu", choices=("cpu", "cuda"))
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--batch", type=int, default=6, help="candidates per call (0: skip)")
    args = parser.parse_args()
    import torch
    import triton

    gpu = torch.cuda.get_device_name(0) if args.device == "cuda" else "none (CPU, interpreter)"
    print(f"### Isolation cost, {datetime.date.today()}, device {args.device}")
    print(
        f"GPU: {gpu}; torch {torch.__version__}; Triton {triton.__version__}; "
        f"Python {platform.python_version()}; {platform.machine()}"
    )
    print(
        f"Command: `python bench/isolation_cost.py --device {args.device} --repeats {args.repeats}"
        f" --batch {args.batch}`"
    )
    print()
    print(
        "| candidates' processes | evaluations | median s / candidate | min | max | all accepted |"
    )
    print("|---|---|---|---|---|---|")
    for sandbox, label in (("auto", "fresh, in namespaces"), ("off", "fresh, plain")):
        walls, accepted = _walls(args.device, sandbox, args.repeats)
        print(
            f"| {label} | {len(walls)} | {statistics.median(walls):.2f} | {min(walls):.2f} | "
            f"{max(walls):.2f} | {accepted} |"
        )
    if args.batch > 0:
        walls, accepted = _batch_walls(args.device, "auto", args.batch)
        print(
            f"| fresh, in namespaces, {args.batch} per call (started ahead) | "
            f"{len(walls) * args.batch} | {statistics.median(walls):.2f} | {min(walls):.2f} | "
            f"{max(walls):.2f} | {accepted} |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
