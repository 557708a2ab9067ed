"""tests/action: action.yml and the example workflow, checked and executed without GitHub."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
REPO_ROOT = HERE.parents[1]
# The harness modules live beside the tests (gha_expressions.py, gha_harness.py).
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO_ROOT
