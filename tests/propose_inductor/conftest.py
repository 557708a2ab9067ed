"""Captures of torch.compile's output made on an H200 (torch 2.11, Triton 3.6) by
bench/inductor_capture.py, and the problems they were made from.

fixtures/<op>__dynamic.txt is the capture's output code (the `.py` the script writes, stored as
text so linters leave it alone; the first set was once run through `ruff format`, which changed
the wrapper's layout but not the kernels' source strings), <op>__dynamic.json its metadata."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from kbot.problem import load_problem
from kbot.propose.inductor.records import GraphInput, capture_from_json

FIXTURES = Path(__file__).parent / "fixtures"
PROBLEMS = Path(__file__).parents[2] / "bench" / "problems"

# The first captures predate recording dynamo's placeholder sources; for those, what each of
# call()'s arguments is, read off their output code (`s77 = arg0_1`, `arg1_1.item()`, shapes).
EARLY_GRAPH_INPUTS = {
    "rmsnorm": [("L['x']", "tensor"), ("L['self'].variance_epsilon", "scalar"),
                ("L['self']._parameters['weight']", "tensor")],
    "silu_and_mul": [("L['x'].size()[0]", "symint"), ("L['x'].size()[1]", "symint"),
                     ("L['x']", "tensor")],
    "log_softmax_128k": [("L['logits'].size()[0]", "symint"),
                         ("L['logits'].size()[1]", "symint"), ("L['logits']", "tensor")],
    "linear_silu": [("L['self']._modules['proj']._parameters['weight']", "tensor"),
                    ("L['x']", "tensor")],
    "softcap": [("L['x'].size()[0]", "symint"), ("L['x']", "tensor"),
                ("L['self'].cap", "scalar")],
}  # fmt: skip


@pytest.fixture
def recorded():
    """True for captures that carry their own graph inputs (made by the current capture)."""
    return lambda op: bool(
        json.loads((FIXTURES / f"{op}__dynamic.json").read_text()).get("graph_inputs")
    )


@pytest.fixture
def capture_of():
    def load(op: str, early_inputs: bool = True):
        path = FIXTURES / f"{op}__dynamic.txt"
        meta = json.loads(path.with_suffix(".json").read_text())
        capture = capture_from_json(path.read_text(), meta)
        if early_inputs and not capture.graph_inputs and op in EARLY_GRAPH_INPUTS:
            inputs = tuple(GraphInput(*pair) for pair in EARLY_GRAPH_INPUTS[op])
            capture = dataclasses.replace(capture, graph_inputs=inputs)
        return capture

    return load


@pytest.fixture
def problem_of():
    return lambda op: load_problem(PROBLEMS / f"{op}.py")
