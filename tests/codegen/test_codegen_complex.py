"""Rotary embeddings written with complex numbers (a complex64 `freqs_cis` buffer, queries
viewed as complex pairs): the complex values are carried as (real, imaginary) pairs, so the
usual pointwise and pairs schedules lower them, and the candidates are accepted by the
evaluator. Complex ops without a real form written here are refused with their name."""

from __future__ import annotations

import pytest

from kbot.evaluate import EvalOptions, Evaluator
from kbot.problem import load_problem
from kbot.propose.codegen import generate
from kbot.propose.codegen.trace import Unsupported, trace_problem

COMPLEX_ROPE = """
import torch
from torch import nn


class Model(nn.Module):
    def __init__(self, head_dim, max_len, theta):
        super().__init__()
        freqs = 1.0 / theta ** (torch.arange(0, head_dim, 2).float() / head_dim)
        angles = torch.outer(torch.arange(max_len).float(), freqs)
        cis = torch.polar(torch.ones_like(angles), angles)
        self.register_buffer("freqs_cis", cis, persistent=False)

    def forward(self, xq, xk, positions):
        cis = self.freqs_cis[positions].unsqueeze(1)
        q = torch.view_as_complex(xq.float().reshape(*xq.shape[:-1], -1, 2))
        k = torch.view_as_complex(xk.float().reshape(*xk.shape[:-1], -1, 2))
        q_out = torch.view_as_real(q * cis).flatten(-2)
        k_out = torch.view_as_real(k * cis).flatten(-2)
        return q_out.type_as(xq), k_out.type_as(xk)


CASES = [dict(T=1), dict(T=7)]


def get_init_inputs():
    return [64, 128, 10000.0]


def get_inputs(T=1):
    return [
        torch.randn(T, 4, 64, dtype=torch.bfloat16),
        torch.randn(T, 2, 64, dtype=torch.bfloat16),
        torch.randint(0, 128, (T,)),
    ]
"""

SCALED = COMPLEX_ROPE.replace("q * cis", "(q * cis) * 0.5 + q")


def _problem(tmp_path, name, text):
    path = tmp_path / f"{name}.py"
    path.write_text(text.lstrip())
    return load_problem(path)


def test_complex_values_become_pairs_and_the_candidates_are_accepted(tmp_path):
    spec = _problem(tmp_path, "rope_complex", COMPLEX_ROPE)
    traced = trace_problem(spec)
    dtypes = {
        str(n.meta["val"].dtype) for n in traced.graph.nodes if hasattr(n.meta.get("val"), "dtype")
    }
    assert not any("complex" in d for d in dtypes)
    candidates = generate(spec, limit=2)
    assert {c.note.split(":")[0] for c in candidates} == {"codegen pointwise"}
    with Evaluator(EvalOptions(device="cpu")) as evaluator:
        for candidate in candidates:
            assert "torch.view_as_real(self.freqs_cis)" in candidate.source
            verdict = evaluator.evaluate(spec, candidate.source)
            assert verdict.accepted, (candidate.note, [str(r) for r in verdict.reasons])


def _assert_first_candidate_accepted(tmp_path, name, text):
    spec = _problem(tmp_path, name, text)
    candidate = generate(spec, limit=1)[0]
    with Evaluator(EvalOptions(device="cpu")) as evaluator:
        verdict = evaluator.evaluate(spec, candidate.source)
    assert verdict.accepted, [str(r) for r in verdict.reasons]


def test_complex_sums_and_real_scales_are_written_as_pairs(tmp_path):
    _assert_first_candidate_accepted(tmp_path, "rope_scaled", SCALED)


@pytest.mark.parametrize(
    ("edit", "refused"),
    [
        (("q * cis", "torch.exp(q * cis)"), "aten.exp"),
        (("q_out.type_as(xq), k_out", "(q * cis), k_out"), "returns a complex tensor"),
    ],
)
def test_complex_ops_without_a_real_form_are_refused_by_name(tmp_path, edit, refused):
    spec = _problem(tmp_path, "rope_refused", COMPLEX_ROPE.replace(*edit))
    with pytest.raises(Unsupported, match=refused):
        trace_problem(spec)


# One tensor returned (not a tuple), the halves of each head paired by stacking chunks rather
# than by a reshape: the complex rewrite read the output's one value as a tuple and crashed.
HALVES_ROPE = """
import torch
from torch import nn


class Model(nn.Module):
    def forward(self, x, freqs_cis):
        pairs = torch.stack(torch.chunk(x.transpose(1, 2).float(), 2, dim=-1), dim=-1)
        out = torch.view_as_real(torch.view_as_complex(pairs) * freqs_cis).type_as(x)
        out = torch.cat(torch.chunk(out, 2, dim=-1), dim=-2)
        return out.reshape(out.shape[0], out.shape[1], out.shape[2], -1).transpose(1, 2)


CASES = [dict(T=1), dict(T=5)]


def get_init_inputs():
    return []


def get_inputs(T=1):
    angles = torch.rand(T, 16) * 6.28
    return [
        torch.randn(1, T, 4, 32, dtype=torch.bfloat16),
        torch.polar(torch.ones_like(angles), angles),
    ]
"""


def test_a_rotary_that_returns_one_tensor_of_stacked_halves(tmp_path):
    _assert_first_candidate_accepted(tmp_path, "rope_halves", HALVES_ROPE)
