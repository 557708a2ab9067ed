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
