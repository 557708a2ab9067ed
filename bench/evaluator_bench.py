"""GPU evidence for the evaluator (issue 3, item 8). Run on a GPU machine from the repo root:

    python bench/evaluator_bench.py --out bench/results/evaluator.md

Writes a markdown report (and prints it) with a header read from the live environment:
1. the honest suite (tests/evaluate/candidates) at decode and prefill sizes, timed;
2. the evaluator's wall time per candidate, with the torch.compile baselines' compilation
   included (first evaluation of a problem in a worker) and excluded (second);
3. the same candidate measured in 5 separate Evaluator runs: spread of the median kernel time;
4. kbot's eager and torch.compile CUDA-graph medians next to triton.testing.do_bench_cudagraph
   for the same calls (do_bench_cudagraph replays without flushing L2, kbot flushes it).

Stops starting new sections when --time-limit (seconds) is spent, and says so in the report.
"""

from __future__ import annotations

import argparse
import datetime
import platform
import re
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TESTS = ROOT / "tests" / "evaluate"

# (problem file, candidate file, text replacements making it realistic, CASES)
SUITE = [
    (
        "quick_gelu",
        "quick_gelu",
        {},
        '[dict(T=16, H=4096, dtype="bfloat16"), dict(T=4096, H=4096, dtype="bfloat16")]',
    ),
    (
        "silu_and_mul",
        "silu_and_mul",
        {},
        '[dict(T=16, D=14336, dtype="bfloat16"), dict(T=4096, D=14336, dtype="bfloat16")]',
    ),
    (
        "add_rmsnorm",
        "add_rmsnorm",
        {"96": "4096"},
        '[dict(T=16, dtype="bfloat16"), dict(T=4096, dtype="bfloat16")]',
    ),
    (
        "softmax_wide",
        "softmax_wide",
        {},
        '[dict(R=8, dtype="float32"), dict(R=256, dtype="float32")]',
    ),
    (
        "rope",
        "rope",
        {"randint(0, 64,": "randint(0, 4096,", "H, 16,": "H, 128,", "[16, 64]": "[128, 4096]"},
        '[dict(T=16, H=32, dtype="bfloat16"), dict(T=4096, H=32, dtype="bfloat16")]',
    ),
    (
        "matmul_bias_silu_bf16",
        "matmul_bias_silu",
        {"(T, 32,": "(T, 4096,", "[32, 24,": "[4096, 4096,"},
        "[dict(T=16), dict(T=4096)]",
    ),
]
SPREAD_PROBLEM = "add_rmsnorm"  # memory-bound; its prefill case runs well above 20 us
SPREAD_RUNS = 5


def header(command: str) -> str:
    import torch
    import triton

    driver = "unknown"
    try:
        driver = (
            subprocess.run(
                ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                capture_output=True,
                text=True,
                timeout=30,
            )
            .stdout.split("\n")[0]
            .strip()
            or driver
        )
    except (OSError, subprocess.SubprocessError):
        pass
    gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "no GPU"
    return "\n".join(
        [
            "# kbot evaluator benchmark",
            "",
            f"- date: {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M UTC}",
            f"- GPU: {gpu} (driver {driver}, CUDA {torch.version.cuda})",
            f"- torch {torch.__version__}, Triton {triton.__version__}, Python {platform.python_version()}",
            f"- command: `{command}`",
            "",
        ]
    )


def write_problem(folder: Path, name: str, replacements: dict[str, str], cases: str) -> Path:
    source = (TESTS / "problems" / f"{name}.py").read_text()
    for old, new in replacements.items():
        if old not in source:
            raise SystemExit(f"bench: {name}.py no longer contains {old!r}; update SUITE")
        source = source.replace(old, new)
    source = re.sub(r"^CASES = .*$", f"CASES = {cases}", source, count=1, flags=re.M)
    path = folder / f"{name}.py"
    path.write_text(source)
    return path


