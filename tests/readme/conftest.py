"""Fixtures for the README and the GitHub Action files at the repository root."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO_ROOT


@pytest.fixture(scope="session")
def readme_text() -> str:
    return (REPO_ROOT / "README.md").read_text()
