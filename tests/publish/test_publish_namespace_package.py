"""A PR for a package whose op lives in a folder without `__init__.py` (nano-vllm's
`nanovllm/layers/`: a PEP 420 portion of the `nanovllm` package, imported everywhere as
`nanovllm.layers.layernorm`). On the H200 kbot drafted four PRs for nano-vllm whose integration
imported the kernel as a top-level `triton_rms_norm`: the parity test put `nanovllm/layers/` on
sys.path itself and passed, while the engine, run from the repository's root, would have failed
at the first CUDA call. The import root is now the one the repository's own imports use, and
a folder without `__init__.py` inside a package belongs to that package."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from kbot.scan.location import import_location, imported_names

ROTARY = """import torch


def apply_rotary_emb(x, cos, sin):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((x1 * cos - x2 * sin, x2 * cos + x1 * sin), dim=-1)
"""

MODEL = """from fastlm.layers.rotary import apply_rotary_emb


def attention_inputs(q, cos, sin):
    return apply_rotary_emb(q, cos, sin)
"""


def _write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def _git(cwd: Path, *args: str) -> None:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com"}  # fmt: skip
    subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True)


def _dir(root: Path, file: str) -> str:
    return import_location(root, file, imported_names(root)).import_dir


def test_a_folder_without_init_inside_a_package_belongs_to_the_package(tmp_path):
    _write(tmp_path, {"pkg/__init__.py": "", "pkg/layers/norm.py": "", "src/lib/__init__.py": "",
                      "src/lib/ops/act.py": "", "moe-scripts/model.py": "", "tools/run.py": ""})  # fmt: skip
    assert import_location(tmp_path, "pkg/layers/norm.py").module == "pkg.layers.norm"
    assert _dir(tmp_path, "pkg/layers/norm.py") == ""
    assert _dir(tmp_path, "src/lib/ops/act.py") == "src"
    assert _dir(tmp_path, "moe-scripts/model.py") == "moe-scripts"
    assert _dir(tmp_path, "tools/run.py") == "tools"


def test_the_repositorys_own_imports_decide_the_import_folder(tmp_path):
    _write(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/layers/norm.py": "",
        "pkg/models/llama.py": "from pkg.layers.norm import RMSNorm\nimport pkg.layers.norm\n",
        # another `norm` elsewhere: its importer is outside pkg/layers/, so it says nothing
        "bench/run.py": "from norm import RMSNorm\n",
        # kbot's own work folder (an earlier run's problems) says nothing either
        ".kbot/problems/norm.py": "from norm import RMSNorm\nfrom norm import RMSNorm\n",
        # scripts inside a package that import their sibling as a top-level module
        "pkg/scripts/model.py": "",
        "pkg/scripts/generate.py": "from model import Transformer\n",
        "pkg/scripts/quantize.py": "import model\n",
        "pkg/ops/__init__.py": "from pkg.ops import (act, other)\n",
        "pkg/ops/act.py": "",
    })  # fmt: skip
    assert _dir(tmp_path, "pkg/layers/norm.py") == ""
    where = import_location(tmp_path, "pkg/scripts/model.py")
    assert (where.import_dir, where.module) == ("pkg/scripts", "model")
    assert import_location(tmp_path, "pkg/ops/act.py").module == "pkg.ops.act"


def test_a_pr_in_a_namespace_folder_imports_the_kernel_as_the_package_does(
    tmp_path, monkeypatch, emit_one, draft_emitted
):
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)
    repo = _write(tmp_path / "fastlm", {
        "pyproject.toml": '[project]\nname = "fastlm"\nversion = "0.1"\n',
        "fastlm/__init__.py": "",
        "fastlm/layers/rotary.py": ROTARY,  # no fastlm/layers/__init__.py, as in nano-vllm
        "fastlm/models/__init__.py": "",
        "fastlm/models/llama.py": MODEL,
    })  # fmt: skip
    _git(repo, "init", "-q")
    _git(repo, "symbolic-ref", "HEAD", "refs/heads/main")
    _git(repo, "add", "--all")
    _git(repo, "-c", "commit.gpgsign=false", "commit", "-q", "-m", "base")
    emitted = emit_one(repo)

    outcome = draft_emitted(emitted, "rope")
    clone = outcome.clone_dir
    kernel = next(f for f in outcome.files if Path(f).name.startswith("triton_"))
    assert kernel == "fastlm/layers/triton_apply_rotary_emb.py"
    patched = (clone / "fastlm/layers/rotary.py").read_text()
    assert "from fastlm.layers.triton_apply_rotary_emb import" in patched, patched
    parity = next(f for f in outcome.files if Path(f).name.startswith("test_"))
    assert "from fastlm.layers.rotary import" in (clone / parity).read_text()

    # Every import the patched module makes, its guarded one included, resolves from the
    # repository's root with nothing on PYTHONPATH, as the engine runs.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    check = (
        "import ast, importlib, importlib.util, sys\n"
        "sys.path.insert(0, '.')\n"
        "importlib.import_module('fastlm.layers.rotary')\n"
        "tree = ast.parse(open('fastlm/layers/rotary.py').read())\n"
        "for node in ast.walk(tree):\n"
        "    if isinstance(node, ast.ImportFrom) and node.level == 0:\n"
        "        assert importlib.util.find_spec(node.module), node.module\n"
        "print('ok')\n"
    )
    done = subprocess.run([sys.executable, "-c", check], cwd=clone, env=env, capture_output=True,
                          text=True, timeout=300)  # fmt: skip
    assert done.returncode == 0 and "ok" in done.stdout, done.stderr[-2000:]
    # The parity test from the repository's root, as the PR body says.
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", parity], cwd=clone,
        env={**env, "TRITON_INTERPRET": "1"}, capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert " passed" in done.stdout


def test_a_problem_file_that_named_the_module_otherwise_is_reimported_in_the_pr():
    # A run directory made before the fix records `layernorm` for nanovllm.layers.layernorm:
    # the PR's parity test and benchmark import the op as the repository does.
    from kbot.publish.reference import reimport

    problem = (
        "import torch\n"
        "from layernorm import RMSNorm as _Outer  # noqa: E402\n"
        "import layernorm as norms\n"
        "import layernorm\n"
        "from layernorm_utils import helper\n"
    )
    assert reimport(problem, "layernorm", "nanovllm.layers.layernorm") == (
        "import torch\n"
        "from nanovllm.layers.layernorm import RMSNorm as _Outer  # noqa: E402\n"
        "import nanovllm.layers.layernorm as norms\n"
        "import layernorm\n"  # binds the name `layernorm` itself: left as written
        "from layernorm_utils import helper\n"
    )
    assert reimport(problem, "layernorm", "layernorm") == problem
