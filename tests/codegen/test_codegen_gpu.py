"""GPU checks of codegen on the serving-op suite (bench/problems), run by the lead on the H200.

`test_all_variants_correct_on_gpu`: every variant compiles under the GPU's Triton and is
accepted at every case, prefill sizes included (no timing).
`test_variant_timings`: times every variant through the evaluator (CUDA graph and plain
launches vs eager and torch.compile) and writes one markdown table per op under
$KBOT_CODEGEN_REPORT_DIR (default: the pytest tmp dir, printed), so the lead can see which
variant wins at decode and at prefill sizes and how far from copy bandwidth it is.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kbot.evaluate import EvalOptions, Evaluator
from kbot.problem import load_problem
from kbot.propose.codegen import generate

BENCH = Path(__file__).parents[2] / "bench" / "problems"
SUITE = sorted(BENCH.glob("*.py"))

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("problem", SUITE, ids=lambda p: p.stem)
def test_all_variants_correct_on_gpu(problem):
    spec = load_problem(problem)
    failures = []
    with Evaluator(EvalOptions(device="cuda", time=False)) as evaluator:
        for candidate in generate(spec):
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
