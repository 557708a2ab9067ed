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
    (root / "engine" / "broken.py").write_text("def oops(:\n    return 1\n")
    (root / "engine" / "latin1.py").write_bytes("# caf\xe9\nx = 1\n".encode("latin-1"))
    return root


@pytest.fixture
def tinyserve() -> Path:
    if not (TINYSERVE / ".kbot.yml").is_file():
        pytest.skip("examples/tinyserve is not in this checkout")
    return TINYSERVE
