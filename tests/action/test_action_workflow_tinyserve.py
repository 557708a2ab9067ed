"""The example workflow's shape, run locally on the example repository: a scan job, three
optimize jobs (at once, each on its own checkout, as a matrix on several runners) and a
publish job, every one executing action.yml's composite steps through the harness, in dry-run
mode, with the artifacts and the cache as folders. Outputs are asserted, summaries compared
with golden files (UPDATE_GOLDEN=1 rewrites them). A second run of one op on the same runner
then restores the search store from the cache and evaluates nothing again.

On a CPU the candidates run under Triton's interpreter; the budgets are one candidate per op
and the example's cases cut to T=1 (in the copy), so the whole workflow takes about two
minutes here."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from gha_harness import ActionHarness, JobResult, Workflow

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "tinyserve"
GOLDEN = Path(__file__).parent / "golden"
TOKEN = "ghs_sentinelTokenThatMustNeverBePrinted4567"
OPS = ["gelu_tanh_and_mul", "quick_gelu", "logit_softcap"]
BUDGET = {"generations": "1", "max-candidates": "1", "proposers": "codegen", "time-budget": "150"}


def _make_demo_repo(dest: Path) -> Path:
    spec = importlib.util.spec_from_file_location(
        "tinyserve_demo_action", EXAMPLE / "make_demo_repo.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    repo = module.make_demo_repo(dest)
    config = repo / ".kbot.yml"
    text = config.read_text()
    assert "  cases: [{T: 1}, {T: 16}, {T: 64}]\n" in text
    config.write_text(text.replace("  cases: [{T: 1}, {T: 16}, {T: 64}]\n", "  cases: [{T: 1}]\n"))
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid"}
    env.update(GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@example.invalid")
    subprocess.run(
        ["git", "-c", "commit.gpgsign=false", "commit", "-qam", "CPU-sized cases"],
        cwd=repo,
        check=True,
        env=env,
    )
    return repo


def _checkout(origin: Path, dest: Path) -> Path:
    """actions/checkout on a fresh runner: a clone of its own, at its own path."""
    subprocess.run(["git", "clone", "-q", str(origin), str(dest)], check=True)
    return dest


def _normalize(text: str, tmp_path: Path) -> str:
    text = text.replace(str(tmp_path), "<tmp>")
    text = re.sub(r"\b[\w]+-\d{8}-\d{6}-[0-9a-f]{4}\b", "<run_id>", text)
    text = re.sub(r"accepted, \d+ kernel\(s\), \d+ lines", "accepted, <kernel>", text)
    return re.sub(r"\b[0-9a-f]{12,64}\b", "<sha>", text)


def _check_golden(name: str, text: str) -> None:
    path = GOLDEN / name
    if os.environ.get("UPDATE_GOLDEN") == "1":
        path.parent.mkdir(exist_ok=True)
        path.write_text(text, encoding="utf-8")
    assert path.is_file(), f"{path} missing: run with UPDATE_GOLDEN=1 to create it"
    assert text == path.read_text(encoding="utf-8"), f"{name} changed; UPDATE_GOLDEN=1 to accept"


def _no_token(result: JobResult) -> None:
    everything = result.log + result.summary + json.dumps(result.outputs)
    everything += "".join(json.dumps(s.outputs) for s in result.steps)
    assert TOKEN not in everything


# The jobs run as on CPU runners, whatever this machine has (the goldens are CPU runs): a
# runner that hides its GPUs from CUDA is one.
CPU_RUNNER = {"CUDA_VISIBLE_DEVICES": ""}


@pytest.fixture(scope="module")
def workflow_run(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("kbot-action")
    origin = _make_demo_repo(tmp_path / "origin")
    workflow = Workflow(tmp_path / "workflow")
    python = {"python": sys.executable}
    # KBOT_SEARCH_ISLANDS stands for a setting a maintainer puts in the workflow's env:.
    runner_env = {**CPU_RUNNER, "KBOT_SEARCH_ISLANDS": "1"}

    scan = ActionHarness(
        workflow,
        "scan",
        _checkout(origin, tmp_path / "scan"),
        github_token=TOKEN,
        runner_env=CPU_RUNNER,
    ).run({"mode": "scan", "max-targets": "3", **python})

    def optimize(entry: dict) -> JobResult:
        job = f"optimize-{entry['op']}"
        workspace = _checkout(origin, tmp_path / job)
        harness = ActionHarness(workflow, job, workspace, github_token=TOKEN, runner_env=runner_env)
        inputs = {"mode": "optimize", "target": json.dumps(entry, indent=2), **BUDGET, **python}
        return harness.run(inputs)

    entries = json.loads(scan.outputs["targets"])["include"] if not scan.failed else []
    with ThreadPoolExecutor(max_workers=3) as pool:  # max-parallel: 3
        optimized = dict(zip([e["op"] for e in entries], pool.map(optimize, entries)))

    publish = ActionHarness(
        workflow,
        "publish",
        _checkout(origin, tmp_path / "publish"),
        github_token=TOKEN,
        runner_env=CPU_RUNNER,
    ).run(
        {"mode": "publish", "dry-run": "true", "targets": scan.outputs.get("targets", ""), **python}
    )
    return {
        "tmp": tmp_path,
        "origin": origin,
        "workflow": workflow,
        "scan": scan,
        "optimize": optimized,
        "publish": publish,
    }


def test_scan_job_writes_a_capped_matrix_and_its_summary(workflow_run) -> None:
    scan = workflow_run["scan"]
    assert not scan.failed, scan.log
    matrix = json.loads(scan.outputs["targets"])
    assert [e["op"] for e in matrix["include"]] == OPS
    assert scan.outputs["count"] == "3" and scan.outputs["exit-code"] == "0"
    assert set(matrix["include"][0]) == {"op", "target", "kind", "file", "line", "qualname", "rank"}
    assert scan.step("run").env["INPUT_GITHUB_TOKEN"] == ""
    _no_token(scan)
    _check_golden("scan.summary.md", _normalize(scan.summary, workflow_run["tmp"]))


def test_each_optimize_job_uploads_its_run_directory_and_saves_its_store(workflow_run) -> None:
    workflow = workflow_run["workflow"]
    assert sorted(workflow_run["optimize"]) == sorted(OPS)
    for op, job in workflow_run["optimize"].items():
        assert not job.failed, job.log[-3000:]
        out = job.outputs
        assert (out["op"], out["accepted"], out["artifact"]) == (op, "true", f"kbot-run-{op}")
        assert out["exit-code"] == "0" and Path(out["run-dir"]).is_dir()
        artifact = workflow.artifacts / f"kbot-run-{op}"
        for name in ("problem.py", "best_candidate.py", "kernel.py", "report.json", "target.json"):
            assert (artifact / name).is_file(), (op, name)
        assert json.loads((artifact / "optimize.json").read_text())["data"]["run_dir"]
        keys = [p.name for p in workflow.cache.iterdir() if f"-{op}-" in p.name]
        assert len(keys) == 1 and keys[0].startswith(f"kbot-store-v1-cpu-{op}-")
        assert keys[0].endswith("-4242-1")
        # the generated kernels ran in a job that never had the token
        run_env = job.step("run").env
        assert run_env["INPUT_GITHUB_TOKEN"] == "" and TOKEN not in run_env.values()
        assert run_env["KBOT_SEARCH_GENERATIONS"] == "1"
        assert "KBOT_LLM_BASE_URL" in run_env  # empty: the script unsets it before kbot runs
        _no_token(job)
        _check_golden(f"optimize_{op}.summary.md", _normalize(job.summary, workflow_run["tmp"]))


def test_publish_job_drafts_every_pr_and_writes_the_combined_summary(workflow_run) -> None:
    publish = workflow_run["publish"]
    assert not publish.failed, publish.log[-3000:]
    out = publish.outputs
    assert (out["count"], out["published"], out["pushed"]) == ("3", "3", "false")
    assert json.loads(out["pr-urls"]) == []
    rows = json.loads(out["targets"])
    assert [(r["op"], r["stage"], r["action"]) for r in rows] == [
        (op, "published", "dry_run") for op in sorted(OPS)
    ]
    work_dir = Path(out["work-dir"])
    for op in OPS:
        body = (work_dir / "publish" / op / "pr_body.md").read_text()
        assert "<!-- kbot:" in body and "not timed (no GPU)" in body
    drafts = workflow_run["workflow"].artifacts / "kbot-publish"
    assert (drafts / "quick_gelu" / "pr_body.md").is_file() and not (drafts / "repo").exists()
    # the token reached kbot (GITHUB_TOKEN) but no output, log, summary or draft
    assert publish.step("run").env["INPUT_GITHUB_TOKEN"] == TOKEN
    _no_token(publish)
    for draft in (work_dir / "publish").glob("*/pr*"):
        assert TOKEN not in draft.read_text(errors="replace")
    _check_golden("publish.summary.md", _normalize(publish.summary, workflow_run["tmp"]))


def test_publish_reports_an_op_whose_optimize_job_left_no_run_directory(workflow_run) -> None:
    tmp = workflow_run["tmp"]
    workflow = Workflow(tmp / "workflow-missing")
    shutil.copytree(
        workflow_run["workflow"].artifacts / "kbot-run-quick_gelu",
        workflow.artifacts / "kbot-run-quick_gelu",
    )
    targets = workflow_run["scan"].outputs["targets"]
    result = ActionHarness(workflow, "publish", _checkout(workflow_run["origin"], tmp / "p2")).run(
        {"mode": "publish", "dry-run": "true", "targets": targets, "python": sys.executable}
    )
    assert not result.failed, result.log[-3000:]
    rows = {r["op"]: r for r in json.loads(result.outputs["targets"])}
    assert rows["quick_gelu"]["stage"] == "published"
    for op in ("gelu_tanh_and_mul", "logit_softcap"):
        assert (rows[op]["stage"], rows[op]["result"]) == ("optimize", "no run directory")
    assert "its optimize job uploaded no run directory" in result.summary


def test_publish_refuses_a_run_directory_whose_problem_is_not_its_own_extraction(
    workflow_run,
) -> None:
    """An optimize runner ran generated code; the publish job holds the token and would import
    the downloaded problem.py. It re-extracts each op from its own checkout and refuses a run
    directory whose problem.py differs, before anything imports it."""
    tmp = workflow_run["tmp"]
    workflow = Workflow(tmp / "workflow-tampered")
    for op in ("quick_gelu", "logit_softcap"):
        shutil.copytree(
            workflow_run["workflow"].artifacts / f"kbot-run-{op}",
            workflow.artifacts / f"kbot-run-{op}",
        )
    marker = tmp / "imported-the-tampered-problem"
    problem = workflow.artifacts / "kbot-run-quick_gelu" / "problem.py"
    problem.write_text(
        problem.read_text() + f"\nopen({str(marker)!r}, 'w').write(__import__('os').environ.get("
        f"'GITHUB_TOKEN', ''))\n"
    )
    result = ActionHarness(
        workflow,
        "publish",
        _checkout(workflow_run["origin"], tmp / "p3"),
        github_token=TOKEN,
        runner_env=CPU_RUNNER,
    ).run({"mode": "publish", "dry-run": "true", "python": sys.executable})
    assert not result.failed, result.log[-3000:]
    rows = {r["op"]: r for r in json.loads(result.outputs["targets"])}
    assert (rows["quick_gelu"]["stage"], rows["quick_gelu"]["action"]) == ("publish", "failed")
    assert (
        "problem.py is not this checkout's extraction of quick_gelu" in rows["quick_gelu"]["detail"]
    )
    assert rows["logit_softcap"]["stage"] == "published"  # an untouched run still publishes
    assert not marker.exists()


def test_next_run_on_the_same_runner_restores_the_store_and_evaluates_nothing_again(
    workflow_run,
) -> None:
    first = workflow_run["optimize"]["quick_gelu"]
    workspace = Path(first.step("run").env["GITHUB_WORKSPACE"])
    workflow = workflow_run["workflow"]
    # A week later: a new workflow run (new artifacts), the repository's caches kept, and the
    # same runner's workspace, cleaned by actions/checkout (the first run's files set aside).
    next_week = Workflow(workflow.root.parent / "workflow-next-week", run_id="4343")
    shutil.copytree(workflow.cache, next_week.cache)
    entry = json.loads(workflow_run["scan"].outputs["targets"])["include"][OPS.index("quick_gelu")]
    (workspace / ".kbot").rename(workspace / ".kbot-first-run")
    try:
        job = ActionHarness(
            next_week,
            "optimize-quick_gelu",
            workspace,
            runner_env={**CPU_RUNNER, "KBOT_SEARCH_ISLANDS": "1"},
        )
        result = job.run(
            {"mode": "optimize", "target": json.dumps(entry), **BUDGET, "python": sys.executable}
        )
    finally:
        shutil.rmtree(workspace / ".kbot", ignore_errors=True)
        (workspace / ".kbot-first-run").rename(workspace / ".kbot")
    assert not result.failed, result.log[-3000:]
    restored = result.step("cache").outputs
    assert restored["cache-hit"] == "false"  # a new run's key; found by the restore key
    assert restored["cache-matched-key"].endswith("-4242-1")
    data = json.loads(result.outputs["data"])
    assert data["fresh_evaluations"] == 0 and data["accepted"] >= 1
    assert "verdict(s) reused from the search store" in result.summary
    assert "restored from the actions/cache entry of an earlier run" in result.summary
    assert any(p.name.endswith("-4343-1") for p in next_week.cache.iterdir())
