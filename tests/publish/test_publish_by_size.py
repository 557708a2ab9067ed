"""The PR of a run with per-size winners (issue 15): the body says which kernel serves which
size and draws µs per size as a Mermaid chart; sizes where the original code was faster keep
the original path through the integration's guard."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from kbot.evaluate.verdict import Verdict
from kbot.problem import load_problem
from kbot.publish.artifacts import build_publication
from kbot.publish.plan import SlowerEverywhereError
from kbot.publish.rundir import load_run_dir
from kbot.search.archive import Entry
from kbot.search.by_size import SizePlan, by_size_report
from kbot.search.compose import Variant
from kbot.search.dispatch import size_key
from kbot.search.fitness import fitness_of
from kbot.search.per_case import CaseWinner, case_label, case_score

FIXTURES = Path(__file__).parent / "fixtures"
BASE_SHA = "0123456789abcdef0123456789abcdef01234567"


def _entry(sha: str, proposer: str, verdict: Verdict, source: str) -> Entry:
    return Entry(sha, source, proposer, (), {}, 0, 0, verdict, fitness_of(verdict, source))


def _with_by_size(run_dir: Path) -> dict:
    report = json.loads((FIXTURES / "runs" / "rmsnorm_layer_report_timed.json").read_text())
    # at T=1 the kernel only ties eager: that size keeps the original path
    report["verdict"]["cases"][0]["timing"]["speedup_vs_eager"] = 1.0
    verdict = Verdict.from_json(report["verdict"])
    problem = load_problem(run_dir / "problem.py")
    source = (run_dir / "best_candidate.py").read_text()
    small = _entry("a" * 64, "codegen", verdict, source)
    large = _entry("b" * 64, "tune", verdict, source)
    winners = [
        CaseWinner(
            dict(c),
            case_label(c),
            small if c["T"] < 64 else large,
            verdict,
            case_score(verdict, case_label(c)),
        )  # fmt: skip
        for c in problem.cases
    ]
    key, sizes = size_key(problem)
    variants = [Variant("v1", small.sha256, "codegen", source),
                Variant("v2", large.sha256, "tune", source)]  # fmt: skip
    plan = SizePlan(winners, key, sizes, variants, "composed", "")
    report["by_size"] = by_size_report(problem, plan, verdict, composed=True)
    (run_dir / "report.json").write_text(json.dumps(report))
    return report


def test_pr_body_names_each_sizes_kernel_and_draws_the_chart(make_run, target_repo):
    run_dir = make_run("fused_op")
    report = _with_by_size(run_dir)
    by_size = report["by_size"]
    assert by_size["kernel_ranges"] == [[4, None]] and by_size["kernel_condition"] == (
        "x.shape[0] > 4"
    )
    publication = build_publication(load_run_dir(run_dir), target_repo, "", BASE_SHA, ("kbot",))
    body = publication.body
    assert "### Which kernel serves which size" in body
    assert "dispatches by size (`x.shape[0]`) to 2 kernels" in body
    assert "| T=1 | original code | 2.10 | 1.80 | 12.0 |" in body
    assert "| T=16 | v1 (`aaaaaaaaaaaa`, codegen) | 2.40 | 2.60 | 12.5 |" in body
    assert "| T=64 | v2 (`bbbbbbbbbbbb`, tune) | 3.90 | 4.40 | 14.0 |" in body
    chart = body.split("```mermaid\n", 1)[1].split("```", 1)[0]
    assert chart.splitlines()[1:] == [
        "xychart-beta",
        '    title "problem: µs per call (CUDA graph), lower is better"',
        '    x-axis "T" ["1", "16", "64"]',
        '    y-axis "µs" 0 --> 20',
        "    line [12.0, 12.5, 14.0]",
        "    line [1.80, 2.60, 4.40]",
        "    line [2.10, 2.40, 3.90]",
    ]
    assert "red: eager; blue: torch.compile; green: kbot" in body
    patched = "".join(f.content for f in publication.files if "fused_norm" in f.path)
    guard = patched.split("if ", 1)[1].split(":\n", 1)[0]
    assert ".shape[0] > 4" in guard, guard


def test_no_pr_for_a_kernel_slower_than_the_original_path_at_every_size(make_run, target_repo):
    run_dir = make_run("fused_op")
    report = _with_by_size(run_dir)
    assert not report["by_size"]["slower_everywhere"]  # T=16 and T=64 take the kernel
    for case in report["verdict"]["cases"]:
        case["timing"]["speedup_vs_eager"] = 1.0  # a tie everywhere: the original path stays
    verdict = Verdict.from_json(report["verdict"])
    problem = load_problem(run_dir / "problem.py")
    source = (run_dir / "best_candidate.py").read_text()
    entry = _entry("a" * 64, "codegen", verdict, source)
    winners = [
        CaseWinner(dict(c), case_label(c), entry, verdict, case_score(verdict, case_label(c)))
        for c in problem.cases
    ]
    key, sizes = size_key(problem)
    plan = SizePlan(winners, key, sizes, [Variant("v1", entry.sha256, "codegen", source)], None, "")
    report["by_size"] = by_size_report(problem, plan, verdict, composed=False)
    assert report["by_size"]["slower_everywhere"] and report["by_size"]["kernel_ranges"] is None
    (run_dir / "report.json").write_text(json.dumps(report))
    with pytest.raises(SlowerEverywhereError, match=r"not faster than eager at any measured size \(µs, "
                       r"kbot vs eager: T=1: 2\.10 vs 12\.00, .*no PR"):  # fmt: skip
        build_publication(load_run_dir(run_dir), target_repo, "", BASE_SHA, ("kbot",))


def test_a_gain_that_prints_as_one_is_no_reason_for_a_pr(make_run, target_repo):
    """H200, nano-vllm's apply_rotary_emb: torch.compile's own kernel extracted read 1.0027x
    torch.compile at T=4096, outside the noise of a thousand replays; a PR was drafted for it.
    A size goes to the kernel only at MIN_GAIN (2%) or more."""
    run_dir = make_run("fused_op")
    report = _with_by_size(run_dir)
    for case, gain in zip(report["verdict"]["cases"], (1.0027, 1.019, 1.02)):
        case["timing"]["speedup_vs_compile"] = gain
    verdict = Verdict.from_json(report["verdict"])
    problem = load_problem(run_dir / "problem.py")
    source = (run_dir / "best_candidate.py").read_text()
    entry = _entry("a" * 64, "inductor", verdict, source)
    labels = [case_label(c) for c in problem.cases]
    winners = [
        CaseWinner(dict(c), label, entry, verdict, case_score(verdict, label))
        for c, label in zip(problem.cases, labels)
    ]
    key, sizes = size_key(problem)
    plan = SizePlan(
        winners, key, sizes, [Variant("v1", entry.sha256, "inductor", source)], None, ""
    )
    by_size = by_size_report(problem, plan, verdict, composed=False, original_path="torch.compile")
    assert [c["path"] for c in by_size["cases"]] == ["original", "original", "kernel"]
    assert by_size["kernel_condition"] == "x.shape[0] > 32" and by_size["min_gain"] == 0.02
    for case in report["verdict"]["cases"]:
        case["timing"]["speedup_vs_compile"] = 1.0027
    verdict = Verdict.from_json(report["verdict"])
    report["by_size"] = by_size_report(problem, plan, verdict, composed=False,
                                       original_path="torch.compile")  # fmt: skip
    assert report["by_size"]["slower_everywhere"]
    (run_dir / "report.json").write_text(json.dumps(report))
    with pytest.raises(SlowerEverywhereError, match="not faster than torch.compile at any"):
        build_publication(load_run_dir(run_dir), target_repo, "", BASE_SHA, ("kbot",))


def test_pr_body_says_which_kernel_serves_the_sizes_a_compiled_one_was_not_made_for(
    make_run, target_repo
):
    # kbot.search.fallback: torch.compile's kernels at the problem's sizes, a generic one elsewhere
    run_dir = make_run("fused_op")
    report = _with_by_size(run_dir)
    report["by_size"]["composed"] = False
    report["by_size"]["fallback"] = {
        "specialised": {"sha256": "c" * 64, "proposer": "inductor-max-autotune"},
        "generic": {"sha256": "d" * 64, "proposer": "codegen"},
    }
    (run_dir / "report.json").write_text(json.dumps(report))
    body = build_publication(load_run_dir(run_dir), target_repo, "", BASE_SHA, ("kbot",)).body
    assert (
        "One kernel serves every size measured. The kernel measured here, `cccccccccccc` "
        "(inductor-max-autotune: torch.compile's own kernels), was compiled for these sizes only; "
        "at any other size (another model's hidden size) the module runs a generic kernel, "
        "`dddddddddddd` (codegen), which the evaluator checked at other models' sizes (below) "
        "but did not time."
    ) in body


def test_no_section_for_one_untimed_kernel(make_run, target_repo):
    run_dir = make_run("custom_op")
    report = json.loads((run_dir / "report.json").read_text())
    report["by_size"] = {"composed": False, "cases": [{"label": "T=1"}], "chart": None}
    (run_dir / "report.json").write_text(json.dumps(report))
    publication = build_publication(load_run_dir(run_dir), target_repo, "", BASE_SHA, ("kbot",))
    assert "Which kernel serves which size" not in publication.body
    assert dataclasses.is_dataclass(publication)


def test_pr_body_says_what_the_model_cost_when_one_took_part(make_run, target_repo):
    """Issue 16: tokens and USD in the PR body, from report.json's `llm`; none without it."""
    run_dir = make_run("fused_op")
    plain = build_publication(load_run_dir(run_dir), target_repo, "", BASE_SHA, ("kbot",)).body
    assert "### Model spending" not in plain
    report = json.loads((run_dir / "report.json").read_text())
    usage = {
        "calls": 7, "paid_calls": 6, "cached_calls": 1, "candidates": 5,
        "prompt_tokens": 11000, "completion_tokens": 2400, "tokens": 13400, "usd": 0.0412,
        "by_status": {"parsed": 5, "no_code": 2},
        "by_model": [{"model": "small", "calls": 5, "tokens": 9000, "usd": 0.012},
                     {"model": "large", "calls": 2, "tokens": 4400, "usd": 0.0292}],
    }  # fmt: skip
    report["llm"] = {"run": usage, "op": {**usage, "usd": 0.0824}}
    (run_dir / "report.json").write_text(json.dumps(report))
    body = build_publication(load_run_dir(run_dir), target_repo, "", BASE_SHA, ("kbot",)).body
    section = body.split("### Model spending\n", 1)[1].split("###", 1)[0]
    assert "6 paid request(s) and took 1 from its store's cache" in section
    assert "11000 prompt + 2400 completion tokens, $0.0412" in section
    assert "(small (5 calls, $0.0120), large (2 calls, $0.0292))" in section
    assert "All runs for this op so far: $0.0824." in section


