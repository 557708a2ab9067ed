"""Outputs of different shapes (RoPE on GQA query and key): one kernel per output shape, one
launcher returning the outputs in the reference's order, accepted by the real evaluator."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from kbot.evaluate import EvalOptions, Evaluator
from kbot.problem import load_problem
from kbot.propose.base import ProposeContext
from kbot.propose.codegen import CodegenProposer, generate

PROBLEMS = Path(__file__).parent / "problems"
GROUPED = {
    "rope_gqa_two_outputs": [["out0"], ["out1"]],
    "rope_gqa_two_outputs_fp32": [["out0"], ["out1"]],
    "pointwise_outputs_two_shapes": [["out0", "out2"], ["out1"]],
}


@pytest.fixture(scope="module")
def evaluator():
    with Evaluator(EvalOptions(device="cpu")) as ev:
        yield ev


def _kernels(source: str) -> list[str]:
    tree = ast.parse(source)
    return [
        f.name
        for f in tree.body
        if isinstance(f, ast.FunctionDef)
        and any(ast.unparse(d) == "triton.jit" for d in f.decorator_list)
        and not f.name.startswith("_round")
    ]


@pytest.mark.parametrize("name", sorted(GROUPED))
def test_one_kernel_per_output_shape_accepted_by_the_evaluator(name, evaluator):
    spec = load_problem(PROBLEMS / f"{name}.py")
    candidates = generate(spec)
    assert len(candidates) >= 2
    expected = [f"_{name}_{'_'.join(group)}_kernel" for group in GROUPED[name]]
    for candidate in candidates:
        assert _kernels(candidate.source) == expected
        assert candidate.params["kernels"] == len(expected)
        verdict = evaluator.evaluate(spec, candidate.source)
        assert verdict.accepted, (candidate.note, [str(r) for r in verdict.reasons])


def test_launcher_returns_outputs_in_reference_order(compare):
    problem = PROBLEMS / "pointwise_outputs_two_shapes.py"
    source = generate(load_problem(problem))[0].source
    assert "    return out0, out1, out2\n" in source
    # silu(x), y * w + 1, x + 1: a swapped pair would differ in value or shape.
    assert compare(problem, source) == 2 * 2 * 3


def test_tinyserve_style_rope_kernels_read_only_their_own_input():
    source = generate(load_problem(PROBLEMS / "rope_gqa_two_outputs.py"))[0].source
    tree = ast.parse(source)
    params = {
        f.name: {a.arg for a in f.args.args} for f in tree.body if isinstance(f, ast.FunctionDef)
    }
    query_kernel = params["_rope_gqa_two_outputs_out0_kernel"]
    key_kernel = params["_rope_gqa_two_outputs_out1_kernel"]
    assert "query_ptr" in query_kernel and "key_ptr" not in query_kernel
    assert "key_ptr" in key_kernel and "query_ptr" not in key_kernel
    assert "positions_ptr" in query_kernel and "positions_ptr" in key_kernel


_ALIAS_PROBLEM = """
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x, y):
        return {returns}


CASES = [dict(T=1), dict(T=6)]


def get_inputs(T):
    return [torch.randn(T, 48), torch.randn(T, 3, 8)]


def get_init_inputs():
    return []
"""


def _propose(tmp_path: Path, returns: str):
    path = tmp_path / "alias_outputs.py"
    path.write_text(_ALIAS_PROBLEM.format(returns=returns))
    spec = load_problem(path)
    context = ProposeContext(problem=spec, parents=(), device="cpu", seed=0, max_proposals=1)
    return spec, CodegenProposer().propose(context)


@pytest.mark.parametrize("returns", ["x * 2.0, y.flatten(1)", "x * 2.0, y[:, 1]"])
def test_an_output_that_is_a_view_of_an_input_is_copied_by_its_kernel(returns, tmp_path, evaluator):
    spec, outcome = _propose(tmp_path, returns)
    assert outcome.skipped_reason is None
    verdict = evaluator.evaluate(spec, outcome.proposals[0].source)
    assert verdict.accepted, [str(r) for r in verdict.reasons]


def test_an_input_returned_unchanged_is_refused_with_a_reason(tmp_path):
    _, outcome = _propose(tmp_path, "x * 2.0, y")
    assert outcome.proposals == ()
    assert outcome.skipped_reason == (
        "no codegen schedule: forward returns one of its inputs unchanged"
    )
