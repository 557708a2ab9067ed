"""The benchmark over a fake checkout with a scripted optimize(): KernelBench's metrics vs the
faster of eager and torch.compile, one line per failure class, a too-big problem skipped with
its figures, and a run interrupted midway continued by --resume without re-running finished
problems (the one under way resumes its own optimize run)."""

from __future__ import annotations

import json
import math

import pytest

from kbot.bench import fits
from kbot.bench.kernelbench import find_problems
from kbot.bench.suite import LOG_NAME, BenchSettings, run_benchmark, summary_lines
from kbot.errors import UsageError
from kbot.search.options import OptimizeOptions

from .conftest import FakeOptimize


def _settings(root, **kw):
    values = dict(
        root=str(root), suite_dir=str(root / "KernelBench"), levels=(1, 2), problems="all",
        proposers=("codegen", "tune"), time_budget_per_problem_s=30.0, device="cuda",
        extern_ops=("matmul",),
    )  # fmt: skip
    values.update(kw)
    return BenchSettings(**values)


def _run(root, work, fake, resume=False, device="cuda", **kw):
    refs = find_problems(root, (1, 2), None)
    return run_benchmark(
        refs, _settings(root, device=device, **kw), OptimizeOptions(), work, resume=resume,
        device=device, device_name="fake GPU", optimize_fn=fake,
    )  # fmt: skip


SPEEDUPS = {
    "19_ReLU": (1.5, 1.3),  # faster than both: 1.3x vs the faster baseline
    "23_Softmax": (2.0, 0.9),  # beats eager, loses to torch.compile: 0.9x
    "47_Sum_reduction": None,  # rejected
}


def test_metrics_vs_the_faster_baseline_and_failure_lines(kernelbench_root, tmp_path):
    work = tmp_path / "work"
    outcome = _run(kernelbench_root, work, FakeOptimize(work, SPEEDUPS))
    rows = {r.key: r for r in outcome.rows}
    assert rows["L1/19"].speedup_vs_best == pytest.approx(1.3)
    assert rows["L1/23"].speedup_vs_best == pytest.approx(0.9)
    assert rows["L1/47"].status.value == "rejected"
    assert rows["L1/47"].failure == "rejected: correctness: [mismatch]"
    s = outcome.summary
    assert s.problems == 4 and s.correct == 2 and s.fast_0 == 0.5
    assert s.fast["best"] == {"1.0": 0.25, "1.2": 0.25}
    assert s.fast["eager"] == {"1.0": 0.5, "1.2": 0.5}
    assert s.fast["compile"]["1.0"] == 0.25
    assert s.geomean["best"] == pytest.approx(math.sqrt(1.3 * 0.9))
    failures = {f.failure: f.problems for f in s.failures}
    assert failures == {"rejected: correctness: [mismatch]": ("L1/47", "L2/5")}
    text = "\n".join(summary_lines(outcome))
    assert "rejected: correctness: [mismatch] (2: L1/47, L2/5)" in text
    report = json.loads(outcome.report_json.read_text())
    assert report["summary"]["fast_0"] == 0.5 and len(report["problems"]) == 4
    markdown = outcome.report_md.read_text()
    assert "| L1/23 23_Softmax | accepted | 0.90x | 2.00x | 0.90x | 50% |" in markdown
    assert "## Failures" in markdown


def test_a_cpu_run_reports_no_timing_figure(kernelbench_root, tmp_path):
    work = tmp_path / "work"

    class Untimed(FakeOptimize):
        def __call__(self, spec, *a, **kw):
            result = super().__call__(spec, *a, **kw)
            if result.verdict is not None:
                result.verdict.timed = False
            return result

    outcome = _run(kernelbench_root, work, Untimed(work, SPEEDUPS), device="cpu")
    s = outcome.summary
    assert s.fast_0 == 0.5 and s.timed == 0
    assert all(v is None for per in s.fast.values() for v in per.values())
    assert all(v is None for v in s.geomean.values())
    assert all(r.speedup_vs_best is None for r in outcome.rows)
    assert "Not timed (no GPU)" in outcome.report_md.read_text()


