"""Index and arithmetic ops serving code writes around its kernels, written fresh: `F.pad`
(a head dim padded to a power of two, a negative pad that crops), `torch.roll` (which traces to
an index modulo the size), `fmod` and `remainder` of floats and integers of either sign, and a
clamp whose bounds are tensors (per-row limits)."""

from __future__ import annotations

import pytest

from kbot.evaluate import EvalOptions, Evaluator
from kbot.problem import load_problem
from kbot.propose.codegen import generate

HEAD = """
import torch
import torch.nn as nn
import torch.nn.functional as F

"""

PROBLEMS = {
    "pad_head_dim": """
class Model(nn.Module):
    def forward(self, x):
        return F.pad(x, (0, 32), value=-1.5) * 2.0, F.pad(x, (-8, 4, 1, 0))


CASES = [dict(T=1), dict(T=5)]


def get_inputs(T):
    return [torch.randn(T, 4, 96)]
""",
    "roll_shift": """
class Model(nn.Module):
    def forward(self, x):
        return torch.roll(x, shifts=3, dims=-1) - x


CASES = [dict(T=1), dict(T=5)]


def get_inputs(T):
    return [torch.randn(T, 100)]
""",
    "modulo_signs": """
class Model(nn.Module):
    def forward(self, x, ids):
        return (
            torch.fmod(x, 0.75),
            torch.remainder(x, 0.75),
            torch.fmod(ids, 7),
            torch.remainder(ids, 7),
        )


CASES = [dict(T=1), dict(T=5)]


def get_inputs(T):
    return [torch.randn(T, 64) * 3, torch.randint(-50, 50, (T, 64))]
""",
    "clamp_per_row": """
class Model(nn.Module):
    def forward(self, x, lo, hi):
        return torch.clamp(x, min=lo.unsqueeze(1), max=hi.unsqueeze(1))


CASES = [dict(T=1), dict(T=5)]


def get_inputs(T):
    return [torch.randn(T, 128), -torch.rand(T), torch.rand(T)]
""",
}


@pytest.fixture(scope="module")
def evaluator():
    with Evaluator(EvalOptions(device="cpu")) as ev:
        yield ev


@pytest.mark.parametrize("name", sorted(PROBLEMS))
def test_candidates_are_accepted(name, tmp_path, evaluator):
    path = tmp_path / f"{name}.py"
    path.write_text(HEAD + PROBLEMS[name] + "\n\ndef get_init_inputs():\n    return []\n")
    spec = load_problem(path)
    for candidate in generate(spec)[:2]:
        verdict = evaluator.evaluate(spec, candidate.source)
        assert verdict.accepted, (candidate.note, [str(r) for r in verdict.reasons])
