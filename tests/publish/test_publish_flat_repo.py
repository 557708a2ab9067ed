"""A PR for a repository laid out as gpt-fast is: no package and no project file, scripts in a
folder whose name is not a Python identifier (`moe-scripts/model.py`), imported as `model`
from inside that folder. On the H200 two of gpt-fast's drafted PRs failed their own parity
test there: it could not import the kernel module (nothing put `moe-scripts/` on the path),
and a function target's problem binds `_reference`, which the test's helper of that name
shadowed. Here the scanner's problem, a codegen kernel and the real evaluator's verdict go
through `kbot pr`; the patched checkout's parity test and benchmark then run from the
repository's root and from elsewhere, with nothing on PYTHONPATH."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from kbot.publish.adapters.source import AdapterError
from kbot.publish.reference import check_names
from kbot.scan import ScanOptions, scan
from kbot.scan.extract import EmitStatus, emit_problems
from kbot.scan.model_config import load_model_config

MODEL = """import torch


def apply_rotary_emb(x, cos, sin):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((x1 * cos - x2 * sin, x2 * cos + x1 * sin), dim=-1)
"""


def _git(cwd: Path, *args: str) -> None:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com"}  # fmt: skip
    subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True)


def _flat_repo(root: Path) -> Path:
    (root / "moe-scripts").mkdir(parents=True)
    (root / "moe-scripts" / "model.py").write_text(MODEL)
    (root / "README.md").write_text("scripts, run from their folder\n")
    _git(root, "init", "-q")
    _git(root, "symbolic-ref", "HEAD", "refs/heads/main")
    _git(root, "add", "--all")
    _git(root, "-c", "commit.gpgsign=false", "commit", "-q", "-m", "base")
    return root


def _run(cmd: list[str], cwd: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return subprocess.run(
        cmd, cwd=cwd, capture_output=True, text=True, timeout=900,
        env={**env, "TRITON_INTERPRET": "1"},
    )  # fmt: skip


def test_a_pr_for_a_folder_of_scripts_runs_its_own_parity_test(
    tmp_path, monkeypatch, draft_emitted
):
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)
    repo = _flat_repo(tmp_path / "fastlm")
    options = ScanOptions(cases=({"T": 1}, {"T": 3}), model_config=load_model_config("llama-3-8b"))
    (emitted,) = emit_problems(scan(repo, options), tmp_path / "problems", options)
    assert emitted.status == EmitStatus.EMITTED, emitted.message
    problem_source = emitted.path.read_text()
    assert "_reference = " in problem_source  # the name the parity test's helper once shadowed

    outcome = draft_emitted(emitted, "rope")
    clone = outcome.clone_dir
    parity = next(f for f in outcome.files if Path(f).name.startswith("test_"))
    bench = next(f for f in outcome.files if Path(f).name.startswith("bench_"))
    assert parity.startswith("moe-scripts/") and bench.startswith("moe-scripts/")
    text = (clone / parity).read_text()
    assert str(tmp_path) not in text  # the path set-up is relative to the test file

    # From the repository's root, as the PR body says, and from the test's own folder.
    for cwd, path in ((clone, parity), (clone / Path(parity).parent, Path(parity).name)):
        done = _run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", path], cwd)
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
        assert " passed" in done.stdout
    # The benchmark script imports too (it times nothing without a GPU, and says so).
    done = _run([sys.executable, "-c", _IMPORT_ONLY, str(clone / bench)], tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]


# Loads the benchmark script as `python FILE` would (its folder first on sys.path), without
# running main().
_IMPORT_ONLY = """
import runpy, sys, os
path = sys.argv[1]
sys.path.insert(0, os.path.dirname(path))
runpy.run_path(path, run_name="imported")
"""


def test_a_reference_name_the_template_defines_too_is_refused_with_the_name():
    body = "def _kernel(x):\n    return x\n\n\nclass Model:\n    pass\n"
    rendered = f"import torch\n\n{body}\n\ndef _kernel(model, x):\n    return model(x)\n"
    with pytest.raises(AdapterError, match=r"tests/test_op\.py: .* binds _kernel"):
        check_names(rendered, body, "tests/test_op.py")
    check_names(rendered.replace("def _kernel(model", "def _launch(model"), body, "t.py")
