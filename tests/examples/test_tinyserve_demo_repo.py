"""make_demo_repo.py: a git repository of the example's own, for the publisher to branch from."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=repo, capture_output=True, text=True, check=True
    ).stdout.strip()


def test_demo_repo_has_one_commit_on_main_and_a_clean_tree(demo_repo_module, tmp_path) -> None:
    repo = demo_repo_module.make_demo_repo(tmp_path / "demo")
    assert _git(repo, "rev-parse", "--abbrev-ref", "HEAD") == "main"
    assert _git(repo, "rev-list", "--count", "HEAD") == "1"
    assert _git(repo, "status", "--porcelain") == ""
    tracked = set(_git(repo, "ls-files").splitlines())
    assert {
        ".kbot.yml",
        ".gitignore",
        "tinyserve/layers/norm.py",
        "tests/test_layers.py",
    } <= tracked
    assert "make_demo_repo.py" not in tracked
    assert not any("__pycache__" in path or path.startswith(".kbot/") for path in tracked)


def test_demo_repo_commit_is_reproducible(demo_repo_module, tmp_path) -> None:
    first = demo_repo_module.make_demo_repo(tmp_path / "a")
    second = demo_repo_module.make_demo_repo(tmp_path / "b")
    assert _git(first, "rev-parse", "HEAD") == _git(second, "rev-parse", "HEAD")


def test_demo_repo_refuses_a_non_empty_destination(demo_repo_module, tmp_path) -> None:
    (tmp_path / "taken").mkdir()
    (tmp_path / "taken" / "file.txt").write_text("mine")
    with pytest.raises(demo_repo_module.DemoRepoError, match="not an empty folder"):
        demo_repo_module.make_demo_repo(tmp_path / "taken")
    assert (tmp_path / "taken" / "file.txt").read_text() == "mine"


def test_demo_repo_script_prints_the_path_or_one_line_error(example_root, tmp_path) -> None:
    script = str(example_root / "make_demo_repo.py")
    ok = subprocess.run(
        [sys.executable, script, str(tmp_path / "demo")], capture_output=True, text=True
    )
    assert ok.returncode == 0 and ok.stdout.strip() == str((tmp_path / "demo").resolve())
    again = subprocess.run(
        [sys.executable, script, str(tmp_path / "demo")], capture_output=True, text=True
    )
    assert again.returncode == 2
    assert len(again.stderr.strip().splitlines()) == 1 and "not an empty folder" in again.stderr
