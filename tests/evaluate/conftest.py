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


@pytest.fixture(scope="session")
def interpreter_probe():
    """Runs a probe script in a child with TRITON_INTERPRET=1 (kbot's interpreter patches
    change the process that installs them) and returns its last printed line, as JSON."""
    import json
    import os
    import subprocess
    import sys

    def run(source: str, *args: str) -> dict:
        env = {**os.environ, "TRITON_INTERPRET": "1"}
        done = subprocess.run(
            [sys.executable, "-c", source, *args],
            capture_output=True, text=True, env=env, timeout=300,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr[-2000:]
        return json.loads(done.stdout.strip().splitlines()[-1])

    return run
