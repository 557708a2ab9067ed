"""Problems whose Model subclasses the user's op (what `kbot scan` emits in import mode): the
candidate cannot import the op, so its constructor is rebuilt from Model's state."""

from __future__ import annotations

import pytest

from kbot.problem import load_problem
from kbot.propose.base import ProposeContext
from kbot.propose.codegen.proposer import CodegenProposer

SUBCLASSED = """
import torch
from torch import nn


class _UserNorm(nn.Module):
    def __init__(self, hidden_size, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(hidden_size))
        self.register_buffer("scale", torch.full((hidden_size,), 0.5), persistent=False)
        self.variance_epsilon = eps

    def forward_native(self, x):
        xf = x.float()
        xf = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.variance_epsilon)
        return (xf * self.weight * self.scale).to(x.dtype)


class _Base(_UserNorm):
    pass


class Model(_Base):
    def __init__(self, hidden_size, eps):
        super().__init__(hidden_size, eps)

    def forward(self, x):
        return _UserNorm.forward_native(self, x)


CASES = [dict(T=3), dict(T=5)]


def get_inputs(T=3):
    return [torch.randn(T, 48)]


def get_init_inputs():
    return [48, 1e-5]
"""


@pytest.fixture(scope="module")
def evaluator():
    from kbot.evaluate import EvalOptions, Evaluator

    with Evaluator(EvalOptions(device="cpu", timeout_s=120.0)) as shared:
        yield shared


def test_subclassed_model_gets_a_rebuilt_constructor_and_is_accepted(tmp_path, evaluator):
    path = tmp_path / "user_norm.py"
    path.write_text(SUBCLASSED)
    spec = load_problem(path)
    outcome = CodegenProposer().propose(
        ProposeContext(problem=spec, parents=(), device="cpu", seed=0)
    )
    assert outcome.proposals, outcome.skipped_reason
    source = outcome.proposals[0].source
    imports = [line for line in source.splitlines() if line.startswith(("import ", "from "))]
    assert all(line.split()[1].split(".")[0] in ("torch", "triton") for line in imports), imports
    assert "_UserNorm(" not in source and "_Base" not in source
    assert (
        "register_buffer('scale', torch.empty((48,), dtype=torch.float32), persistent=False)"
        in source
    )
    assert "self.variance_epsilon = 1e-05" in source
    verdict = evaluator.evaluate(spec, source)
    assert verdict.accepted, [str(r) for r in verdict.reasons]


EXPLICIT_DEVICE = """
import torch
from torch import nn


class Model(nn.Module):
    def forward(self, x):
        return x * torch.sigmoid(x)


CASES = [dict(T=2), dict(T=5)]


def get_inputs(T=2):
    return [torch.randn(T, 64, device="cpu")]  # a GPU problem says device="cuda" here


def get_init_inputs():
    return []
"""


def test_inputs_with_an_explicit_device_are_traced_on_meta(tmp_path):
    path = tmp_path / "explicit_device.py"
    path.write_text(EXPLICIT_DEVICE)
    outcome = CodegenProposer().propose(
        ProposeContext(problem=load_problem(path), parents=(), device="cpu", seed=0)
    )
    assert outcome.proposals, outcome.skipped_reason
