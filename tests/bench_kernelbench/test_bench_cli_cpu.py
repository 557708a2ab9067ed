"""`kbot bench kernelbench` end to end on the CPU interpreter, over a fake checkout of our own
problems: the real optimizer and evaluator, fast_0 counted, every timing figure null, and a
second invocation with --resume and a wider selection runs only the new problem."""

from __future__ import annotations

import json

from kbot.cli import main

from .conftest import write_root


def _bench(root, work, problems, *extra):
    return [
        "bench", "kernelbench", "--root", str(root), "--level", "1", "--problems", problems,
        "--proposers", "codegen", "--time-budget-per-problem", "120", "--device", "cpu",
        "--work-dir", str(work), "--json", *extra,
    ]  # fmt: skip


def test_cpu_benchmark_runs_unchanged_files_and_resumes_with_more_problems(tmp_path, capsys):
    root = write_root(tmp_path, only={(1, 19), (1, 47)})
    work = tmp_path / "work"
    before = {p: p.read_text() for p in root.rglob("*.py")}
    assert main(_bench(root, work, "19")) == 0
    envelope = json.loads(capsys.readouterr().out)
    data = envelope["data"]
    assert data["ran"] == 1 and data["summary"]["fast_0"] == 1.0
    (row,) = data["problems"]
    assert row["status"] == "accepted" and row["speedup_vs_best"] is None
    assert data["summary"]["fast"]["best"]["1.0"] is None  # not measured on a CPU

    assert main(_bench(root, work, "19,47", "--resume")) == 0
    data = json.loads(capsys.readouterr().out)["data"]
    assert data["ran"] == 1  # 19 came from the log
    assert [p["number"] for p in data["problems"]] == [19, 47]
    assert all(p["status"] == "accepted" for p in data["problems"])
    assert {p: p.read_text() for p in root.rglob("*.py")} == before  # used unchanged
    markdown = (work / "kernelbench.md").read_text()
    assert "fast_0 (correct) | 100.0% (2 / 2)" in markdown