def _case(case: dict) -> str:
    return ", ".join(f"{k}={v}" for k, v in case.items())


def _us(stat) -> str:
    return "–" if stat is None else f"{stat.median_us:.2f} ±{100 * stat.spread:.1f}% ({stat.runs})"


def suite_section(problems, evaluator_cls, options_cls, deadline: float) -> tuple[list[str], dict]:
    from kbot.problem import load_problem

    lines = [
        "## 1. Honest suite, timed (µs, median ±IQR/median (runs); graph = CUDA-graph replay with L2 flushed, plain = plain launches)",
        "",
        "| problem | case | accepted | kbot graph | kbot plain | eager graph | eager plain | compile graph | max-autotune graph | x eager | x compile | roofline |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    walls = [
        "## 2. Evaluator wall time per candidate (s)",
        "",
        "| problem | cases | compile included (1st evaluation) | compile excluded (2nd evaluation) |",
        "|---|---|---|---|",
    ]
    verdicts = {}
    with evaluator_cls(options_cls(device="cuda")) as evaluator:
        for name, candidate, path in problems:
            if time.monotonic() > deadline:
                lines.append(f"| {name} | skipped: --time-limit spent | | | | | | | | | | |")
                continue
            spec = load_problem(path)
            source = (TESTS / "candidates" / f"{candidate}.py").read_text()
            started = time.monotonic()
            evaluator.evaluate(spec, source, f"{candidate}.py")
            first_s = time.monotonic() - started
            started = time.monotonic()
            second = evaluator.evaluate(spec, source, f"{candidate}.py")
            second_s = time.monotonic() - started
            verdicts[name] = second
            walls.append(f"| {name} | {len(spec.cases)} | {first_s:.1f} | {second_s:.1f} |")
            if not second.accepted:
                reasons = "; ".join(str(r) for r in second.reasons)[:300]
                lines.append(f"| {name} | – | **no**: {reasons} | | | | | | | | | |")
                continue
            for result in second.cases:
                t = result.timing
                if t is None:
                    lines.append(
                        f"| {name} | {_case(result.case)} | yes | not timed | | | | | | | | |"
                    )
                    continue
                vs_compile = "–" if t.speedup_vs_compile is None else f"{t.speedup_vs_compile:.2f}"
                lines.append(
                    f"| {name} | {_case(result.case)} | yes | {_us(t.candidate_graph)} | {_us(t.candidate_plain)} "
                    f"| {_us(t.eager_graph)} | {_us(t.eager_plain)} | {_us(t.compile_graph)} "
                    f"| {_us(t.compile_max_autotune_graph)} | {t.speedup_vs_eager:.2f} | {vs_compile} "
                    f"| {100 * t.roofline_fraction:.0f}% |"
                )
    return lines + [""] + walls + [""], verdicts


def spread_section(path: Path, evaluator_cls, options_cls, deadline: float) -> list[str]:
    from kbot.problem import load_problem

    spec = load_problem(path)
    source = (TESTS / "candidates" / f"{SPREAD_PROBLEM}.py").read_text()
    medians: dict[str, list[float]] = {}
    runs_done = 0
    for _ in range(SPREAD_RUNS):
        if time.monotonic() > deadline:
            break
        # A fresh Evaluator (fresh worker process) each run; eager baseline only, so the run
        # measures the candidate's stability rather than compile time.
        with evaluator_cls(options_cls(device="cuda", compile_baselines=False)) as evaluator:
            verdict = evaluator.evaluate(spec, source)
        if not verdict.timed:
            return [
                f"## 3. Run-to-run spread: not measured ({'; '.join(map(str, verdict.reasons))})",
                "",
            ]
        runs_done += 1
        for result in verdict.cases:
            medians.setdefault(_case(result.case), []).append(
                result.timing.candidate_graph.median_us
            )
    lines = [
        f"## 3. Same candidate ({SPREAD_PROBLEM}), {runs_done} separate Evaluator runs: median kernel time (CUDA graph)",
        "",
        "| case | medians (µs) | spread of the median (max-min)/mean |",
        "|---|---|---|",
    ]
    for case, values in medians.items():
        spread = (max(values) - min(values)) / statistics.mean(values)
        lines.append(f"| {case} | {', '.join(f'{v:.2f}' for v in values)} | {100 * spread:.2f}% |")
    return lines + [""]


