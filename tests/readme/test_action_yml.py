"""action.yml: a well-formed composite action that keeps its inputs, the token above all, out of
scripts, argv and logs. The settings and run steps are executed here as GitHub would run them."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

_EXPRESSION = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")
_TOKEN = "ghs_sentinelTokenThatMustNeverBePrinted0123"


@pytest.fixture(scope="module")
def action(repo_root: Path) -> dict:
    return yaml.safe_load((repo_root / "action.yml").read_text())


def _steps(action: dict) -> list[dict]:
    return action["runs"]["steps"]


def _step(action: dict, step_id: str) -> dict:
    return next(step for step in _steps(action) if step.get("id") == step_id)


def test_action_is_a_composite_action_with_documented_inputs_and_outputs(action) -> None:
    assert action["name"] and action["description"]
    assert action["runs"]["using"] == "composite"
    assert set(action["inputs"]) == {
        "path",
        "config",
        "dry-run",
        "github-token",
        "work-dir",
        "python",
    }
    for name, spec in action["inputs"].items():
        assert spec.get("description"), f"input {name} has no description"
        assert isinstance(spec.get("default"), str), f"input {name} needs a string default"
    for name, spec in action["outputs"].items():
        assert spec.get("description"), f"output {name} has no description"


def test_outputs_name_step_outputs_that_their_step_writes(action) -> None:
    for name, spec in action["outputs"].items():
        match = re.fullmatch(
            r"steps\.([\w-]+)\.outputs\.([\w-]+)", _EXPRESSION.search(spec["value"]).group(1)
        )
        assert match, f"output {name} is not a step output"
        step_id, key = match.groups()
        script = _step(action, step_id)["run"]
        assert re.search(rf"[\"'f ]{re.escape(key)}=", script), f"step {step_id} never writes {key}"


def test_scripts_hold_no_expressions_and_parse_as_bash(action, tmp_path) -> None:
    for step in _steps(action):
        if "run" not in step:
            assert step["uses"].startswith("actions/upload-artifact@v")
            continue
        assert step.get("shell") == "bash", f"step {step['name']} needs shell: bash"
        # An expression in a script is pasted in before bash runs: that is script injection.
        assert "${{" not in step["run"], f"step {step['name']} interpolates into its script"
        script = tmp_path / "step.sh"
        script.write_text(step["run"])
        subprocess.run(["bash", "-n", str(script)], check=True)


def test_the_token_input_reaches_only_the_run_step_and_only_through_env(action) -> None:
    places = []
    for step in _steps(action):
        for section in ("env", "with"):
            for key, value in (step.get(section) or {}).items():
                if "inputs.github-token" in str(value):
                    places.append((step.get("id"), section, key))
        assert "github-token" not in step.get("run", "")
    assert places == [("run", "env", "INPUT_GITHUB_TOKEN")]
    for name, spec in action["outputs"].items():
        assert "github-token" not in spec["value"], name


def _run_step(
    action: dict,
    step_id: str,
    context: dict[str, str],
    tmp_path: Path,
    cwd: Path,
    runner_env: dict[str, str] | None = None,
):
    """Runs one step's script as GitHub would: its env expressions resolved from `context`."""
    step = _step(action, step_id)
    env = {k: v for k, v in os.environ.items() if not k.startswith("KBOT_")}
    env.update(runner_env or {})
    for key, value in (step.get("env") or {}).items():
        env[key] = _EXPRESSION.sub(lambda m: context[m.group(1)], str(value))
    output_file = tmp_path / f"{step_id}.out"
    output_file.write_text("")
    env.update(RUNNER_TEMP=str(tmp_path), GITHUB_OUTPUT=str(output_file))
    done = subprocess.run(
        ["bash", "-c", step["run"]], cwd=cwd, env=env, capture_output=True, text=True, timeout=120
    )
    outputs = dict(
        line.split("=", 1) for line in output_file.read_text().splitlines() if "=" in line
    )
    return done, outputs


def _context(action: dict, repo_root: Path, **inputs: str) -> dict[str, str]:
    context = {f"inputs.{k}": str(v["default"]) for k, v in action["inputs"].items()}
    context.update({f"inputs.{k.replace('_', '-')}": v for k, v in inputs.items()})
    context["inputs.python"] = sys.executable
    context["github.action_path"] = str(repo_root)
    return context


def test_settings_step_resolves_work_dir_and_token_variable(action, repo_root, tmp_path) -> None:
    context = _context(action, repo_root, path="examples/tinyserve", work_dir=str(tmp_path / "w"))
    done, outputs = _run_step(action, "settings", context, tmp_path, repo_root)
    assert done.returncode == 0, done.stderr
    assert outputs == {"work-dir": str(tmp_path / "w"), "token-env": "GITHUB_TOKEN"}


