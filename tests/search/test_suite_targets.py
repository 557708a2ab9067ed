"""bench/optimize_suite.py's records and tables (bench/suite_records.py): each op's row in
"Against the targets" says which of issue 15's targets it misses and by how much; the log that
commands, sessions and machines continue (--log, --resume, --rerun, --add-report,
--report-only). CPU only: run reports built by hand, nothing timed here."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).parents[2] / "bench"
SUITE = BENCH / "optimize_suite.py"


def _load(name: str):
    spec = importlib.util.spec_from_file_location(name, BENCH / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def records():
    return _load("suite_records")


def _stat(us: float) -> dict:
    return {"median_us": us, "iqr_us": 0.01, "runs": 100}


def _case(tokens, x_compile, x_eager, bytes_moved, flops, roofline_percent, kbot_us=10.0):
    return {
        "case": {"T": tokens},
        "timing": {
            "candidate_graph": _stat(kbot_us), "candidate_plain": _stat(30.0),
            "eager_graph": _stat(kbot_us * x_eager), "eager_plain": _stat(40.0),
            "compile_graph": _stat(kbot_us * x_compile), "compile_plain": _stat(35.0),
            "compile_max_autotune_graph": None,
            "speedup_vs_eager": x_eager, "speedup_vs_compile": x_compile,
            "roofline_percent": roofline_percent, "bytes_moved": bytes_moved, "flops": flops,
        },
    }  # fmt: skip


def _report(name, cases, first_s=30.0, budget_s=180.0, lineage=("codegen",), run_id=None):
    return {
        "run_id": run_id or f"{name}-20261206-074627-da19",
        "status": "improved",
        "message": "winner",
        "problem": {"name": name},
        "device": "NVIDIA H100 80GB HBM3",
        "winner": {"fitness": "1.05x vs torch.compile", "proposer": lineage[-1]},
        "lineage": [{"proposer": p} for p in reversed(lineage)],
        "cases": cases,
        "first_accepted_s": first_s,
        "elapsed_s": 190.0,
        "options": {
            "proposers": ["codegen", "tune", "inductor"],
            "budget": {"generations": 3, "max_candidates": 10, "time_s": budget_s},
        },
    }


def _record(records, report):
    return records.record_from_report(report, records.settings_of(report), "2026-12-06", "")


def test_a_memory_bound_op_short_of_every_target(records):
    report = _report(
        "softcap", [_case(1, 1.0, 2.0, 10, 0, 20.0), _case(4096, 1.0, 2.0, 1000, 0, 80.0)], 75.0
    )
    assert records.targets_row(_record(records, report)) == (
        "| softcap | 1.00 | 2.00 | 80% | 75 | x compile by 10%; x eager by 50%; "
        "bandwidth by 10 points; first accepted by 15 s |"
    )


def test_a_matmul_op_is_not_held_to_the_bandwidth_target(records):
    report = _report(
        "linear_silu",
        [_case(1, 1.21, 4.0, 10, 10**6, 50.0), _case(4096, 1.21, 4.0, 1000, 10**9, 82.0)],
    )
    row = records.targets_row(_record(records, report))
    assert row == "| linear_silu | 1.21 | 4.00 | 82% (matmul roofline) | 30 | none |"


def test_a_case_below_the_floor_is_named_in_the_row_and_the_summary(records):
    report = _report(
        "swiglu", [_case(1, 0.94, 9.0, 10, 0, 1.0), _case(16, 0.96, 7.0, 20, 0, 6.0),
                   _case(4096, 1.5, 6.0, 1000, 0, 95.0)],
    )  # fmt: skip
    record = _record(records, report)
    assert "2 case(s) below 0.97 (worst 0.94)" in records.targets_row(record)
    summary = "\n".join(records.summary_lines([record], []))
    assert (
        "cases below 0.97 x torch.compile: 2 of 3: swiglu T=1 (0.94), swiglu T=16 (0.96)" in summary
    )
    # decode is T <= 64: the two small cases only
    assert "decode (T <= 64) geomean over torch.compile (2 cases): 0.95" in summary


def test_the_summary_counts_the_winners_an_inductor_extraction_started(records):
    # Issue 15: the report says how often an inductor-derived candidate won.
    lineages = ["inductor > tune", "codegen", "codegen > tune > tune", "inductor"]
    assert records.inductor_share(lineages) == "2 of 4 ops with a winner"
    assert records.inductor_share([]) == "no op had a winner"


def test_a_report_without_a_winner_is_a_record_without_cases(records):
    report = _report("softmax_64k", [_case(1, 1.0, 1.0, 1, 0, 1.0)])
    report.update(winner=None, status="no_accepted", message="no candidate accepted out of 0")
    record = _record(records, report)
    assert record["status"] == "no_winner" and record["cases"] == []
    assert record["outcome"] == "no winner: no candidate accepted out of 0"
    assert records.targets_lines([record])[-1].startswith("|---")  # no targets row


def test_an_op_without_a_winner_prints_its_reports_notes_whole(tmp_path):
    # On the H200 the summary row cut "evaluation stopped at the run's end during ch...", and
    # the report stayed on the machine: the notes are printed whole.
    suite = _load("optimize_suite")
    report = tmp_path / "report.json"
    note = "evaluation stopped at the run's end during check of T=16384: loading inputs for 31 s"
    report.write_text(json.dumps({"notes": ["evaluator started in 76 s", note]}))
    assert suite.report_notes(report) == ["evaluator started in 76 s", note]
    assert suite.report_notes(tmp_path / "missing.json") == []
    assert suite.report_notes(None) == []


# -- the log


def test_resume_skips_only_the_same_settings_on_the_same_gpu(records, tmp_path):
    log = tmp_path / "log.jsonl"
    record = _record(records, _report("rmsnorm", [_case(1, 1.1, 9.0, 10, 0, 1.0)]))
    records.append(log, record)
    with log.open("a") as f:
        f.write('{"op": "rmsnorm", "cut by a ki\n')  # a line a kill cut: skipped, never fatal
    logged = records.read_log(log)
    assert logged == [record]
    settings, device = record["settings"], record["device"]
    assert records.done(logged, "rmsnorm", settings, device) == record
    assert records.done(logged, "rmsnorm", {**settings, "budget_s": 600.0}, device) is None
    assert records.done(logged, "rmsnorm", settings, "NVIDIA H200") is None
    assert records.done(logged, "softcap", settings, device) is None
    assert records.drop(log, {"rmsnorm"}) == 1 and records.read_log(log) == []


def _cli(*args, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(SUITE), *args], cwd=cwd, capture_output=True, text=True, timeout=120
    )


def test_reports_join_the_log_and_render_without_a_gpu(tmp_path):
    paths = []
    for name, x in (("rope_interleaved", 1.03), ("swiglu_clamped", 0.94)):
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps(_report(name, [_case(1, x, 9.0, 10, 0, 1.0)])))
        paths.append(str(path))
    log, out = tmp_path / "log.jsonl", tmp_path / "optimize.md"
    added = _cli("--out", str(out), "--log", str(log), "--add-report", *paths, cwd=tmp_path)
    assert added.returncode == 0, added.stderr
    assert "(2026-12-06 07:46 UTC, NVIDIA H100 80GB HBM3)" in added.stdout
    done = _cli(
        "--out", str(out), "--log", str(log), "--report-only",
        "--ops", "rope_interleaved,swiglu_clamped,softmax_64k", cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    text = out.read_text()
    assert "| rope_interleaved | T=1 | 90.00 | 10.30 | 10.00 |" in text
    assert "- ops not in the log: softmax_64k" in text
    assert "cases below 0.97 x torch.compile: 1 of 2: swiglu_clamped T=1 (0.94)" in text


def test_the_log_options_are_checked_before_anything_runs(tmp_path):
    missing_log = _cli("--out", str(tmp_path / "o.md"), "--resume", cwd=tmp_path)
    assert missing_log.returncode == 2 and "need --log PATH" in missing_log.stderr
    typo = _cli("--out", str(tmp_path / "o.md"), "--ops", "rmsnrom", cwd=tmp_path)
    assert typo.returncode == 2 and "no problem rmsnrom" in typo.stderr
