"""The target repository's own formatters and linters, run on the files a PR writes, as the
repository configures them (issue 14, deliverable 4): isort, black and `ruff format` reformat,
`ruff check` and flake8 report. A tool runs only when the repository configures it
(pyproject.toml, setup.cfg, tox.ini, its own config file, or a `.pre-commit-config.yaml` hook)
and it is installed here; the PR body says what ran and what it found.

A file kbot modified is reformatted only when its base version is already clean under that
formatter, so a PR never carries a reformatting of lines it did not write.
"""

from __future__ import annotations

import configparser
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import yaml

_TIMEOUT_S = 120.0
# tool -> (config files of its own, pyproject.toml [tool.X], setup.cfg/tox.ini sections,
# pre-commit hook ids)
_CONFIGURED = {
    "isort": ((".isort.cfg",), "isort", ("isort", "tool:isort"), ("isort",)),
    "black": ((), "black", (), ("black",)),
    # `ruff format` only where the repository asks for it (many run ruff check beside black).
    "ruff-format": ((), "ruff.format", (), ("ruff-format",)),
    "ruff-check": (("ruff.toml", ".ruff.toml"), "ruff", (), ("ruff", "ruff-check")),
    "flake8": ((".flake8",), "flake8", ("flake8",), ("flake8",)),
}
_FORMATTERS = {
    "isort": ["isort", "-q"],
    "black": ["black", "-q"],
    "ruff-format": ["ruff", "format", "-q"],
}
_LINTERS = {
    "ruff-check": ["ruff", "check", "--no-fix", "-q", "--output-format", "concise"],
    "flake8": ["flake8"],
}
_ORDER = ("isort", "black", "ruff-format", "ruff-check", "flake8")


@dataclass(frozen=True)
class ToolRun:
    tool: str  # "black", "ruff-check", ...
    outcome: str  # "formatted 2 file(s)", "clean", "3 finding(s): ...", "not installed"


def configured_tools(repo: Path) -> tuple[str, ...]:
    """The tools the repository configures, in the order they run."""
    pyproject = _read(repo / "pyproject.toml")
    sections = set()
    for name in ("setup.cfg", "tox.ini"):
        parser = configparser.ConfigParser(interpolation=None)
        try:
            parser.read_string(_read(repo / name))
        except configparser.Error:
            continue
        sections |= set(parser.sections())
    hooks = _pre_commit_hooks(repo)
    found = []
    for tool in _ORDER:
        files, table, cfg_sections, hook_ids = _CONFIGURED[tool]
        if (
            any((repo / f).is_file() for f in files)
            or re.search(rf"^\[tool\.{re.escape(table)}[.\]]", pyproject, re.MULTILINE)
            or sections & set(cfg_sections)
            or hooks & set(hook_ids)
        ):
            found.append(tool)
    return tuple(found)


def apply_style(repo: Path, written: dict[str, str | None]) -> tuple[ToolRun, ...]:
    """Runs the repository's tools on `written` (path -> its base content, None for a new
    file) inside `repo`, the clone the PR commits from. Formatters rewrite the files in place."""
    python = sorted(p for p in written if p.endswith(".py"))
    if not python:
        return ()
    runs = []
    for tool in configured_tools(repo):
        command = _FORMATTERS.get(tool) or _LINTERS[tool]
        executable = _which(command[0])
        if executable is None:
            runs.append(ToolRun(tool, "configured but not installed here: not run"))
            continue
        command = [executable, *command[1:]]
        if tool in _FORMATTERS:
            files = [p for p in python if _clean_at_base(repo, command, p, written[p])]
            runs.append(ToolRun(tool, _format(repo, command, files, len(python))))
        else:
            runs.append(ToolRun(tool, _lint(repo, command, python)))
    return tuple(runs)


def style_section(runs: tuple[ToolRun, ...]) -> str:
    """The PR body's account of the repository's own tools on this change."""
    lines = [f"- `{run.tool}`: {run.outcome}" for run in runs]
    head = "\n### The repository's formatters and linters\n\nRun on the files of this PR as "
    return head + "the repository configures them:\n\n" + "\n".join(lines) + "\n"


def _format(repo: Path, command: list[str], files: list[str], total: int) -> str:
    if not files:
        return f"not run: none of the {total} file(s) was clean under it before this change"
    before = {p: (repo / p).read_text(encoding="utf-8") for p in files}
    done = _run(repo, [*command, *files])
    if done is None or done.returncode != 0:
        return f"failed: {_why(done)}"
    changed = sum(1 for p in files if (repo / p).read_text(encoding="utf-8") != before[p])
    skipped = total - len(files)
    tail = f"; {skipped} file(s) left as written (not clean before this change)" if skipped else ""
    return f"ran on {len(files)} file(s), reformatted {changed}{tail}"


def _lint(repo: Path, command: list[str], files: list[str]) -> str:
    done = _run(repo, [*command, *files])
    if done is None:
        return "failed: timed out"
    if done.returncode == 0:
        return f"clean on {len(files)} file(s)"
    if done.returncode != 1:  # ruff and flake8 exit 1 for findings, otherwise for errors
        return f"failed: {_why(done)}"
    lines = [line for line in (done.stdout + done.stderr).splitlines() if line.strip()]
    return f"{len(lines)} finding(s): " + "; ".join(lines[:5])


def _clean_at_base(repo: Path, command: list[str], path: str, base: str | None) -> bool:
    """A new file is always formatted; a modified one only if the tool leaves its base as is."""
    if base is None:
        return True
    probe = repo / ".kbot-style-probe" / path
    probe.parent.mkdir(parents=True, exist_ok=True)
    try:
        probe.write_text(base, encoding="utf-8")
        done = _run(repo, [*command, str(probe.relative_to(repo))])
        return done is not None and done.returncode == 0 and probe.read_text("utf-8") == base
    finally:
        shutil.rmtree(repo / ".kbot-style-probe", ignore_errors=True)


def _which(name: str) -> str | None:
    """On PATH, or beside this Python (a virtual environment used without activating it)."""
    return shutil.which(name) or shutil.which(name, path=str(Path(sys.executable).parent))


def _run(repo: Path, argv: list[str]) -> subprocess.CompletedProcess | None:
    try:
        return subprocess.run(
            argv, cwd=repo, capture_output=True, text=True, timeout=_TIMEOUT_S, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return None


def _why(done: subprocess.CompletedProcess | None) -> str:
    if done is None:
        return "timed out"
    lines = (done.stderr or done.stdout).strip().splitlines()
    return lines[-1][:200] if lines else f"exit {done.returncode}"


def _pre_commit_hooks(repo: Path) -> set[str]:
    try:
        data = yaml.safe_load(_read(repo / ".pre-commit-config.yaml")) or {}
    except yaml.YAMLError:
        return set()
    ids = set()
    for entry in data.get("repos", []) if isinstance(data, dict) else []:
        for hook in entry.get("hooks", []) if isinstance(entry, dict) else []:
            if isinstance(hook, dict) and isinstance(hook.get("id"), str):
                ids.add(hook["id"])
    return ids


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return ""
