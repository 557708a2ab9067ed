"""What a call's outputs may share (kbot.evaluate.aliasing): nothing the reference's outputs do
not share themselves."""

from __future__ import annotations

import torch

from kbot.evaluate.aliasing import (
    Allowed,
    output_on_state,
    overlapping_outputs,
    reference_allows,
    state_tensors,
)


def test_overlapping_outputs_but_not_a_workspace_split_side_by_side():
    y = torch.randn(4, 8)
    assert overlapping_outputs((y, y[-1])) == (0, 1)
    assert overlapping_outputs((y, y)) == (0, 1)
    workspace = torch.empty(64)
    assert overlapping_outputs((workspace[:32], workspace[32:])) is None
    assert overlapping_outputs((torch.randn(3), torch.randn(3), torch.empty(0), 1.0)) is None


class _Table(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("cos", torch.randn(16, 8))
        self.scale = torch.nn.Parameter(torch.ones(8))
        self.extra = [torch.zeros(2)]

    def forward(self, t):
        return self.cos[:t]


def test_an_output_on_the_module_state_is_named():
    model = _Table()
    assert output_on_state((model.cos[:4],), state_tensors(model, None)) == (0, "cos")
    assert output_on_state((model.extra[0][1:],), state_tensors(model, None)) == (0, "extra[0]")
    assert output_on_state((model.cos[:4].clone(),), state_tensors(model, None)) is None


def test_the_reference_decides_what_is_allowed():
    model = _Table()
    x = torch.randn(4)
    assert reference_allows((model(4),), [x], model, False) == Allowed(state=True)
    assert reference_allows((x.view(2, 2),), [x], model, False) == Allowed(inputs=True)
    y = torch.randn(3)
    assert reference_allows((y, y[1:]), [x], model, False) == Allowed(outputs=True)
    assert reference_allows((y,), [x], model, True) == Allowed(True, True, True)
    assert reference_allows((y.clone(),), [x], model, False) == Allowed()