def test_run_step_reports_bad_input_and_never_prints_the_token(action, repo_root, tmp_path) -> None:
    context = _context(action, repo_root, path="no/such/folder", github_token=_TOKEN)
    context["steps.settings.outputs.token-env"] = "GITHUB_TOKEN"
    done, outputs = _run_step(action, "run", context, tmp_path, repo_root)
    assert done.returncode == 2
    assert outputs["exit-code"] == "2" and outputs["ok"] == "false"
    assert outputs["error"] and outputs["data"] == "{}"
    assert Path(outputs["result-file"]).is_file()
    everything = done.stdout + done.stderr + (tmp_path / "run.out").read_text()
    everything += Path(outputs["result-file"]).read_text()
    assert _TOKEN not in everything


def test_run_step_rejects_a_dry_run_value_that_is_not_a_boolean(action, repo_root, tmp_path):
    context = _context(action, repo_root, path="examples/tinyserve", dry_run="yes")
    context["steps.settings.outputs.token-env"] = "GITHUB_TOKEN"
    done, _ = _run_step(action, "run", context, tmp_path, repo_root)
    assert done.returncode == 2 and "dry-run must be 'true' or 'false'" in done.stdout


def _fake_python(tmp_path: Path, envelope_json: str, exit_code: int) -> Path:
    """An interpreter that answers `-m kbot ...` with a canned envelope and records its argv and
    environment; everything else runs on the real interpreter."""
    (tmp_path / "envelope.json").write_text(envelope_json)
    script = tmp_path / "python"
    script.write_text(
        "#!/usr/bin/env bash\n"
        'if [ "$1" = "-m" ] && [ "$2" = "kbot" ]; then\n'
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
            "norm.py::RMSNorm", "rmsnorm", "published", "accepted, 1.8x", "created", "https://x/1"
        ),
        RunRow("rope.py::Rope", "rope", "optimize", "rejected", "skipped", "no candidate | none"),
    ]
    data = {"work_dir": Path("/w/.kbot"), "pushed": True, "targets": rows}
    return envelope("run", ExitCode(exit_code), data, None)


def test_run_step_pushes_hands_over_the_token_and_reports_the_run(action, repo_root, tmp_path):
    python = _fake_python(tmp_path, _run_envelope(0), 0)
    context = _context(action, repo_root, path="examples/tinyserve", github_token=_TOKEN)
    context["inputs.python"] = str(python)
    context["steps.settings.outputs.token-env"] = "MY_FORGE_TOKEN"
    summary = tmp_path / "summary.md"
    runner_env = {"GITHUB_STEP_SUMMARY": str(summary)}
    done, outputs = _run_step(action, "run", context, tmp_path, repo_root, runner_env)
    assert done.returncode == 0, done.stderr
    argv = (tmp_path / "argv").read_text().split()
    assert argv == ["-m", "kbot", "run", "examples/tinyserve", "--json", "--push"]
    env = dict(
        line.split("=", 1) for line in (tmp_path / "env").read_text().splitlines() if "=" in line
    )
    assert env["MY_FORGE_TOKEN"] == _TOKEN and "INPUT_GITHUB_TOKEN" not in env
    assert not any(value == _TOKEN for name, value in env.items() if name != "MY_FORGE_TOKEN")
    assert outputs["exit-code"] == "0" and outputs["ok"] == "true" and outputs["error"] == ""
    assert (outputs["targets"], outputs["published"], outputs["pushed"]) == ("2", "1", "true")
    table = summary.read_text()
    assert "| rmsnorm | published | accepted, 1.8x | created | https://x/1 |" in table
    assert "no candidate \\| none" in table
    assert _TOKEN not in done.stdout + done.stderr + (tmp_path / "run.out").read_text() + table


def test_run_step_treats_nothing_published_as_an_outcome(action, repo_root, tmp_path):
    python = _fake_python(tmp_path, _run_envelope(1), 1)
    context = _context(action, repo_root, path="examples/tinyserve", dry_run="true")
    context["inputs.python"] = str(python)
    context["steps.settings.outputs.token-env"] = "GITHUB_TOKEN"
    done, outputs = _run_step(action, "run", context, tmp_path, repo_root)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "argv").read_text().split()[-1] == "--dry-run"
    assert outputs["exit-code"] == "1" and outputs["ok"] == "false"


def test_run_step_fails_when_kbot_crashes_without_an_envelope(action, repo_root, tmp_path):
    python = _fake_python(tmp_path, "Traceback (most recent call last): ...", 1)
    context = _context(action, repo_root, path="examples/tinyserve", dry_run="true")
    context["inputs.python"] = str(python)
    context["steps.settings.outputs.token-env"] = "GITHUB_TOKEN"
    done, outputs = _run_step(action, "run", context, tmp_path, repo_root)
    assert done.returncode == 1 and "without a JSON result" in done.stdout
    assert outputs["error"] == "kbot exited 1 without a JSON result"
    assert outputs["ok"] == "false"
