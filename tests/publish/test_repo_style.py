"""The target repository's own formatters and linters on the files a PR writes (issue 14,
deliverable 4): run as the repository configures them, only when configured and installed; a
modified file is reformatted only when its base was already clean, so the PR never carries a
reformatting of lines kbot did not write; the PR body says what ran."""

from __future__ import annotations

import git
import pytest

from kbot.publish.adapters import FileChange
from kbot.publish.gitops import Workspace, locate_repo
from kbot.publish.repo_style import configured_tools, style_section

PYPROJECT = '[project]\nname = "demo"\n\n[tool.ruff]\nline-length = 100\n\n[tool.ruff.format]\n'
CLEAN = "def scale(x):\n    return x * 2\n"
UNCLEAN = "def shift(x):  return x+1\n"


def _repo(tmp_path, pyproject=PYPROJECT):
    root = tmp_path / "demo"
    (root / "demo").mkdir(parents=True)
    (root / "pyproject.toml").write_text(pyproject)
    (root / "demo" / "clean.py").write_text(CLEAN)
    (root / "demo" / "unclean.py").write_text(UNCLEAN)
    repo = git.Repo.init(root, initial_branch="main")
    repo.git.add("-A")
    with repo.config_writer() as config:  # CI machines have no global identity
        config.set_value("user", "name", "A")
        config.set_value("user", "email", "a@example.invalid")
    repo.git.commit("-q", "-m", "demo")
    return root


def _commit(root, tmp_path, files):
    workspace = Workspace(locate_repo(root), tmp_path / "work")
    workspace.checkout_base("main")
    result = workspace.commit("kbot/demo", files, "Add a kernel", signoff=False)
    return result, workspace.path


def test_configured_formatter_formats_new_files_and_clean_modified_ones_only(tmp_path):
    root = _repo(tmp_path)
    files = (
        FileChange("demo/kernel.py", "import torch\ndef k(x):  return torch.relu(x)\n", True),
        FileChange("demo/unused.py", "import os\n", True),
        FileChange("demo/clean.py", CLEAN + "def twice(x):  return scale(scale(x))\n", False),
        FileChange("demo/unclean.py", UNCLEAN + "def back(x):  return x-1\n", False),
    )
    result, clone = _commit(root, tmp_path, files)
    assert (clone / "demo" / "kernel.py").read_text() == (
        "import torch\n\n\ndef k(x):\n    return torch.relu(x)\n"
    )
    assert (
        (clone / "demo" / "clean.py")
        .read_text()
        .endswith("def twice(x):\n    return scale(scale(x))\n")
    )
    # Not clean before kbot's change: left as kbot wrote it, so the diff is only kbot's lines.
    assert (clone / "demo" / "unclean.py").read_text() == UNCLEAN + "def back(x):  return x-1\n"
    assert not (clone / ".kbot-style-probe").exists()
    runs = {run.tool: run.outcome for run in result.style}
    assert runs["ruff-format"] == (
        "ran on 3 file(s), reformatted 2; 1 file(s) left as written (not clean before this change)"
    )
    # The linter reports; what it finds is the PR body's to say, not kbot's to hide.
    assert runs["ruff-check"].startswith("1 finding(s): demo/unused.py:1:8: F401")
    # What was committed is what was formatted.
    committed = git.Repo(clone).git.show("HEAD:demo/kernel.py")
    assert committed + "\n" == (clone / "demo" / "kernel.py").read_text()
    assert "`ruff-format`: ran on 3 file(s)" in style_section(result.style)


def test_a_repository_that_configures_no_tool_gets_none_run(tmp_path):
    root = _repo(tmp_path, pyproject='[project]\nname = "demo"\n')
    files = (FileChange("demo/kernel.py", "def k(x):  return x\n", True),)
    result, clone = _commit(root, tmp_path, files)
    assert result.style == ()
    assert (clone / "demo" / "kernel.py").read_text() == "def k(x):  return x\n"


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        ({"pyproject.toml": "[tool.black]\nline-length = 100\n"}, ("black",)),
        ({"pyproject.toml": "[tool.ruff.lint]\nselect = ['E']\n"}, ("ruff-check",)),
        ({"setup.cfg": "[flake8]\nmax-line-length = 120\n[isort]\nprofile = black\n"},
         ("isort", "flake8")),
        ({".pre-commit-config.yaml": "repos:\n- repo: https://github.com/psf/black\n"
          "  rev: 24.1.0\n  hooks:\n  - id: black\n- repo: local\n  hooks:\n"
          "  - id: ruff-format\n    name: r\n    entry: ruff format\n    language: system\n"},
         ("black", "ruff-format")),
        ({"setup.cfg": "[metadata\nbroken"}, ()),
    ],
)  # fmt: skip
def test_which_tools_a_repository_configures(tmp_path, files, expected):
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    assert configured_tools(tmp_path) == expected
