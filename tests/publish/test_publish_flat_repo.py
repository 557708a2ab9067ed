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

MODEL = """import torch


def apply_rotary_emb(x, cos, sin):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((x1 * cos - x2 * sin, x2 * cos + x1 * sin), dim=-1)
"""


def _git(cwd: Path, *args: str) -> None:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com"}  # fmt: skip
    subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True)


def _flat_repo(root: Path, model: str = MODEL) -> Path:
    (root / "moe-scripts").mkdir(parents=True)
    (root / "moe-scripts" / "model.py").write_text(model)
    (root / "README.md").write_text("scripts, run from their folder\n")
    _git(root, "init", "-q")
    _git(root, "symbolic-ref", "HEAD", "refs/heads/main")
    _git(root, "add", "--all")
    _git(root, "-c", "commit.gpgsign=false", "commit", "-q", "-m", "base")
    return root


def _run(cmd: list[str], cwd: Path, extra: dict | None = None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return subprocess.run(
        cmd, cwd=cwd, capture_output=True, text=True, timeout=900,
        env={**env, "TRITON_INTERPRET": "1", **(extra or {})},
    )  # fmt: skip


def test_a_pr_for_a_folder_of_scripts_runs_its_own_parity_test(
    tmp_path, monkeypatch, emit_one, draft_emitted
):
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)
    repo = _flat_repo(tmp_path / "fastlm")
    emitted = emit_one(repo)
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


def test_a_function_target_named_as_its_kernel_is_tested_against_the_kernel(
    tmp_path, monkeypatch, emit_one, draft_emitted
):
    # lightllm's `rotate_half` (H100, 2026-12-06): the kernel's launcher, the patched function
    # and the reference's copy all had one name, and the name bound last won: there the copy,
    # so the parity test compared the original with itself and the benchmark's kbot column
    # timed the original; here the kernel's import, so the patched-op test called the kernel.
    # Each now has its own name, and a kernel that returns garbage fails the parity test.
    text = _kernel_must_fail_parity(tmp_path, monkeypatch, emit_one, draft_emitted, MODEL, {})
    assert "import apply_rotary_emb as triton_apply_rotary_emb" in text


def test_a_copied_function_named_as_its_kernel_does_not_shadow_the_kernel(
    tmp_path, monkeypatch, emit_one, draft_emitted
):
    # As lightllm's was: the module does not import where kbot scans it (a package missing
    # there), so the problem carries a copy of the function under its own name; the PR's
    # parity test runs where the package is installed (a stand-in module here).
    stand_in = tmp_path / "site"
    stand_in.mkdir()
    (stand_in / "kbot_absent_package.py").write_text("")
    model = "import kbot_absent_package\n" + MODEL
    text = _kernel_must_fail_parity(
        tmp_path, monkeypatch, emit_one, draft_emitted, model, {"PYTHONPATH": str(stand_in)}
    )
    assert "def apply_rotary_emb(" in text  # the reference's copy keeps its name
    assert "import apply_rotary_emb as patched_apply_rotary_emb" in text


def _drafted(tmp_path, monkeypatch, emit_one, draft_emitted, model, op) -> tuple[Path, dict]:
    """`model` as moe-scripts/model.py of a flat repository, drafted as `op`: the patched clone
    and the PR's added files by prefix (test_, bench_, triton_)."""
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)
    outcome = draft_emitted(emit_one(_flat_repo(tmp_path / "fastlm", model)), op)
    prefixes = ("test_", "bench_", "triton_")
    files = {p: f for f in outcome.files for p in prefixes if Path(f).name.startswith(p)}
    return outcome.clone_dir, files


def _kernel_must_fail_parity(tmp_path, monkeypatch, emit_one, draft_emitted, model, env) -> str:
    """Drafts `model`'s apply_rotary_emb as an op of the same name; its parity test passes, and
    fails once the kernel module's launcher returns garbage. Returns the parity test's text."""
    clone, files = _drafted(
        tmp_path, monkeypatch, emit_one, draft_emitted, model, "apply_rotary_emb"
    )
    parity, kernel = files["test_"], files["triton_"]
    text = (clone / parity).read_text()
    assert "return triton_apply_rotary_emb(" in text
    pytest_cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", parity]
    done = _run(pytest_cmd, clone, env)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    garbage = "\n\ndef apply_rotary_emb(x, *args, **kwargs):\n    return x * 0 + 7\n"
    (clone / kernel).write_text((clone / kernel).read_text() + garbage)
    done = _run(pytest_cmd, clone, env)
    assert done.returncode != 0 and " failed" in done.stdout, done.stdout[-3000:]
    return text


def test_names_a_reference_shares_with_an_import_are_found():
    body = "def rotate_half(x):\n    return x\n"
    rendered = f"import torch\nfrom pkg.triton_rotate_half import rotate_half\n\n{body}\n"
    with pytest.raises(AdapterError, match="binds rotate_half"):
        check_names(rendered, body, "tests/test_op.py")
    check_names(rendered.replace("rotate_half\n\n", "rotate_half as triton_rotate_half\n\n", 1),
                body, "tests/test_op.py")  # fmt: skip


ANNOTATED = """import kbot_absent_package
from typing import Optional, Tuple

import torch


def apply_rotary_emb(
    x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, scale: Optional[float] = None
) -> Tuple[torch.Tensor, torch.Tensor]:
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((x1 * cos - x2 * sin, x2 * cos + x1 * sin), dim=-1)
"""


def test_a_copied_functions_annotations_do_not_break_the_prs_files(
    tmp_path, monkeypatch, emit_one, draft_emitted
):
    # lightllm's apply_rotary_pos_emb_vision (H100, 2026-12-06): the problem file postpones
    # annotations and copies no import for names used only there, so the parity test's copy of
    # `-> Tuple[...]` raised NameError at import; the benchmark's copy of the original too.
    stand_in = tmp_path / "site"
    stand_in.mkdir()
    (stand_in / "kbot_absent_package.py").write_text("")
    clone, files = _drafted(tmp_path, monkeypatch, emit_one, draft_emitted, ANNOTATED, "rope")
    parity, bench = files["test_"], files["bench_"]
    env = {"PYTHONPATH": str(stand_in)}
    for path in (parity, bench):
        assert "Tuple[" not in (clone / path).read_text()
    done = _run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", parity], clone, env
    )
    assert done.returncode == 0 and " passed" in done.stdout, done.stdout[-3000:]
    done = _run([sys.executable, "-c", _IMPORT_ONLY, str(clone / bench)], tmp_path, env)
    assert done.returncode == 0, done.stderr[-2000:]
