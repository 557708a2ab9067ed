"""action.yml: a well-formed composite action that keeps its inputs, the token above all, out of
scripts, argv and logs, and gives the token to the publishing modes only. Run mode is executed
here with the harness (kbot run itself replaced by a recorder where a real run would be slow)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from gha_expressions import evaluate, interpolate
from gha_harness import ActionHarness, Workflow

_EXPRESSION = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")
_TOKEN = "ghs_sentinelTokenThatMustNeverBePrinted0123"
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "tinyserve"


@pytest.fixture(scope="module")
def action(repo_root: Path) -> dict:
    return yaml.safe_load((repo_root / "action.yml").read_text())


def _steps(action: dict) -> list[dict]:
    return action["runs"]["steps"]


def test_action_has_the_four_modes_and_documented_inputs_and_outputs(action) -> None:
    assert action["runs"]["using"] == "composite"
    assert action["inputs"]["mode"]["default"] == "run"
    for mode in ("run", "scan", "optimize", "publish"):
        assert f"{mode}:" in action["inputs"]["mode"]["description"]
    for name in ("max-targets", "target", "targets", "generations", "time-budget", "proposers"):
        assert name in action["inputs"]
    assert {"llm-base-url", "llm-model", "llm-api-key-env", "config"} <= set(action["inputs"])
    for name, spec in action["inputs"].items():
        assert spec.get("description"), f"input {name} has no description"
        assert isinstance(spec.get("default"), str), f"input {name} needs a string default"
    assert {"targets", "run-dir", "pr-urls", "count", "work-dir"} <= set(action["outputs"])
    ids = {step.get("id") for step in _steps(action)}
    for name, spec in action["outputs"].items():
        assert spec.get("description"), f"output {name} has no description"
        step_id = re.fullmatch(
            r"steps\.([\w-]+)\.outputs\.[\w-]+", _EXPRESSION.search(spec["value"]).group(1)
        )
        assert step_id and step_id.group(1) in ids, f"output {name} names no step"


def test_scripts_hold_no_expressions_and_parse_as_bash(action, tmp_path) -> None:
    allowed = ("actions/upload-artifact@v6", "actions/download-artifact@v7")
    allowed += ("actions/cache/restore@v5", "actions/cache/save@v5")
    for step in _steps(action):
        if "run" not in step:
            assert step["uses"] in allowed, step["uses"]
            continue
        assert step.get("shell") == "bash", f"step {step['name']} needs shell: bash"
        # An expression in a script is pasted in before bash runs: that is script injection.
        assert "${{" not in step["run"], f"step {step['name']} interpolates into its script"
        script = tmp_path / "step.sh"
        script.write_text(step["run"])
        subprocess.run(["bash", "-n", str(script)], check=True)


def test_the_token_reaches_only_the_run_step_and_only_in_the_publishing_modes(action) -> None:
    places = []
    for step in _steps(action):
        for section in ("env", "with"):
            for key, value in (step.get(section) or {}).items():
                if "inputs.github-token" in str(value):
                    places.append((step.get("id"), section, key, str(value)))
        assert "github-token" not in step.get("run", "")
    assert [p[:3] for p in places] == [("run", "env", "INPUT_GITHUB_TOKEN")]
    for mode, expected in (("run", _TOKEN), ("publish", _TOKEN), ("scan", ""), ("optimize", "")):
        context = {"inputs": {"mode": mode, "github-token": _TOKEN}}
        assert interpolate(places[0][3], context) == expected, mode
    for name, spec in action["outputs"].items():
        assert "github-token" not in spec["value"], name


def test_every_if_condition_is_an_expression_the_harness_reads(action) -> None:
    context = {"inputs": {"mode": "optimize", "cache": "true"}, "steps": {}}
    for step in _steps(action):
        if "if" in step:
            evaluate(step["if"], context)


def _fake_python(tmp_path: Path, envelope_json: str, exit_code: int) -> Path:
    """An interpreter that answers `-m kbot run ...` with a canned envelope and records its argv
    and environment; everything else (kbot config, kbot action report) runs for real."""
    (tmp_path / "envelope.json").write_text(envelope_json)
    script = tmp_path / "python"
    script.write_text(
        "#!/usr/bin/env bash\n"
        'if [ "$1" = "-m" ] && [ "$2" = "kbot" ] && [ "$3" = "run" ]; then\n'
        f'  printf "%s\\n" "$@" > "{tmp_path}/argv"; env > "{tmp_path}/env"\n'
        f'  cat "{tmp_path}/envelope.json"; exit {exit_code}\n'
        "fi\n"
        f'exec "{sys.executable}" "$@"\n'
    )
    script.chmod(0o755)
    return script


def _run_envelope(exit_code: int) -> str:
    from kbot.errors import ExitCode
    from kbot.output import envelope
    from kbot.publish.summary import RunRow

    rows = [
        RunRow(
            "norm.py::RMSNorm",
            "rmsnorm",
            "published",
            "accepted, 1.8x",
            "created",
            "https://github.com/o/r/pull/7",
            pr_url="https://github.com/o/r/pull/7",
        ),
        RunRow("rope.py::Rope", "rope", "optimize", "rejected", "skipped", "no candidate | none"),
    ]
    data = {"work_dir": Path("/w/.kbot"), "pushed": True, "targets": rows}
    return envelope("run", ExitCode(exit_code), data, None)


def _job(tmp_path: Path, **kwargs) -> ActionHarness:
    """A job whose workspace is a copy of the example: nothing is ever written into examples/."""
    workspace = tmp_path / "workspace"
    if not workspace.exists():
        shutil.copytree(EXAMPLE, workspace, ignore=shutil.ignore_patterns(".kbot", "__pycache__"))
    return ActionHarness(Workflow(tmp_path / "wf"), "kbot", workspace, **kwargs)


def test_run_mode_pushes_hands_over_the_token_and_reports_the_run(tmp_path) -> None:
    python = _fake_python(tmp_path, _run_envelope(0), 0)
    job = _job(tmp_path, github_token=_TOKEN, runner_env={"KBOT_PUBLISH_TOKEN_ENV": "MY_TOKEN"})
    result = job.run({"python": str(python), "work-dir": str(tmp_path / "w")})
    assert not result.failed, result.log
    argv = (tmp_path / "argv").read_text().split()
    assert argv == ["-m", "kbot", "run", ".", "--json", "--push"]
    env = dict(
        line.split("=", 1) for line in (tmp_path / "env").read_text().splitlines() if "=" in line
    )
    assert env["MY_TOKEN"] == _TOKEN and "INPUT_GITHUB_TOKEN" not in env
    assert not any(value == _TOKEN for name, value in env.items() if name != "MY_TOKEN")
    out = result.outputs
    assert out["exit-code"] == "0" and out["ok"] == "true" and out["error"] == ""
    assert (out["count"], out["published"], out["pushed"]) == ("2", "1", "true")
    assert json.loads(out["pr-urls"]) == ["https://github.com/o/r/pull/7"]
    assert [t["op"] for t in json.loads(out["targets"])] == ["rmsnorm", "rope"]
    assert out["work-dir"] == str(tmp_path / "w")
    assert "| `rmsnorm` | `norm.py::RMSNorm` | accepted, 1.8x |" in result.summary
    assert "[#7](https://github.com/o/r/pull/7) (created)" in result.summary
    assert "no candidate \\| none" in result.summary
    assert _TOKEN not in result.log + result.summary + json.dumps(out)
    assert result.step("Upload kbot's work directory").ran


def test_run_mode_reports_bad_input_and_never_prints_the_token(tmp_path) -> None:
    job = _job(tmp_path, github_token=_TOKEN)
    result = job.run({"python": sys.executable, "path": "no/such/folder", "dry-run": "true"})
    assert result.failed and result.step("settings").outcome == "failure"
    assert "path no/such/folder does not exist" in result.log
    assert not result.step("run").ran
    assert _TOKEN not in result.log + result.summary + json.dumps(result.outputs)


def test_run_mode_treats_nothing_published_as_an_outcome(tmp_path) -> None:
    python = _fake_python(tmp_path, _run_envelope(1), 1)
    result = _job(tmp_path).run({"python": str(python), "dry-run": "true"})
    assert not result.failed, result.log
    assert (tmp_path / "argv").read_text().split()[-1] == "--dry-run"
    assert result.outputs["exit-code"] == "1" and result.outputs["ok"] == "false"


def test_run_mode_fails_when_kbot_crashes_without_an_envelope(tmp_path) -> None:
    python = _fake_python(tmp_path, "Traceback (most recent call last): ...", 1)
    result = _job(tmp_path).run({"python": str(python), "dry-run": "true"})
    assert result.step("run").outcome == "failure"
    assert "without a JSON result" in result.step("run").stdout
    assert result.outputs["error"] == "kbot exited 1 without a JSON result"


@pytest.mark.parametrize(
    ("inputs", "message"),
    [
        ({"dry-run": "yes"}, "dry-run must be 'true' or 'false'"),
        ({"mode": "deploy"}, "mode must be run, scan, optimize or publish"),
        ({"mode": "optimize"}, "mode optimize needs the input target"),
    ],
)
def test_bad_inputs_fail_with_a_message(tmp_path, inputs, message) -> None:
    result = _job(tmp_path).run({"python": sys.executable, **inputs})
    assert result.failed and message in result.log
