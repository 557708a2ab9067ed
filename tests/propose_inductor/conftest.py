"""Captures of torch.compile's output made on an H200 (torch 2.11, Triton 3.6) by
bench/inductor_capture.py, and the problems they were made from.

fixtures/<op>__dynamic.txt is the capture's output code (the `.py` the script writes, stored as
text so linters leave it alone), <op>__dynamic.json its metadata, including what each argument
of inductor's call() is (dynamo's placeholder sources)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kbot.problem import load_problem
from kbot.propose.inductor.records import capture_from_json

FIXTURES = Path(__file__).parent / "fixtures"
PROBLEMS = Path(__file__).parents[2] / "bench" / "problems"


@pytest.fixture
def capture_of():
    def load(op: str):
        path = FIXTURES / f"{op}__dynamic.txt"
        meta = json.loads(path.with_suffix(".json").read_text())
        return capture_from_json(path.read_text(), meta)

    return load


@pytest.fixture
def problem_of():
    return lambda op: load_problem(PROBLEMS / f"{op}.py")


@pytest.fixture
def fake_captures(monkeypatch):
    """Stands in for the proposer's capture child with a fixture's capture: `install(op,
    answer)` makes the largest case's capture return the fixture and any other `at`
    `answer(at, meta)` (a copy of it each time); it returns the list of each call's `at`."""
    import copy

    import kbot.propose.inductor.proposer as module

    def install(op: str, answer):
        path = FIXTURES / f"{op}__dynamic.txt"
        meta = json.loads(path.with_suffix(".json").read_text())
        meta["code"] = path.read_text()
        calls: list[str] = []

        def capture(problem, timeout_s, cancelled=None, compile_mode="default", at="largest"):
            calls.append(at)
            return copy.deepcopy(meta) if at == "largest" else answer(at, copy.deepcopy(meta))

        monkeypatch.setattr(module, "capture_in_child", capture)
        return calls

    return install
