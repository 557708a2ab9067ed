"""The judge's reference values (kbot.evaluate.reference_state): a parameter a fresh Model holds
at one constant value is redrawn around it before ModelNew loads it."""

from __future__ import annotations

import torch

from kbot.evaluate.reference_state import SPREAD, vary_constant_parameters


class _Norms(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.weight = torch.nn.Parameter(torch.ones(64))  # LLaMA's RMSNorm
        self.offset = torch.nn.Parameter(torch.zeros(64))  # Gemma's (1 + w)
        self.eps = torch.nn.Parameter(torch.tensor(1e-6))  # a learned epsilon, one element
        self.negative = torch.nn.Parameter(torch.full((8,), -2.0, dtype=torch.float16))
        self.proj = torch.nn.Linear(16, 16)  # random already
        self.steps = torch.nn.Parameter(torch.ones(4, dtype=torch.int64), requires_grad=False)
        self.register_buffer("table", torch.ones(4))  # buffers: tables the op builds, kept


def test_constant_parameters_are_redrawn_around_their_value():
    model = _Norms()
    before = {name: value.clone() for name, value in model.state_dict().items()}
    changed = vary_constant_parameters(model, seed=3)
    assert sorted(changed) == ["eps", "negative", "offset", "weight"]
    weight = model.weight.detach()
    assert weight.unique().numel() > 32  # distinct values: a kernel must read them
    assert ((weight - 1).abs() <= SPREAD + 1e-6).all()
    assert (model.offset > 0).all() and (model.offset <= SPREAD).all()
    assert 0 < model.eps.item() <= 1e-6 * (1 + SPREAD)  # a positive epsilon stays positive
    assert model.negative.dtype == torch.float16 and (model.negative < 0).all()
    for name in ("proj.weight", "proj.bias", "steps", "table"):
        assert torch.equal(model.state_dict()[name], before[name]), name


def test_the_draw_follows_the_seed():
    one, two, other = _Norms(), _Norms(), _Norms()
    vary_constant_parameters(one, seed=5)
    vary_constant_parameters(two, seed=5)
    vary_constant_parameters(other, seed=6)
    assert torch.equal(one.weight, two.weight)
    assert not torch.equal(one.weight, other.weight)
