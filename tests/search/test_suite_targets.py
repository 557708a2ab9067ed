"""bench/optimize_suite.py's "Against the targets" rows: each op says which of the issue's
targets it misses and by how much (CPU: verdicts built by hand, nothing timed here)."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import SimpleNamespace

SUITE = Path(__file__).parents[2] / "bench" / "optimize_suite.py"


def _suite():
    spec = importlib.util.spec_from_file_location("optimize_suite", SUITE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _verdict(cases):
    timing = [
        SimpleNamespace(speedup_vs_compile=c, speedup_vs_eager=e, bytes_moved=b, flops=f,
                        roofline_fraction=r)
        for c, e, b, f, r in cases
    ]  # fmt: skip
    return SimpleNamespace(cases=[SimpleNamespace(timing=t) for t in timing])


def test_a_memory_bound_op_short_of_every_target():
    suite = _suite()
    verdict = _verdict([(1.0, 2.0, 10, 0, 0.20), (1.0, 2.0, 1000, 0, 0.80)])
    row = suite.targets_row("softcap", verdict, 75.0)
    assert row == (
        "| softcap | 1.00 | 2.00 | 80% | 75 | x compile by 10%; x eager by 50%; "
        "bandwidth by 10 points; first accepted by 15 s |"
    )


def test_a_matmul_op_is_not_held_to_the_bandwidth_target():
    suite = _suite()
    verdict = _verdict([(1.21, 4.0, 10, 10**6, 0.5), (1.21, 4.0, 1000, 10**9, 0.82)])
    row = suite.targets_row("linear_silu", verdict, 30.0)
    assert row == "| linear_silu | 1.21 | 4.00 | 82% (matmul roofline) | 30 | none |"


def test_the_summary_counts_the_winners_an_inductor_extraction_started():
    # Issue 15: the report says how often an inductor-derived candidate won.
    suite = _suite()
    lineages = ["inductor > tune", "codegen", "codegen > tune > tune", "inductor"]
    assert suite.inductor_share(lineages) == "2 of 4 ops with a winner"
    assert suite.inductor_share([]) == "no op had a winner"


def test_an_op_without_a_winner_prints_its_reports_notes_whole(tmp_path):
    # On the H200 the summary row cut "evaluation stopped at the run's end during ch...", and
    # the report stayed on the machine: the notes are printed whole.
    import json

    suite = _suite()
    report = tmp_path / "report.json"
    note = "evaluation stopped at the run's end during check of T=16384: loading inputs for 31 s"
    report.write_text(json.dumps({"notes": ["evaluator started in 76 s", note]}))
    assert suite.report_notes(report) == ["evaluator started in 76 s", note]
    assert suite.report_notes(tmp_path / "missing.json") == []
    assert suite.report_notes(None) == []
