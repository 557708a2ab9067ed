"""Forward arguments that are numbers (a rotary table's token count): the problem declares them
(KBOT scalar_inputs), the judge lets a candidate compute with them in Python and checks every
case passes numbers there, and a candidate's own annotations never make a tensor a number.
Codegen reads a declared count as a size at call time instead of baking in the traced one."""

from __future__ import annotations

import pytest

from kbot.errors import ProblemError
from kbot.evaluate import EvalOptions, Evaluator
from kbot.evaluate.static import check_source
from kbot.problem import load_problem
from kbot.problem.spec import ProblemOptions
from kbot.propose.codegen import generate

ROTARY_TABLE = """
import torch
from torch import nn


class Model(nn.Module):
    def __init__(self, dim, theta):
        super().__init__()
        inv_freq = 1.0 / theta ** (torch.arange(0, dim, 2, dtype=torch.int64).float() / dim)
        self.register_buffer("inv_freq", inv_freq, persistent=False)

    def forward(self, seqlen: int):
        seq = torch.arange(seqlen, device=self.inv_freq.device, dtype=self.inv_freq.dtype)
        return torch.outer(seq, self.inv_freq)


CASES = [dict(T=1), dict(T=16), dict(T=300)]
KBOT = dict(scalar_inputs=["seqlen"])


def get_init_inputs():
    return [64, 10000.0]


def get_inputs(T=1):
    seqlen = T
    return [seqlen]
"""

KERNEL = """
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _copy(src, dst, n, BLOCK: tl.constexpr):
    i = tl.arange(0, BLOCK)
    tl.store(dst + i, tl.load(src + i, mask=i < n), mask=i < n)


class ModelNew(nn.Module):
    def forward(self, x{annotation}):
        y = x * 2.0
        out = torch.empty_like(y)
        _copy[(1,)](y, out, y.numel(), BLOCK=16)
        return out
"""


def _problem(tmp_path, text, name="rotary_table"):
    path = tmp_path / f"{name}.py"
    path.write_text(text.lstrip())
    return load_problem(path)


@pytest.mark.parametrize("annotation", [": float", ": int", ": bool"])
def test_a_number_annotation_on_forward_does_not_make_a_tensor_a_number(annotation):
    # Torch arithmetic on the input, a token kernel launch: a cheat that passed the static
    # checks while annotations were trusted.
    reasons = check_source(KERNEL.format(annotation=annotation), ProblemOptions())
    assert any(r.rule == "torch-compute-in-forward" for r in reasons), reasons


def test_a_declared_number_allows_python_arithmetic_on_that_place_only():
    source = KERNEL.format(annotation="")
    declared = ProblemOptions(scalar_inputs=("x",), scalar_positions=(0,))
    assert not check_source(source, declared)
    two = source.replace("def forward(self, x)", "def forward(self, n, x)")
    assert not check_source(two.replace("x * 2.0", "n * 2.0 + x.shape[0]"), declared)
    flagged = check_source(two, declared)  # `x` is in place 1, declared a tensor
    assert any(r.rule == "torch-compute-in-forward" for r in flagged), flagged


def test_scalar_inputs_name_forward_parameters(tmp_path):
    spec = _problem(tmp_path, ROTARY_TABLE)
    assert spec.options.scalar_positions == (0,)
    with pytest.raises(ProblemError, match="not parameters of Model.forward"):
        _problem(tmp_path, ROTARY_TABLE.replace('["seqlen"]', '["seq_len"]'), "typo")
    with pytest.raises(ProblemError, match="list of argument names"):
        _problem(tmp_path, ROTARY_TABLE.replace('["seqlen"]', "[0]"), "index")


def test_codegen_reads_a_declared_count_at_call_time_and_the_judge_accepts_it(tmp_path):
    spec = _problem(tmp_path, ROTARY_TABLE)
    candidates = generate(spec, limit=2)
    assert candidates
    for candidate in candidates:
        assert "torch.empty((seqlen," in candidate.source  # not the traced 300
    with Evaluator(EvalOptions(device="cpu")) as evaluator:
        for candidate in candidates:
            verdict = evaluator.evaluate(spec, candidate.source)
            assert verdict.accepted, (candidate.note, [str(r) for r in verdict.reasons])


def test_a_declared_number_that_is_a_tensor_is_a_problem_error(tmp_path):
    text = ROTARY_TABLE.replace("seqlen = T\n", "seqlen = torch.tensor(T)\n")
    spec = _problem(tmp_path, text, "tensor_count")
    source = generate(_problem(tmp_path, ROTARY_TABLE), limit=1)[0].source
    with Evaluator(EvalOptions(device="cpu")) as evaluator:
        verdict = evaluator.evaluate(spec, source)
    assert not verdict.accepted
    assert any("declares a number" in r.message for r in verdict.reasons), verdict.reasons
