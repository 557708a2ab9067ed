"""Only the shape sweep (Evaluator.evaluate_sweep, asked for by the judge) lets ModelNew take
Model's tensors at Model's shapes; an ordinary evaluation still refuses a candidate whose state
has other shapes, and a dtype that differs is refused by both: the candidate cannot ask for
the adoption, and gains nothing from it but the op's own state."""

from __future__ import annotations

import pytest

from kbot.evaluate import EvalOptions, Evaluator
from kbot.problem import load_problem

PROBLEM = """
import torch
from torch import nn


class Model(nn.Module):
    def __init__(self, hidden):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(hidden))

    def forward(self, x):
        return x * self.weight


def get_inputs():
    return [torch.randn(3, 48)]


def get_init_inputs():
    return [48]
"""

# ModelNew builds its weight 32 wide, as a codegen constructor built at another size would.
CANDIDATE = """
import torch
import triton
import triton.language as tl
from torch import nn


@triton.jit
def _scale(x_ptr, w_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0)
    tl.store(out_ptr + row * n_cols + cols, x * w, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, hidden):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(32, dtype=WEIGHT_DTYPE))

    def forward(self, x):
        out = torch.empty_like(x)
        n_cols = x.shape[1]
        _scale[(x.shape[0],)](x, self.weight, out, n_cols, BLOCK=triton.next_power_of_2(n_cols))
        return out
"""


@pytest.fixture(scope="module")
def judged(tmp_path_factory):
    path = tmp_path_factory.mktemp("shapes") / "scale.py"
    path.write_text(PROBLEM)
    problem = load_problem(path)
    same_dtype = CANDIDATE.replace("WEIGHT_DTYPE", "torch.float32")
    other_dtype = CANDIDATE.replace("WEIGHT_DTYPE", "torch.float64")
    with Evaluator(EvalOptions(device="cpu")) as evaluator:
        return {
            "ordinary": evaluator.evaluate(problem, same_dtype),
            "sweep": evaluator.evaluate_sweep(problem, same_dtype),
            "sweep_dtype": evaluator.evaluate_sweep(problem, other_dtype),
        }


def test_an_ordinary_evaluation_refuses_state_of_other_shapes(judged):
    verdict = judged["ordinary"]
    assert not verdict.accepted
    assert "ModelNew.weight has shape (32,); Model's is (48,)" in str(verdict.reasons[0])


def test_the_sweep_gives_modelnew_models_tensors_at_models_shapes(judged):
    verdict = judged["sweep"]
    assert verdict.accepted, [str(r) for r in verdict.reasons]
    assert not verdict.timed  # correctness only


def test_the_sweep_adopts_no_tensor_of_another_dtype(judged):
    verdict = judged["sweep_dtype"]
    assert not verdict.accepted  # a float64 weight is not replaced, so its shape is refused
    assert str(verdict.reasons[0]).startswith("[load] ModelNew.weight has shape (32,)")
