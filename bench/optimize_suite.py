"""GPU benchmark of `kbot optimize` over the serving-op suite in bench/problems (issue 4, item 9).

Run on a GPU machine from the repo root:

    python bench/optimize_suite.py --out bench/results/optimize.md [--ops rmsnorm,softcap]

For each op it runs the real search (codegen + tune, the real evaluator: CUDA-graph and
plain-launch timing interleaved with eager and torch.compile) with a small per-op budget, then
writes one table row per case from the winner's re-measured verdict: eager / torch.compile /
kbot medians in µs for both timing modes, speedups, and % of the device's measured copy
bandwidth (the evaluator's roofline). The summary gives geomean speedups over all cases and the
time to the first accepted candidate per op. Every number comes from the evaluator's verdicts;
nothing is estimated. Results are appended op by op, so a run stopped by --time-limit keeps
what it measured and says which ops it did not reach.
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import platform
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PROBLEMS = ROOT / "bench" / "problems"

# The targets (issue 4): each op's row in "Against the targets" says how far it is.
TARGET_VS_COMPILE = 1.10  # geomean over the op's cases, CUDA-graph time
TARGET_VS_EAGER = 3.0
TARGET_BANDWIDTH = 0.90  # of measured copy bandwidth, memory-bound ops at the largest case
TARGET_FIRST_ACCEPTED_S = 60.0
TARGET_DEFAULT_WALL_S = 600.0  # a default `kbot optimize`; the suite's budgets are smaller


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--ops", default="", help="comma-separated problem names (default: all)")
    parser.add_argument("--generations", type=int, default=3)
    parser.add_argument("--max-candidates", type=int, default=10)
    parser.add_argument("--time-budget", type=float, default=60.0, help="seconds per op")
    parser.add_argument(
        "--time-limit", type=float, default=520.0, help="stop starting new ops after this"
    )
    parser.add_argument("--work-dir", type=Path, default=None)
    parser.add_argument("--proposers", default="codegen,tune,inductor", help="comma-separated")
    args = parser.parse_args()

    import torch

    from kbot.problem import load_problem
    from kbot.search import Budget, OptimizeOptions, optimize

    if not torch.cuda.is_available():
        print("optimize_suite: needs a CUDA GPU", file=sys.stderr)
        return 2
    names = [n for n in args.ops.split(",") if n] or sorted(p.stem for p in PROBLEMS.glob("*.py"))
    work_dir = args.work_dir or Path(tempfile.mkdtemp(prefix="kbot-suite-"))
    command = "python " + " ".join(shlex.quote(a) for a in sys.argv)
    lines = header(command, torch) + [
        f"Per op: proposers {args.proposers}, {args.generations} generations, at most "
        f"{args.max_candidates} candidates, {args.time_budget:.0f} s wall budget; finalists re-measured.",
        "µs = median of the evaluator (graph: CUDA-graph replay over rotated input copies with L2",
        "flushed; plain: plain launches). `x` columns: the verdict's speedups (1.00 when inside the",
        "measured spread) against eager and against the faster torch.compile mode (default or",
        "max-autotune-no-cudagraphs). `% bw`: bytes moved / kbot graph time / measured copy bandwidth.",
        "",
        "| op | T | eager graph | compile graph | kbot graph | eager plain | compile plain | kbot plain | x eager | x compile | % bw |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("\n".join(lines) + "\n")
    started = time.perf_counter()
    summary: list[str] = []
    speedups_compile: list[float] = []
    speedups_eager: list[float] = []
    skipped: list[str] = []
    targets: list[str] = []
    lineages: list[str] = []  # of the ops with a winner
    for name in names:
        if time.perf_counter() - started > args.time_limit:
            skipped.append(name)
            continue
        problem = load_problem(PROBLEMS / f"{name}.py")
        options = OptimizeOptions(
            proposers=tuple(p for p in args.proposers.split(",") if p),
            device="cuda",
            budget=Budget(
                generations=args.generations,
                time_s=args.time_budget,
                max_candidates=args.max_candidates,
            ),
            islands=2,
            patience=2,
        )
        op_started = time.perf_counter()
        try:
            result = optimize(problem, options, work_dir)
        except Exception as exc:  # one op's failure is a row, not the end of the suite
            summary.append(f"| {name} | error: {type(exc).__name__}: {str(exc)[:160]} | | | |")
            continue
        wall_s = time.perf_counter() - op_started
        first_s = first_accepted_s(result.report_json_path)
        lineage = winner_lineage(result.report_json_path)
        verdict = result.verdict
        if verdict is None or not verdict.accepted:
            summary.append(f"| {name} | no winner: {result.message[:160]} | {wall_s:.0f} | – | – |")
            print(f"{name}: no winner: {result.message}", flush=True)
            for note in report_notes(result.report_json_path):
                print(f"  note: {note}", flush=True)
            print(f"{name}: rejections from {result.report_md_path}:", flush=True)
            print(rejections(result.report_md_path), flush=True)
            continue
        lineages.append(lineage)
        rows = []
        for case in verdict.cases:
            t = case.timing
            if t is None:
                rows.append(f"| {name} | {case_label(case.case)} | not timed | | | | | | | | |")
                continue
            compile_graph = best(t.compile_graph, t.compile_max_autotune_graph)
            rows.append(
                f"| {name} | {case_label(case.case)} | {us(t.eager_graph)} | {us(compile_graph)} | "
                f"{us(t.candidate_graph)} | {us(t.eager_plain)} | {us(t.compile_plain)} | "
                f"{us(t.candidate_plain)} | {ratio(t.speedup_vs_eager)} | {ratio(t.speedup_vs_compile)} | "
                f"{pct(t.roofline_fraction)} |"
            )
            if t.speedup_vs_compile and t.speedup_vs_compile > 0:
                speedups_compile.append(t.speedup_vs_compile)
            if t.speedup_vs_eager and t.speedup_vs_eager > 0:
                speedups_eager.append(t.speedup_vs_eager)
        with args.out.open("a") as out:
            out.write("\n".join(rows) + "\n")
        print("\n".join(rows), flush=True)
        summary.append(
            f"| {name} | {result.status.value}: {result.fitness} | {wall_s:.0f} | "
            f"{'–' if first_s is None else f'{first_s:.0f}'} | {lineage} |"
        )
        targets.append(targets_row(name, verdict, first_s))
    tail = [
        "",
        "## Summary",
        "",
        f"- geomean speedup over torch.compile (graph time, {len(speedups_compile)} cases): "
        f"{geomean(speedups_compile)}",
        f"- geomean speedup over eager (graph time, {len(speedups_eager)} cases): {geomean(speedups_eager)}",
        f"- ops not reached within --time-limit: {', '.join(skipped) or 'none'}",
        f"- winners derived from an inductor extraction: {inductor_share(lineages)}",
        f"- total wall time: {time.perf_counter() - started:.0f} s",
        "",
        "| op | outcome | optimize wall s | first accepted s | winner's lineage |",
        "|---|---|---|---|---|",
        *summary,
        "",
        "## Against the targets",
        "",
        f"Per op with a winner: geomean over its cases (target x compile >= {TARGET_VS_COMPILE}, "
        f"x eager >= {TARGET_VS_EAGER}), % of copy bandwidth at the largest case (target "
        f">= {TARGET_BANDWIDTH:.0%} for memory-bound ops: no matmul flops), first accepted "
        f"(target <= {TARGET_FIRST_ACCEPTED_S:.0f} s). The default-budget wall time "
        f"(<= {TARGET_DEFAULT_WALL_S:.0f} s) is not measured here: see bench/default_run.sh.",
        "",
        "| op | x compile | x eager | % bw at largest case | first accepted s | short of |",
        "|---|---|---|---|---|---|",
        *targets,
    ]
    with args.out.open("a") as out:
        out.write("\n".join(tail) + "\n")
    print("\n".join(tail))
    return 0


def header(command: str, torch) -> list[str]:
    import triton

    try:
        driver = subprocess.run(
            ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
            capture_output=True, text=True, timeout=30,
        ).stdout.strip()  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        driver = "unknown"
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    return [
        "# kbot optimize: serving-op suite",
        "",
        f"- date: {now}",
        f"- GPU: {torch.cuda.get_device_name()} (driver {driver}, CUDA {torch.version.cuda})",
        f"- torch {torch.__version__}, Triton {triton.__version__}, Python {platform.python_version()}",
        f"- command: `{command}`",
        "",
    ]


def targets_row(name: str, verdict, first_s: float | None) -> str:
    """One op against the issue's targets; `short of` names each missed target and by how much."""
    timings = [c.timing for c in verdict.cases if c.timing is not None]
    vs_compile = [t.speedup_vs_compile for t in timings if t.speedup_vs_compile]
    vs_eager = [t.speedup_vs_eager for t in timings if t.speedup_vs_eager]
    largest = max(timings, key=lambda t: t.bytes_moved, default=None)
    misses = []
    g_compile = _geomean_value(vs_compile)
    g_eager = _geomean_value(vs_eager)
    if g_compile is not None and g_compile < TARGET_VS_COMPILE:
        misses.append(f"x compile by {TARGET_VS_COMPILE / g_compile - 1:.0%}")
    if g_eager is not None and g_eager < TARGET_VS_EAGER:
        misses.append(f"x eager by {TARGET_VS_EAGER / g_eager - 1:.0%}")
    memory_bound = largest is not None and largest.flops == 0
    bandwidth = "–"
    if largest is not None:
        bandwidth = pct(largest.roofline_fraction) + ("" if memory_bound else " (matmul roofline)")
        if memory_bound and largest.roofline_fraction < TARGET_BANDWIDTH:
            misses.append(
                f"bandwidth by {100 * (TARGET_BANDWIDTH - largest.roofline_fraction):.0f} points"
            )
    if first_s is not None and first_s > TARGET_FIRST_ACCEPTED_S:
        misses.append(f"first accepted by {first_s - TARGET_FIRST_ACCEPTED_S:.0f} s")
    first = "–" if first_s is None else f"{first_s:.0f}"
    return (
        f"| {name} | {geomean(vs_compile)} | {geomean(vs_eager)} | {bandwidth} | {first} | "
        f"{'; '.join(misses) or 'none'} |"
    )


