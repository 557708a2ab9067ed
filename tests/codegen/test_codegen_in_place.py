"""Serving code writes into its own upcast copies (`x = x.float(); x.mul_(...)`): codegen
lowers those writes as the out-of-place ops they equal, and the candidates are accepted; a
write into an input is still refused by name."""

from __future__ import annotations

import pytest
import torch

from kbot.evaluate import EvalOptions, Evaluator
from kbot.problem import load_problem
from kbot.propose.codegen import generate
from kbot.propose.codegen.trace import Unsupported, trace_problem

FUSED_ADD_RMSNORM = """
import torch
from torch import nn


class Model(nn.Module):
    def __init__(self, hidden_size, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(hidden_size))  # fp32 weight, bf16 activations
        self.eps = eps

    def forward(self, x, residual):
        in_dtype = x.dtype
        x = x.float().add_(residual.float())
        residual = x.to(in_dtype)
        x.mul_(torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + self.eps))
        return x.to(in_dtype).mul_(self.weight), residual


CASES = [dict(T=1), dict(T=7)]


def get_inputs(T):
    return [torch.randn(T, 96, dtype=torch.bfloat16), torch.randn(T, 96, dtype=torch.bfloat16)]


def get_init_inputs():
    return [96]
"""

WRITES_ITS_INPUT = """
import torch
from torch import nn


class Model(nn.Module):
    def forward(self, x):
        return x.mul_(2.0)


KBOT = dict(mutates_inputs=True)


def get_inputs():
    return [torch.randn(4, 8)]


def get_init_inputs():
    return []
"""


def _problem(tmp_path, name, text):
    path = tmp_path / f"{name}.py"
    path.write_text(text.lstrip())
    return load_problem(path)


def test_writes_into_temporaries_become_out_of_place_ops(tmp_path):
    traced = trace_problem(_problem(tmp_path, "fused_add", FUSED_ADD_RMSNORM))
    targets = [str(n.target) for n in traced.graph.nodes if n.op == "call_function"]
    assert not [t for t in targets if t.split(".")[-2].endswith("_") and "_to_copy" not in t]
    # bf16.mul_(fp32 weight) stays bf16: the out-of-place product is cast back.
    assert [o.meta["val"].dtype for o in traced.outputs] == [torch.bfloat16] * 2


def test_in_place_reference_candidates_are_accepted(tmp_path):
    spec = _problem(tmp_path, "fused_add", FUSED_ADD_RMSNORM)
    candidates = generate(spec, limit=2)
    with Evaluator(EvalOptions(device="cpu")) as evaluator:
        for candidate in candidates:
            verdict = evaluator.evaluate(spec, candidate.source)
            assert verdict.accepted, (candidate.note, [str(r) for r in verdict.reasons])


def test_a_write_into_an_input_is_still_refused(tmp_path):
    with pytest.raises(Unsupported, match="mul_"):
        generate(_problem(tmp_path, "writes_input", WRITES_ITS_INPUT))