def test_a_problem_too_big_for_the_machine_is_skipped_with_its_figures(
    kernelbench_root, tmp_path, monkeypatch
):
    monkeypatch.setattr(fits, "free_bytes", lambda device: 1000)  # 1000 bytes free
    work = tmp_path / "work"
    fake = FakeOptimize(work, SPEEDUPS)
    outcome = _run(kernelbench_root, work, fake)
    assert fake.calls == []
    assert {r.status.value for r in outcome.rows} == {"skipped"}
    row = outcome.rows[0]
    assert row.failure == "skipped: inputs too big for this machine"
    assert "needs about" in row.message and "GiB" in row.message and "free" in row.message
    assert [f.failure for f in outcome.summary.failures] == [row.failure]


def test_an_interrupted_run_resumes_without_rerunning_finished_problems(kernelbench_root, tmp_path):
    work = tmp_path / "work"
    first = FakeOptimize(work, SPEEDUPS, interrupt_at="47_Sum_reduction")
    outcome = _run(kernelbench_root, work, first)
    assert outcome.interrupted and [c[0] for c in first.calls][-1] == "47_Sum_reduction"
    assert [r.key for r in outcome.rows] == ["L1/19", "L1/23"]
    with pytest.raises(UsageError, match="--resume"):
        _run(kernelbench_root, work, first)  # an earlier run is there
    with pytest.raises(UsageError, match="time_budget_per_problem_s"):
        _run(kernelbench_root, work, first, resume=True, time_budget_per_problem_s=60.0)
    second = FakeOptimize(work, SPEEDUPS)
    outcome = _run(kernelbench_root, work, second, resume=True)
    # finished problems come from the log; the interrupted one continues its own run
    assert second.calls == [("47_Sum_reduction", "47_Sum_reduction-run"), ("5_Sort_Add", None)]
    assert [r.key for r in outcome.rows] == ["L1/19", "L1/23", "L1/47", "L2/5"]
    assert outcome.ran == 2
    events = [json.loads(line)["event"] for line in (work / LOG_NAME).read_text().splitlines()]
    assert events.count("settings") == 1 and events.count("finished") == 4


def test_a_torn_last_line_is_ignored_on_resume(kernelbench_root, tmp_path):
    work = tmp_path / "work"
    _run(kernelbench_root, work, FakeOptimize(work, SPEEDUPS))
    with (work / LOG_NAME).open("a") as handle:
        handle.write('{"event": "finished", "key": "L1/')  # killed while writing
    again = FakeOptimize(work, SPEEDUPS)
    outcome = _run(kernelbench_root, work, again, resume=True)
    assert again.calls == [] and len(outcome.rows) == 4


def test_the_report_names_a_kernelbench_commit_only_from_its_own_checkout(tmp_path):
    import subprocess

    from kbot.bench.render import git_commit

    def commit_all(repo):
        subprocess.run(["git", "init", "-q", str(repo)], check=True)
        subprocess.run(
            ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@e.invalid",
             "-c", "commit.gpgsign=false", "commit", "-qm", "x", "--allow-empty"],
            check=True,
        )  # fmt: skip
        head = ["git", "-C", str(repo), "rev-parse", "HEAD"]
        return subprocess.run(head, capture_output=True, text=True, check=True).stdout.strip()

    checkout = tmp_path / "KernelBench-checkout"
    (checkout / "KernelBench" / "level1").mkdir(parents=True)
    head = commit_all(checkout)
    assert git_commit(checkout / "KernelBench") == head
    assert git_commit(checkout) == head
    # The same files copied into a folder of some other repository: its commit says nothing.
    other = tmp_path / "project"
    (other / "copies" / "kb" / "KernelBench" / "level1").mkdir(parents=True)
    commit_all(other)
    assert git_commit(other / "copies" / "kb" / "KernelBench") == "unknown"
    assert git_commit(tmp_path / "nowhere") == "unknown"