def _geomean_value(values: list[float]) -> float | None:
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else None


def report_notes(report_json: Path | None) -> list[str]:
    """The run report's notes (where its time went, why a proposer gave nothing), whole: the
    summary row cuts the message at 160 characters."""
    if report_json is None or not Path(report_json).is_file():
        return []
    return [str(n) for n in json.loads(Path(report_json).read_text()).get("notes", [])]


def inductor_share(lineages: list[str]) -> str:
    """How many winners an inductor-extracted candidate started (issue 15: does the inductor
    proposer earn its place), of the ops that had a winner."""
    won = [lineage for lineage in lineages if lineage != "–"]
    derived = sum(
        1 for lineage in won if any(p.startswith("inductor") for p in lineage.split(" > "))
    )
    return f"{derived} of {len(won)} ops with a winner" if won else "no op had a winner"


def first_accepted_s(report_json: Path | None) -> float | None:
    """Seconds from the run's start to its first accepted candidate, if the report records it."""
    if report_json is None or not report_json.is_file():
        return None
    report = json.loads(report_json.read_text())
    value = report.get("first_accepted_s")
    return float(value) if isinstance(value, (int, float)) else None


def winner_lineage(report_json: Path | None) -> str:
    """The proposers that made the winner, oldest first (e.g. "inductor > tune")."""
    if report_json is None or not report_json.is_file():
        return "–"
    report = json.loads(report_json.read_text())
    chain = report.get("lineage") or []
    names = [str(step.get("proposer", "?")) for step in chain if isinstance(step, dict)][::-1]
    if not names and isinstance(report.get("winner"), dict):
        names = [str(report["winner"].get("proposer", "?"))]
    return " > ".join(names) or "–"


def rejections(report_md: Path | None) -> str:
    """The report's rejection table, so a GPU log says why an op has no winner."""
    if report_md is None or not report_md.is_file():
        return "(no report)"
    text = report_md.read_text()
    start = text.find("## Most common rejections")
    return text[start:].split("\n## ", 2)[0][:3000] if start >= 0 else "(no rejections recorded)"


def best(*stats):
    present = [s for s in stats if s is not None]
    return min(present, key=lambda s: s.median_us) if present else None


def us(stat) -> str:
    return "–" if stat is None else f"{stat.median_us:.2f}"


def ratio(value) -> str:
    return (
        "–" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{value:.2f}"
    )


def pct(fraction: float) -> str:
    return "–" if fraction is None or math.isnan(fraction) else f"{100 * fraction:.0f}%"


def case_label(case: dict) -> str:
    return ", ".join(f"{k}={v}" for k, v in case.items()) or "default"


def geomean(values: list[float]) -> str:
    if not values:
        return "– (nothing timed)"
    return f"{math.exp(sum(math.log(v) for v in values) / len(values)):.2f}"


if __name__ == "__main__":
    raise SystemExit(main())
