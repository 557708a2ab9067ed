"""A dynamic-NTK rotary table, written fresh: the longest position (`torch.max` over an int64
tensor) scales the rotary base, which is raised to the head's exponents (`base ** exponents`,
a tensor to a tensor power). Integer max/min run in int64 (exact past 2**24), `pow` of two
tensors follows torch's signs and special cases, and powers are taken in fp64 so a rotary
angle keeps its low bits."""

from __future__ import annotations

import pytest
import torch

from kbot.evaluate import EvalOptions, Evaluator
from kbot.problem import load_problem
from kbot.propose.codegen import generate

HEAD = """
import torch
import torch.nn as nn

"""

DYNAMIC_NTK = (
    HEAD
    + """
class Model(nn.Module):
    def __init__(self, dim, base, max_pos, scaling):
        super().__init__()
        self.dim, self.base, self.max_pos, self.scaling = dim, base, max_pos, scaling
        inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2).float() / dim))
        self.register_buffer("inv_freq", inv_freq, persistent=False)

    def forward(self, positions):
        seq_len = torch.max(positions) + 1
        grown = (self.scaling * seq_len / self.max_pos) - (self.scaling - 1)
        base = self.base * grown ** (self.dim / (self.dim - 2))
        exponents = torch.arange(0, self.dim, 2, device=positions.device).float() / self.dim
        ntk = 1.0 / (base ** exponents)
        inv_freq = torch.where(seq_len > self.max_pos, ntk, self.inv_freq)
        freqs = positions.float()[:, None] * inv_freq[None, :]
        return freqs.cos(), freqs.sin()


CASES = [dict(T=1), dict(T=6)]


def get_inputs(T):
    return [torch.randint(0, 512, (T,))]


def get_init_inputs():
    return [64, 10000.0, 256, 2.0]
"""
)

LARGE_IDS = (
    HEAD
    + """
class Model(nn.Module):
    def forward(self, ids):
        return torch.max(ids) - ids, ids - torch.min(ids)


CASES = [dict(T=3), dict(T=40)]


def get_inputs(T):
    return [torch.randint(-(1 << 40), 1 << 40, (T,))]


def get_init_inputs():
    return []
"""
)

POWERS = (
    HEAD
    + """
class Model(nn.Module):
    def forward(self, x, y):
        return x ** 5 + x ** 4 - x.abs() ** 1.5 + torch.pow(x, y.round())


CASES = [dict(T=1), dict(T=6)]


def get_inputs(T):
    return [torch.randn(T, 96), torch.randn(T, 96) * 3]


def get_init_inputs():
    return []
"""
)


@pytest.fixture(scope="module")
def evaluator():
    with Evaluator(EvalOptions(device="cpu")) as ev:
        yield ev


@pytest.mark.parametrize(
    "name, text",
    [("dynamic_ntk", DYNAMIC_NTK), ("large_ids", LARGE_IDS), ("powers", POWERS)],
)
def test_candidates_are_accepted(name, text, tmp_path, evaluator):
    path = tmp_path / f"{name}.py"
    path.write_text(text)
    spec = load_problem(path)
    candidates = generate(spec)
    for candidate in candidates[:2]:
        verdict = evaluator.evaluate(spec, candidate.source)
        assert verdict.accepted, (candidate.note, [str(r) for r in verdict.reasons])
    source = candidates[0].source
    if name == "large_ids":
        assert "tl.int64" in source and "-9223372036854775807 - 1" in source
    if name == "powers":
        assert "_pow_tensor(" in source and "tl.float64" in source


SIGNED_POW = (
    HEAD
    + """
class Model(nn.Module):
    def forward(self, x, y):
        return torch.pow(x, y)


CASES = [dict(T=2)]


def get_inputs(T):
    return [torch.randn(T, 12), torch.randn(T, 12).round()]


def get_init_inputs():
    return []
"""
)


def test_a_tensor_power_keeps_the_sign_of_negative_zero(tmp_path, load_candidate):
    # h * mask gives -0.0, and the judge draws it: -0.0 ** -3 is -inf, -0.0 ** 3 is -0.0,
    # -0.0 ** 2 and -0.0 ** -0.5 are +0.0 and +inf, as torch has them.
    path = tmp_path / "signed_pow.py"
    path.write_text(SIGNED_POW)
    x = torch.tensor([[-0.0, -0.0, -0.0, -0.0, 0.0, 0.0, -2.0, -2.0, 2.0, -0.0, 0.0, -0.0]])
    y = torch.tensor([[-3.0, 3.0, 2.0, -2.0, -3.0, 3.0, 3.0, 0.5, -1.0, 0.5, -0.5, 0.0]])
    expected = torch.pow(x, y)
    for candidate in generate(load_problem(path))[:2]:
        got = load_candidate(candidate.source).ModelNew()(x, y)
        torch.testing.assert_close(got, expected, equal_nan=True)
        numbers = ~expected.isnan()  # a NaN's sign is no part of the answer
        assert torch.equal(torch.signbit(got[numbers]), torch.signbit(expected[numbers]))
