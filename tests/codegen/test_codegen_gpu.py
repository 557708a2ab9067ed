"""GPU checks of codegen on the serving-op suite (bench/problems), for the H200.

By default (`pytest -m gpu`): every variant of every op compiles under the GPU's Triton and
matches the reference at decode sizes (T=1, 3) — quick, and it is what catches Triton-version
differences. Opt-in, because they take minutes per op:
- KBOT_CODEGEN_GPU_ALL=1: every variant accepted by the evaluator at all five cases (prefill too);
- KBOT_CODEGEN_TIMINGS=1: every variant timed through the evaluator (CUDA graph and plain
  launches, vs eager and torch.compile), one markdown table per op written under
  $KBOT_CODEGEN_REPORT_DIR (default: pytest's tmp dir) and printed.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from kbot.evaluate import EvalOptions, Evaluator
from kbot.problem import load_problem
from kbot.propose.codegen import generate

BENCH = Path(__file__).parents[2] / "bench" / "problems"
SUITE = sorted(BENCH.glob("*.py"))

pytestmark = pytest.mark.gpu


def _opt_in(variable: str) -> None:
    if os.environ.get(variable) != "1":
        pytest.skip(f"set {variable}=1 to run (minutes per op)")


@pytest.mark.parametrize("problem", SUITE, ids=lambda p: p.stem)
def test_every_variant_compiles_and_matches_on_gpu(problem, tmp_path, compare):
    small = tmp_path / problem.name
    text = problem.read_text()
    small.write_text(re.sub(r"(?m)^CASES = .*$", "CASES = [dict(T=1), dict(T=3)]", text))
    candidates = generate(load_problem(small))
    assert candidates
    failures = []
    for candidate in candidates:
        try:
            compare(small, candidate.source)
        except Exception as exc:  # collect them all: one broken variant should not hide others
            failures.append((candidate.note, f"{type(exc).__name__}: {str(exc)[:300]}"))
    assert not failures, failures


@pytest.mark.parametrize("problem", SUITE, ids=lambda p: p.stem)
def test_all_variants_accepted_on_gpu(problem):
    _opt_in("KBOT_CODEGEN_GPU_ALL")
    spec = load_problem(problem)
    candidates = generate(spec)
    assert candidates
    failures = []
    with Evaluator(EvalOptions(device="cuda", time=False)) as evaluator:
        for candidate in candidates:
            verdict = evaluator.evaluate(spec, candidate.source)
            if not verdict.accepted:
                failures.append((candidate.note, [str(r) for r in verdict.reasons][:3]))
    assert not failures, failures


def _row(note: str, verdict) -> str:  # type: ignore[no-untyped-def]
    if not verdict.accepted:
        return f"| {note} | rejected: {'; '.join(str(r) for r in verdict.reasons)[:120]} |"
    cells = []
    for case in verdict.cases:
        t = case.timing
        compile_x = f"{t.speedup_vs_compile:.2f}x" if t.speedup_vs_compile else "-"
        cells.append(
            f"T={case.case.get('T')}: {t.candidate_graph.median_us:.2f} us graph / "
            f"{t.candidate_plain.median_us:.2f} plain, {compile_x} vs compile, "
            f"{100 * t.roofline_fraction:.0f}% roofline"
        )
    return f"| {note} | {'<br>'.join(cells)} |"


@pytest.mark.parametrize("problem", SUITE, ids=lambda p: p.stem)
def test_variant_timings(problem, tmp_path):
    _opt_in("KBOT_CODEGEN_TIMINGS")
    spec = load_problem(problem)
    out_dir = Path(os.environ.get("KBOT_CODEGEN_REPORT_DIR", tmp_path))
    out_dir.mkdir(parents=True, exist_ok=True)
    lines = [f"# codegen variants: {spec.name}", "", "| variant | per case |", "|---|---|"]
    accepted = 0
    with Evaluator(EvalOptions(device="cuda")) as evaluator:
        for candidate in generate(spec):
            verdict = evaluator.evaluate(spec, candidate.source)
            accepted += verdict.accepted
            lines.append(_row(candidate.note, verdict))
    report = out_dir / f"codegen_{spec.name}.md"
    report.write_text("\n".join(lines) + "\n")
    print(report.read_text())
    assert accepted > 0