def do_bench_section(problems, verdicts, deadline: float) -> list[str]:
    import torch
    from triton.testing import do_bench_cudagraph

    from kbot.problem.runtime import import_file, init_inputs, seeded_inputs

    lines = [
        "## 4. kbot's baselines vs triton.testing.do_bench_cudagraph (µs, same calls)",
        "",
        "| problem | case | eager: kbot | eager: do_bench_cudagraph | compile: kbot | compile: do_bench_cudagraph |",
        "|---|---|---|---|---|---|",
    ]
    for name, _candidate, path in problems:
        verdict = verdicts.get(name)
        if verdict is None or not verdict.timed:
            continue
        if time.monotonic() > deadline:
            lines.append(f"| {name} | skipped: --time-limit spent | | | | |")
            continue
        module = import_file(path, prefix="bench_problem")
        torch.manual_seed(0)
        model = module.Model(*init_inputs(module)).cuda().eval()
        compiled = torch.compile(model, dynamic=False)
        for result in verdict.cases:
            inputs = seeded_inputs(module, result.case, 0, torch.device("cuda"))
            with torch.no_grad():
                compiled(*inputs)
                eager_ms = do_bench_cudagraph(lambda m=model, x=inputs: m(*x))
                compile_ms = do_bench_cudagraph(lambda m=compiled, x=inputs: m(*x))
            t = result.timing
            lines.append(
                f"| {name} | {_case(result.case)} | {t.eager_graph.median_us:.2f} | {1000 * eager_ms:.2f} "
                f"| {'–' if t.compile_graph is None else f'{t.compile_graph.median_us:.2f}'} | {1000 * compile_ms:.2f} |"
            )
    lines += [
        "",
        "do_bench_cudagraph replays the call back to back with a warm L2; kbot flushes L2 before",
        "every replay, so small working sets read slower under kbot (that is the cold-cache time).",
        "",
    ]
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, required=True, help="markdown file to write")
    parser.add_argument(
        "--time-limit", type=float, default=270.0, help="seconds before skipping sections"
    )
    args = parser.parse_args()
    command = "python " + " ".join(
        shlex.quote(a) for a in [Path(sys.argv[0]).as_posix(), *sys.argv[1:]]
    )

    import torch

    if not torch.cuda.is_available():
        print("evaluator_bench: needs a CUDA GPU", file=sys.stderr)
        return 2
    from kbot.evaluate import EvalOptions, Evaluator

    started = time.monotonic()
    deadline = started + args.time_limit
    report = [header(command)]
    print(report[0], flush=True)
    with tempfile.TemporaryDirectory(prefix="kbot-bench-") as tmp:
        folder = Path(tmp)
        problems = [
            (name, candidate, write_problem(folder, name, replacements, cases))
            for name, candidate, replacements, cases in SUITE
        ]
        suite, verdicts = suite_section(problems, Evaluator, EvalOptions, deadline)
        report += suite
        print("\n".join(suite), flush=True)
        spread_path = next(p for n, _, p in problems if n == SPREAD_PROBLEM)
        spread = spread_section(spread_path, Evaluator, EvalOptions, deadline)
        report += spread
        print("\n".join(spread), flush=True)
        compare = do_bench_section(problems, verdicts, deadline)
        report += compare
        print("\n".join(compare), flush=True)
    report.append(f"Total bench wall time: {time.monotonic() - started:.0f} s.")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("\n".join(report) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
