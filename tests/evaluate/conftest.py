"""Shared fixtures for the evaluator's tests: one CPU evaluator for the whole session (its
worker is reused across tests, as the search reuses it), and loaders for the fixture files."""

from __future__ import annotations

from pathlib import Path

import pytest

from kbot.evaluate import EvalOptions, Evaluator
from kbot.problem import ProblemSpec, load_problem

HERE = Path(__file__).parent


@pytest.fixture(scope="session")
def evaluator():
    with Evaluator(EvalOptions(device="cpu", timeout_s=120.0)) as shared:
        yield shared


@pytest.fixture(scope="session")
def problem():
    def load(name: str) -> ProblemSpec:
        return load_problem(HERE / "problems" / f"{name}.py")

    return load


@pytest.fixture(scope="session")
def candidate():
    def read(name: str) -> str:
        return (HERE / "candidates" / f"{name}.py").read_text(encoding="utf-8")

    return read


@pytest.fixture(scope="session")
def paths():
    return HERE
