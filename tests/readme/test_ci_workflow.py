"""The GitHub workflow lints and runs the same entry point, .ci/run, as kbot's own CI."""

from __future__ import annotations

from pathlib import Path

import yaml


def _workflow(repo_root: Path) -> dict:
    workflow = yaml.safe_load((repo_root / ".github" / "workflows" / "ci.yml").read_text())
    # YAML 1.1 reads the bare key `on` as the boolean True.
    workflow["on"] = workflow.pop(True, workflow.get("on"))
    return workflow


def _commands(job: dict) -> list[str]:
    return [step["run"].strip() for step in job["steps"] if "run" in step]


def test_workflow_runs_on_pushes_and_pull_requests(repo_root: Path) -> None:
    workflow = _workflow(repo_root)
    assert {"push", "pull_request"} <= set(workflow["on"])
    assert workflow["permissions"] == {"contents": "read"}


def test_lint_job_checks_and_format_checks_everything(repo_root: Path) -> None:
    lint = _workflow(repo_root)["jobs"]["lint"]
    assert lint["runs-on"] == "ubuntu-latest"
    assert {"ruff check .", "ruff format --check ."} <= set(_commands(lint))


def test_test_job_runs_ci_run_with_the_cpu_torch_index(repo_root: Path) -> None:
    test = _workflow(repo_root)["jobs"]["test"]
    python = next(s for s in test["steps"] if s.get("uses", "").startswith("actions/setup-python"))
    assert python["with"]["python-version"] == "3.11"
    run_step = next(s for s in test["steps"] if s.get("run", "").strip() == "bash .ci/run")
    assert run_step["env"]["PIP_INDEX_URL"] == "https://download.pytorch.org/whl/cpu"
    assert (repo_root / ".ci" / "run").is_file()
