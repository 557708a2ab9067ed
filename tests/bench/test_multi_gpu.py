"""bench/multi_gpu.py (issue 19) on the CPU: what it reads from a run's own records, the 2-GPU /
1-GPU ratio, the winners' agreement within the noise floor, the pinning, same-kernel and fault
checks, the markdown (a golden file: `UPDATE_GOLDEN=1` to accept a change, then review the
diff), and part 4 end to end on two CPU workers. The measurements themselves need two GPUs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = Path(__file__).parent / "golden" / "multi_gpu.md.expected"


@pytest.fixture
def report(monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT / "bench"))
    import multi_gpu_report

    return multi_gpu_report


def _progress(*events: dict) -> list[str]:
    return [json.dumps(e) for e in events]


def _report_json(sha: str, speedup: float | None, medians: list[tuple[float, float]]) -> dict:
    cases = [
        {
            "label": f"T={t}",
            "timing": {"candidate_graph": {"median_us": m, "iqr_us": iqr, "runs": 200}},
        }
        for t, (m, iqr) in zip((1, 4096), medians)
    ]
    return {
        "status": "improved",
        "stop_reason": "time",
        "counts": {"fresh_evaluations": 30, "cached_verdicts": 0},
        "options": {"seed": 0},
        "winner": {"sha256": sha, "speedup": speedup, "baseline": "torch.compile"},
        "cases": cases,
    }


def _run(report, gpus: str, sha: str, speedup: float, evaluations: int, loop_s: float, iqr=0.2):
    data = _report_json(sha, speedup, [(4.0, iqr), (100.0, 1.0)])
    data["counts"]["fresh_evaluations"] = evaluations
    lines = _progress(
        {"event": "started", "t": 1000.0},
        {"event": "generation", "t": 1012.5, "generation": 0},
        {"event": "verdict", "t": 1020.0, "elapsed_s": loop_s - 3},
        {"event": "verdict", "t": 1030.0, "elapsed_s": loop_s},
    )
    return report.run_facts("rmsnorm", gpus, 0, {"data": {}}, data, lines)


def test_progress_lines_give_the_loop_clock_and_the_preparation(report):
    lines = _progress(
        {"event": "started", "t": 100.0},
        {"event": "note", "t": 101.0, "text": "x"},
        {"event": "generation", "t": 106.25, "generation": 0},
        {"event": "verdict", "t": 110.0, "elapsed_s": 3.5},
        {"event": "verdict", "t": 131.0, "elapsed_s": 24.75},
        {"event": "generation", "t": 132.0, "generation": 1},
    )
    lines.insert(2, "kbot: WARNING: a line that is not an event")
    assert report.progress_facts(lines) == (24.75, 6.25)
    assert report.progress_facts([]) == (None, None)


def test_run_facts_count_evaluations_per_minute_of_loop_and_the_winners_noise(report):
    run = _run(report, "0,1", "aa", 1.10, evaluations=30, loop_s=45.0)
    assert run.evaluations == 30 and run.loop_wall_s == 45.0 and run.prepare_s == 12.5
    assert run.evaluations_per_min == pytest.approx(40.0)
    assert run.seed == 0
    assert [c.median_us for c in run.cases] == [4.0, 100.0]
    assert run.noise == pytest.approx(0.05)  # the larger spread: 0.2 / 4.0


def test_a_run_without_report_keeps_its_reason_and_counts_no_rate(report):
    envelope = {"data": None, "error": "problem file x.py does not exist"}
    run = report.run_facts("rmsnorm", "0", 2, envelope, None, [])
    assert run.error == "problem file x.py does not exist"
    assert run.evaluations_per_min is None


def test_ratio_of_two_gpus_over_one(report):
    two = _run(report, "0,1", "aa", 1.1, evaluations=60, loop_s=50.0)
    one = _run(report, "0", "aa", 1.1, evaluations=30, loop_s=48.0)
    comparison = report.OpComparison("rmsnorm", two, one)
    assert comparison.ratio == pytest.approx((60 / 50) / (30 / 48))
    assert report.OpComparison("rmsnorm", two, None).ratio is None


def test_winners_agree_when_the_same_or_within_the_noise_floor(report):
    two = _run(report, "0,1", "aa", 1.10, 60, 50.0)
    assert report.winners_agree(two, _run(report, "0", "aa", 1.30, 30, 50.0)).agree is True
    # another candidate 3% slower with a 5% floor: no better above the noise, so the same
    near = report.winners_agree(two, _run(report, "0", "bb", 1.10 / 1.03, 30, 50.0))
    assert near.agree is True and "noise floor 5.0%" in near.why
    # 20% apart with that floor: a different outcome
    assert report.winners_agree(two, _run(report, "0", "bb", 0.9, 30, 50.0)).agree is False
    tight = _run(report, "0", "bb", 1.10 / 1.03, 30, 50.0, iqr=0.01)
    assert (
        report.winners_agree(_run(report, "0,1", "aa", 1.1, 60, 50, iqr=0.01), tight).agree is False
    )


def test_winners_that_cannot_be_compared_say_why(report):
    nothing = report.run_facts("rmsnorm", "0", 1, {"data": {}}, {"winner": None}, [])
    timed = _run(report, "0,1", "aa", 1.1, 60, 50.0)
    assert report.winners_agree(nothing, nothing).agree is None
    assert report.winners_agree(timed, nothing).agree is False
    untimed = report.run_facts(
        "rmsnorm", "0", 0, {}, {"winner": {"sha256": "cc", "speedup": None}}, []
    )
    assert report.winners_agree(timed, untimed).agree is None


def _placement(report, gpu, uuid, candidate_uuid=None, visible=None):
    judge = {
        "visible_devices": str(gpu) if visible is None else visible,
        "current_device": "0",
        "device_count": "1",
        "uuid": uuid,
    }
    line = f"kbot-placement device=cuda:0 count=1 uuid={candidate_uuid or uuid} pci=0,25,0"
    return report.Placement(gpu, judge, report.parse_placement(f"warning\n{line}\n"))


def test_pinning_passes_when_each_worker_and_its_candidates_have_their_own_gpu(report):
    expected = {0: "GPU-aaaa", 1: "GPU-bbbb"}
    pinned = [_placement(report, 0, "aaaa"), _placement(report, 1, "bbbb")]
    assert pinned[0].candidate == {
        "device": "cuda:0",
        "count": "1",
        "uuid": "aaaa",
        "pci": "0,25,0",
    }
    assert report.pinning_problems(pinned, expected) == []


def test_pinning_names_what_is_wrong(report):
    expected = {0: "GPU-aaaa", 1: "GPU-bbbb"}
    shared = [_placement(report, 0, "aaaa"), _placement(report, 1, "aaaa", visible="0")]
    found = report.pinning_problems(shared, expected)
    assert any("CUDA_VISIBLE_DEVICES=0" in f for f in found)
    assert any("GPU 1 is GPU-bbbb" in f for f in found)
    assert any(f.startswith("workers share a GPU") for f in found)
    astray = [_placement(report, 0, "aaaa", candidate_uuid="bbbb"), _placement(report, 1, "bbbb")]
    assert report.pinning_problems(astray, expected) == [
        "worker --gpus 0: a candidate's process ran on bbbb, its judge on aaaa"
    ]
    silent = [report.Placement(0, shared[0].judge, None), _placement(report, 1, "bbbb")]
    assert report.pinning_problems(silent, expected) == [
        "worker --gpus 0: no candidate's process reported its device"
    ]
    refused = [report.Placement(0, shared[0].judge, {"error": "sandbox: x"}), silent[1]]
    assert report.pinning_problems(refused, expected) == [
        "worker --gpus 0: the probe printed nothing: sandbox: x"
    ]


def test_same_kernel_difference_is_taken_from_the_middle_round(report):
    case = report.PairCase("T=4096", {0: [10.0, 10.4, 9.0], 1: [10.1, 10.2, 30.0]})
    assert case.median_us(0) == 10.0 and case.median_us(1) == 10.2
    assert case.difference_pct() == pytest.approx(2.0)
    assert report.PairCase("T=1", {0: [2.0, 3.0]}).median_us(0) == 2.5
    small = report.PairCase("T=1", {0: [2.0], 1: [1.99]})
    assert report.largest_difference_pct([case, small]) == pytest.approx(2.0)
    assert report.PairCase("T=1", {0: [2.0]}).difference_pct() is None


def _fault_rows(report, good_lost=False, one_worker=False):
    row = report.FaultRow
    second = 0 if one_worker else 1
    return [
        row(0, "crash", 0, 0, False, "forward-error", "illegal memory access", 0.0, 6.0, False),
        row(
            1,
            "good",
            1,
            second,
            not good_lost,
            "timeout" if good_lost else "",
            "",
            0.1,
            7.0,
            True,
            100.0,
            0.01,
            99.5,
            0.01,
        ),
        row(2, "hang", 0, 0, False, "timeout", "timed out", 6.0, 46.0, False),
        row(3, "good", 1, second, True, "", "", 7.0, 14.0, True, 104.0, 0.01, 99.5, 0.01),
        row(
            4,
            "judge-kill",
            1,
            second,
            False,
            "evaluator-error",
            "the judge crash",
            14.0,
            15.0,
            False,
            judge_killed=True,
        ),
        row(5, "good", 1, second, True, "", "", 15.0, 25.0, True, 99.0, 0.01, 99.5, 0.01),
    ]


def test_faults_cost_only_their_candidates(report):
    rows = _fault_rows(report)
    summary = report.fault_summary(rows, timed=True, respawned=1)
    assert summary.ok, summary.findings
    assert "3 of 3 faulty candidates lost" in summary.findings
    assert [r.index for r in report.beside_faults(rows)] == [1, 3, 5]
    assert rows[3].undisturbed is False and rows[1].undisturbed is True  # +4.5% over a 1% floor
    assert any(
        "#4: worker 1's judge killed; that worker then accepted 1 of 1" in f
        for f in summary.findings
    )


def test_faults_fail_when_a_good_candidate_is_lost_or_one_worker_did_everything(report):
    assert not report.fault_summary(_fault_rows(report, good_lost=True), True, 0).ok
    alone = report.fault_summary(_fault_rows(report, one_worker=True), True, 0)
    assert not alone.ok
    assert "every candidate ran on one worker" in " ".join(alone.findings)


def _results(report):
    import multi_gpu_markdown as md

    header = md.Header(
        date="2026-12-04 10:00 UTC",
        gpus=(
            "0: NVIDIA H200 (PCI 00000000:19:00.0, GPU-aaaa)",
            "1: NVIDIA H200 (PCI 00000000:3B:00.0, GPU-bbbb)",
        ),
        driver="580.159.04",
        versions="torch 2.11.0+cu130 (CUDA 13.0), Triton 3.6.0, Python 3.12.3",
        commit="0123abc (0 paths differ from it)",
        environment="NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1",
        command="python bench/multi_gpu.py --problems rmsnorm --budget 30 --out o.md --json o.json",
    )
    two = _run(report, "0,1", "aa11", 1.10, 60, 50.0)
    one = _run(report, "0", "bb22", 1.08, 31, 49.0)
    placements = (_placement(report, 0, "aaaa"), _placement(report, 1, "bbbb"))
    pair = (report.PairCase("T=4096", {0: [99.5, 99.6], 1: [100.1, 100.0]}, {}, 0.4),)
    rows = _fault_rows(report)
    return md.Results(
        header=header,
        budget_s=30.0,
        proposers="codegen,tune",
        comparisons=(report.OpComparison("rmsnorm", two, one),),
        placements=placements,
        pinning=(),
        pair_problem="rmsnorm.py (kernel: codegen row: 1 row per program)",
        pair_cases=pair,
        faults=tuple(rows),
        fault=report.fault_summary(rows, timed=True, respawned=1),
        skipped=("kbot optimize softcap --gpus 0: 40 s of --time-limit left",),
    )


def test_markdown_matches_its_golden_file(report, monkeypatch):
    import multi_gpu_markdown as md

    text = md.render(_results(report))
    if os.environ.get("UPDATE_GOLDEN") == "1":
        GOLDEN.parent.mkdir(exist_ok=True)
        GOLDEN.write_text(text, encoding="utf-8")
    assert GOLDEN.is_file(), f"{GOLDEN} missing: run with UPDATE_GOLDEN=1 to create it"
    assert text == GOLDEN.read_text(encoding="utf-8"), "multi_gpu.md changed; UPDATE_GOLDEN=1"


def test_summary_table_has_a_cell_per_column_and_json_carries_the_derived_figures(
    report, monkeypatch
):
    import multi_gpu_markdown as md

    results = _results(report)
    table = md.summary_table(results)
    assert len({line.count("|") for line in table}) == 1
    assert any("1.90x | yes" in line for line in table)  # (60/50) / (31/49)
    data = json.loads(json.dumps(md.results_json(results)))
    assert data["comparisons"][0]["ratio"] == pytest.approx((60 / 50) / (31 / 49))
    assert data["comparisons"][0]["agreement"]["agree"] is True
    assert data["pair_cases"][0]["difference_pct"] == pytest.approx(100 * (100.05 / 99.55 - 1))
    assert data["faults"][3]["undisturbed"] is False


@pytest.mark.parametrize("candidate", ["probe", "crash", "hang"])
def test_the_probe_and_the_faults_pass_the_static_rules_of_every_default_problem(candidate):
    """Else they would never reach a worker: the probe would print nothing, the faults would
    be rejected before they could fail."""
    from kbot.evaluate.static import check_source, problem_dtype_hint
    from kbot.problem import load_problem

    source = (ROOT / "bench" / "multi_gpu_candidates" / f"{candidate}.py").read_text()
    paths = [
        ROOT / "bench" / "problems" / f"{n}.py" for n in ("rmsnorm", "silu_and_mul", "softcap")
    ]
    for path in [*paths, ROOT / "tests" / "evaluate" / "problems" / "quick_gelu.py"]:
        problem = load_problem(path)
        assert check_source(source, problem.options, problem_dtype_hint(problem.source)) == ()


def test_part_four_on_two_cpu_workers(tmp_path):
    """A hang on one worker beside a good candidate on the other, then a crash and a killed
    judge: only the three faulty candidates are lost. About 20 s on two busy cores."""
    out, data = tmp_path / "multi_gpu.md", tmp_path / "multi_gpu.json"
    done = subprocess.run(
        [
            sys.executable,
            str(ROOT / "bench" / "multi_gpu.py"),
            "--device",
            "cpu",
            "--parts",
            "pinning,faults",
            "--faults",
            "hang,good,crash,judge-kill",
            "--fault-timeout",
            "6",
            "--out",
            str(out),
            "--json",
            str(data),
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    results = json.loads(data.read_text())
    # part four did not run: the bench says why among its skips (the evaluator not prepared)
    assert results["fault"] is not None, (results["skipped"], done.stdout[-2000:])
    assert results["fault"]["ok"], results["fault"]["findings"]
    rules = {row["role"]: row["rule"] for row in results["faults"]}
    assert rules["hang"] == "timeout" and rules["judge-kill"] == "evaluator-error"
    assert rules["crash"] in ("crash", "forward-error")
    assert results["skipped"] == ["pinning: needs two CUDA GPUs (0 found, --device cpu)"]
    assert done.stdout.splitlines()[-1].startswith("| pinning | | not measured")
    assert "## 4. A crash, a hang and a lost judge" in out.read_text()


def test_an_optimize_run_without_gpus_reports_kbots_own_reason(tmp_path, monkeypatch):
    """kbot takes the run's command line and work-dir config (its reason is the missing GPU,
    not a flag or a key), and the facts carry that reason instead of a rate."""
    import argparse

    import torch

    if torch.cuda.is_available():
        pytest.skip("on a GPU this would be a real 30 s run")
    monkeypatch.syspath_prepend(str(ROOT / "bench"))
    import multi_gpu

    args = argparse.Namespace(budget=30.0, proposers="codegen,tune")
    problem = ROOT / "bench" / "problems" / "rmsnorm.py"
    facts = multi_gpu.optimize_run(args, problem, "0,1", tmp_path / "run", 120.0)
    assert facts.exit_code == 2
    assert "no CUDA GPU is visible" in facts.error
    assert facts.evaluations_per_min is None
