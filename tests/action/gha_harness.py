"""Runs action.yml's composite steps as a GitHub runner would, on this machine.

Each `run:` step gets its `if:` and `env:` evaluated (tests/action/gha_expressions.py), a fresh
GITHUB_OUTPUT file (read back with GitHub's `name=value` / `name<<DELIM` rules), its own
GITHUB_STEP_SUMMARY (the job summary is all of them, in order), GITHUB_EVENT_PATH, RUNNER_TEMP
and GITHUB_WORKSPACE, and runs under `bash --noprofile --norc -eo pipefail`, as GitHub does.
The `uses:` steps are replaced by fakes with the documented semantics:

- actions/upload-artifact@v4+: an artifact is a folder under `artifacts/<name>`; a name is
  written once per workflow run (v4's immutability); one folder uploads its contents.
- actions/download-artifact@v4+: `pattern` matches artifact names; each lands in
  `path/<name>` (unless `merge-multiple`), `name` lands in `path` itself.
- actions/cache/restore and /save@v4+: an entry is a folder under `cache/<key>`, written once;
  restore takes the exact key, else the newest entry whose key starts with a restore key.
"""

from __future__ import annotations

import fnmatch
import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from gha_expressions import condition, interpolate

from kbot.action.outputs import parse_outputs

REPO_ROOT = Path(__file__).resolve().parents[2]


@dataclass
class Workflow:
    """What jobs of one workflow run share: its artifacts, the repository's caches, the event."""

    root: Path
    run_id: str = "4242"
    run_attempt: str = "1"
    event: dict[str, Any] = field(default_factory=lambda: {"schedule": "17 3 * * 1,4"})

    @property
    def artifacts(self) -> Path:
        return self.root / "artifacts"

    @property
    def cache(self) -> Path:
        return self.root / "cache"


@dataclass
class StepRecord:
    name: str
    id: str | None
    ran: bool
    outcome: str  # success | failure | skipped
    outputs: dict[str, str]
    env: dict[str, str]
    stdout: str = ""
    stderr: str = ""


@dataclass
class JobResult:
    outputs: dict[str, str]
    summary: str
    steps: list[StepRecord]
    failed: bool

    def step(self, name_or_id: str) -> StepRecord:
        return next(s for s in self.steps if name_or_id in (s.id, s.name))

    @property
    def log(self) -> str:
        return "\n".join(s.stdout + s.stderr for s in self.steps)