def test_pr_body_names_torch_compile_as_the_path_a_compiled_op_keeps(make_run, target_repo):
    run_dir = make_run("fused_op")
    report = _with_by_size(run_dir)
    report["by_size"]["original_path"] = "torch.compile"
    (run_dir / "report.json").write_text(json.dumps(report))
    body = build_publication(load_run_dir(run_dir), target_repo, "", BASE_SHA, ("kbot",)).body
    assert (
        "At some sizes the kernel was not faster than torch.compile (the op runs compiled: "
        "under `@torch.compile`, or inside a model or step function the repository compiles "
        "whole) by at least 2%, so the integration runs it only when `x.shape[0] > 4`"
    ) in body


def test_pr_body_says_where_an_op_runs_compiled_code(make_run, target_repo):
    # kbot.scan.compiled_context: an op that is not compiled itself but calls compiled code
    run_dir = make_run("fused_op")
    report = _with_by_size(run_dir)
    report["by_size"]["original_path"] = "torch.compile"
    where = "pkg/norms.py:16 (RMSNorm.forward calls the compiled RMSNorm.rms_forward)"
    report["by_size"]["compiled_by"] = where
    (run_dir / "report.json").write_text(json.dumps(report))
    body = build_publication(load_run_dir(run_dir), target_repo, "", BASE_SHA, ("kbot",)).body
    assert (
        f"not faster than torch.compile (the op runs compiled: {where}) by at least 2%, so the "
        "integration "
        "runs it only when `x.shape[0] > 4`"
    ) in body
