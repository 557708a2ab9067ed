"""Fixtures for the bundled example repo, examples/tinyserve."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pytest

EXAMPLE_ROOT = Path(__file__).resolve().parents[2] / "examples" / "tinyserve"


@pytest.fixture(scope="session")
def example_root() -> Path:
    assert (EXAMPLE_ROOT / ".kbot.yml").is_file(), f"missing example at {EXAMPLE_ROOT}"
    return EXAMPLE_ROOT


@pytest.fixture(scope="session")
def demo_repo_module(example_root: Path) -> ModuleType:
    """make_demo_repo.py is a script inside the example, not part of the kbot package."""
    spec = importlib.util.spec_from_file_location(
        "tinyserve_make_demo_repo", example_root / "make_demo_repo.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