class ActionHarness:
    def __init__(
        self,
        workflow: Workflow,
        job: str,
        workspace: Path,
        action_path: Path = REPO_ROOT,
        github_token: str = "",
        runner_env: dict[str, str] | None = None,
        skip: tuple[str, ...] = ("Install kbot",),
        timeout_s: float = 600,
    ) -> None:
        self.workflow = workflow
        self.job = job
        self.workspace = workspace
        self.action_path = action_path
        self.action = yaml.safe_load((action_path / "action.yml").read_text())
        self.github_token = github_token
        self.runner_env = runner_env or {}
        self.skip = skip  # the install step: the test's interpreter already has kbot
        self.timeout_s = timeout_s
        self.temp = workflow.root / "runner" / job / "temp"

    def run(self, inputs: dict[str, str]) -> JobResult:
        self.temp.mkdir(parents=True, exist_ok=True)
        event_path = self.temp.parent / "event.json"
        event_path.write_text(json.dumps(self.workflow.event))
        github = {
            "action_path": str(self.action_path),
            "run_id": self.workflow.run_id,
            "run_attempt": self.workflow.run_attempt,
            "workspace": str(self.workspace),
            "token": self.github_token,
            "event_name": "schedule",
            "repository": "example/tinyserve",
        }
        context: dict[str, Any] = {"github": github, "runner": {"temp": str(self.temp)}}
        unknown = set(inputs) - set(self.action["inputs"])
        assert not unknown, f"action.yml has no inputs {sorted(unknown)}"
        resolved = {}
        for name, spec in self.action["inputs"].items():
            value = inputs.get(name, spec.get("default", ""))
            resolved[name] = interpolate(str(value), context)
        context["inputs"] = resolved
        context["steps"] = {}
        base_env = {k: v for k, v in os.environ.items() if not k.startswith(("KBOT_", "GITHUB_"))}
        base_env.update(
            CI="true",
            GITHUB_ACTIONS="true",
            GITHUB_WORKSPACE=str(self.workspace),
            GITHUB_EVENT_PATH=str(event_path),
            GITHUB_EVENT_NAME="schedule",
            GITHUB_RUN_ID=self.workflow.run_id,
            GITHUB_RUN_ATTEMPT=self.workflow.run_attempt,
            GITHUB_JOB=self.job,
            RUNNER_TEMP=str(self.temp),
        )
        base_env.update(self.runner_env)
        failed = False
        records: list[StepRecord] = []
        summaries: list[str] = []
        for index, step in enumerate(self.action["runs"]["steps"]):
            name = step.get("name", f"step {index}")
            if name in self.skip or not condition(step.get("if"), context, failed):
                records.append(StepRecord(name, step.get("id"), False, "skipped", {}, {}))
                if step.get("id"):
                    context["steps"][step["id"]] = {"outputs": {}, "outcome": "skipped"}
                continue
            env = dict(base_env)
            env.update(
                {k: interpolate(str(v), context) for k, v in (step.get("env") or {}).items()}
            )
            if "run" in step:
                record, summary = self._run_script(index, name, step, env)
                summaries.append(summary)
            else:
                record = self._use(name, step, context)
            records.append(record)
            if step.get("id"):
                context["steps"][step["id"]] = {
                    "outputs": record.outputs,
                    "outcome": record.outcome,
                    "conclusion": record.outcome,
                }
            failed = failed or record.outcome == "failure"
        outputs = {
            name: interpolate(str(spec["value"]), context)
            for name, spec in self.action["outputs"].items()
        }
        return JobResult(outputs, "".join(summaries), records, failed)

    def _run_script(
        self, index: int, name: str, step: dict[str, Any], env: dict[str, str]
    ) -> tuple[StepRecord, str]:
        assert step.get("shell") == "bash", f"{name}: composite run steps need shell: bash"
        folder = self.temp.parent / "steps" / str(index)
        folder.mkdir(parents=True, exist_ok=True)
        script = folder / "script.sh"
        script.write_text(step["run"])
        output, summary = folder / "output", folder / "summary.md"
        output.write_text("")
        summary.write_text("")
        env.update(GITHUB_OUTPUT=str(output), GITHUB_STEP_SUMMARY=str(summary))
        done = subprocess.run(
            ["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)],
            cwd=self.workspace,
            env=env,
            capture_output=True,
            text=True,
            timeout=self.timeout_s,
        )
        outcome = "success" if done.returncode == 0 else "failure"
        outputs = parse_outputs(output.read_text())
        record = StepRecord(
            name, step.get("id"), True, outcome, outputs, env, done.stdout, done.stderr
        )
        return record, summary.read_text()

    def _use(self, name: str, step: dict[str, Any], context: dict[str, Any]) -> StepRecord:
        action = step["uses"].split("@")[0]
        given = {k: interpolate(str(v), context) for k, v in (step.get("with") or {}).items()}
        fakes = {
            "actions/upload-artifact": self._upload,
            "actions/download-artifact": self._download,
            "actions/cache/restore": self._restore,
            "actions/cache/save": self._save,
        }
        assert action in fakes, f"{name}: no fake for {step['uses']}"
        try:
            outputs = fakes[action](given)
            outcome = "success"
        except StepFailure as exc:
            outputs, outcome = {}, "failure"
            return StepRecord(name, step.get("id"), True, outcome, outputs, {}, "", str(exc))
        return StepRecord(name, step.get("id"), True, outcome, outputs, {})

    # -- the fakes ------------------------------------------------------------------------

    def _upload(self, given: dict[str, str]) -> dict[str, str]:
        name = given["name"]
        dest = self.workflow.artifacts / name
        if dest.exists():
            raise StepFailure(f"an artifact named {name} already exists in this run")
        lines = [line.strip() for line in given["path"].splitlines() if line.strip()]
        include = [Path(p) for p in lines if not p.startswith("!")]
        exclude = [Path(p[1:]).resolve() for p in lines if p.startswith("!")]
        existing = [p for p in include if p.exists()]
        if not existing:
            if given.get("if-no-files-found", "warn") == "error":
                raise StepFailure(f"no files found at {given['path']}")
            return {}
        hidden = given.get("include-hidden-files", "false") == "true"

        def ignore(folder: str, names: list[str]) -> list[str]:
            left = [n for n in names if (Path(folder) / n).resolve() in exclude]
            return left + ([n for n in names if n.startswith(".")] if not hidden else [])

        root = existing[0] if len(existing) == 1 else Path(os.path.commonpath(existing))
        for path in existing:
            target = dest / path.relative_to(root) if path != root else dest
            if path.is_dir():
                shutil.copytree(path, target, ignore=ignore, dirs_exist_ok=True)
            else:
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(path, target)
        return {"artifact-id": str(len(list(self.workflow.artifacts.iterdir())))}

    def _download(self, given: dict[str, str]) -> dict[str, str]:
        path = Path(given.get("path") or self.workspace)
        names = (
            sorted(p.name for p in self.workflow.artifacts.glob("*"))
            if self.workflow.artifacts.is_dir()
            else []
        )
        if given.get("name"):
            if given["name"] not in names:
                raise StepFailure(f"artifact {given['name']} not found")
            shutil.copytree(self.workflow.artifacts / given["name"], path, dirs_exist_ok=True)
            return {"download-path": str(path)}
        merge = given.get("merge-multiple", "false") == "true"
        for name in fnmatch.filter(names, given.get("pattern") or "*"):
            target = path if merge else path / name
            shutil.copytree(self.workflow.artifacts / name, target, dirs_exist_ok=True)
        return {"download-path": str(path)}

    def _restore(self, given: dict[str, str]) -> dict[str, str]:
        key = given["key"]
        if not key:
            raise StepFailure("Input required and not supplied: key")
        entries = sorted(
            self.workflow.cache.glob("*") if self.workflow.cache.is_dir() else [],
            key=lambda p: p.stat().st_mtime,
            reverse=True,
        )
        matched = next((e for e in entries if e.name == key), None)
        for prefix in [p.strip() for p in given.get("restore-keys", "").splitlines() if p.strip()]:
            matched = matched or next((e for e in entries if e.name.startswith(prefix)), None)
        outputs = {"cache-primary-key": key, "cache-hit": "false", "cache-matched-key": ""}
        if matched is None:
            return outputs
        for line in given["path"].splitlines():
            if line.strip():
                target = Path(line.strip())
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(matched / target.name, target)
        outputs.update(cache_hit="true" if matched.name == key else "false")
        outputs["cache-hit"] = outputs.pop("cache_hit")
        outputs["cache-matched-key"] = matched.name
        return outputs

    def _save(self, given: dict[str, str]) -> dict[str, str]:
        entry = self.workflow.cache / given["key"]
        if entry.exists():
            return {}  # the real action warns that the key exists and saves nothing
        paths = [Path(line.strip()) for line in given["path"].splitlines() if line.strip()]
        if not any(p.exists() for p in paths):
            return {}  # the real action warns: "Path Validation Error", nothing saved
        entry.mkdir(parents=True)
        for path in paths:
            if path.exists():
                shutil.copy2(path, entry / path.name)
        time.sleep(0.01)  # distinct mtimes: restore picks the newest
        return {}


class StepFailure(Exception):
    pass


def interpreter() -> str:
    return sys.executable
