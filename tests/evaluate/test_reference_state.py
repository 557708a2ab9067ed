"""The judge's reference values (kbot.evaluate.reference_state): a parameter a fresh Model holds
at one constant value is redrawn around it before ModelNew loads it."""

from __future__ import annotations

import torch

from kbot.evaluate.reference_state import SPREAD, signs_keep_finite, vary_constant_parameters


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


def test_a_signed_draw_flips_some_signs_of_parameters_of_several_elements():
    model = _Norms()
    vary_constant_parameters(model, seed=3, signed=True)
    weight = model.weight.detach()
    assert 0 < int((weight < 0).sum()) < 32  # some, not most: trained norm weights
    assert ((weight.abs() - 1).abs() <= SPREAD + 1e-6).all()
    assert (model.offset < 0).any() and (model.offset.abs() <= SPREAD).all()
    assert 0 < model.eps.item()  # one element (an epsilon, a temperature) keeps its sign


class _Rooted(torch.nn.Module):
    """Takes the root of its weight: a negative value would make the output NaN."""

    def __init__(self) -> None:
        super().__init__()
        self.scale = torch.nn.Parameter(torch.ones(16))

    def forward(self, x):
        return x * self.scale.sqrt()


class _Scaled(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.weight = torch.nn.Parameter(torch.ones(16))

    def forward(self, x):
        return x * self.weight


def test_signs_are_flipped_only_where_the_reference_stays_finite():
    def inputs():
        return [torch.randn(4, 16)]

    assert signs_keep_finite(_Scaled, 1, inputs)
    assert not signs_keep_finite(_Rooted, 1, inputs)

    # a reference infinite anywhere already (a mask of -inf) is judged against itself
    class _Masked(_Scaled):
        def forward(self, x):
            return torch.where(x > 0, x * self.weight, float("-inf"))

    assert signs_keep_finite(_Masked, 1, inputs)
