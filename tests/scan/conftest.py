"""Fixtures for the scanner's tests: copies of the fixture trees, with broken files added at
test time (a committed file with a syntax error or Latin-1 bytes would trip the linters)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent / "fixtures"
TINYSERVE = Path(__file__).resolve().parents[2] / "examples" / "tinyserve"


@pytest.fixture
def engine_tree(tmp_path: Path) -> Path:
    """The `engine` package (three generations of op bases, backends, compiled functions,
    stochastic and in-place ops) plus a file that does not parse and one that is not UTF-8."""
    root = tmp_path / "repo"
    shutil.copytree(
        FIXTURES / "engine", root / "engine", ignore=shutil.ignore_patterns("__pycache__")
    )
    (root / "engine" / "broken.py").write_text(
        "class Half(CustomOp):\n    def forward_native(self x):\n        return x\n"
    )
    (root / "engine" / "latin1.py").write_bytes("# caf\xe9\nx = 1\n".encode("latin-1"))
    return root


@pytest.fixture
def tinyserve() -> Path:
    if not (TINYSERVE / ".kbot.yml").is_file():
        pytest.skip("examples/tinyserve is not in this checkout")
    return TINYSERVE


@pytest.fixture
def standalone_tree(tmp_path: Path) -> Path:
    root = tmp_path / "standalone_repo"
    shutil.copytree(FIXTURES / "standalone", root, ignore=shutil.ignore_patterns("__pycache__"))
    return root


@pytest.fixture
def run_problem():
    """Imports an emitted problem and returns (module, model, list of inputs per case)."""
    from kbot.problem import load_problem
    from kbot.problem.runtime import case_inputs, import_file, init_inputs

    def load(path: Path):
        spec = load_problem(path)  # the AST reader accepts it
        module = import_file(path)
        model = module.Model(*init_inputs(module))
        return spec, module, model, [case_inputs(module, case) for case in spec.cases]

    return load


@pytest.fixture
def import_from():
    """Imports `module` with `folder` on sys.path, then removes the path again."""
    import importlib
    import sys

    added: list[str] = []

    def load(folder: Path, module: str):
        sys.path.insert(0, str(folder))
        added.append(str(folder))
        for name in [
            m
            for m in sys.modules
            if m == module.split(".")[0] or m.startswith(module.split(".")[0] + ".")
        ]:
            del sys.modules[name]
        return importlib.import_module(module)

    yield load
    for folder in added:
        if folder in sys.path:
            sys.path.remove(folder)


@pytest.fixture
def toy_tree(tmp_path: Path) -> Path:
    """A toy model with op costs we control (see toymodel/layers.py)."""
    root = tmp_path / "toy"
    shutil.copytree(FIXTURES / "toy", root, ignore=shutil.ignore_patterns("__pycache__"))
    return root


@pytest.fixture
def qwenlite_tree(tmp_path: Path) -> Path:
    """A Qwen3-shaped engine whose hot ops are all `@torch.compile` methods or forwards, with
    the `.kbot.yml` its maintainer would write (see qwenlite/.kbot.yml)."""
    root = tmp_path / "qwenlite_repo"
    shutil.copytree(FIXTURES / "qwenlite", root, ignore=shutil.ignore_patterns("__pycache__"))
    return root
