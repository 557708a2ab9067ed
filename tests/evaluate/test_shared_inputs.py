"""Trials passing one tensor as two arguments (kbot.evaluate.shared_inputs): which trials, and
which two inputs."""

from __future__ import annotations

import torch

from kbot.evaluate.shared_inputs import shared_pair, shared_trials


def test_one_trial_shares_where_the_op_writes_no_input():
    for _ in range(20):
        assert sum(shared_trials(5, False)) == 1
    assert shared_trials(5, True) == [False] * 5  # an in-place op's result depends on aliasing
    assert shared_trials(1, False) == [False]  # a single trial keeps the plain call


def test_two_floating_inputs_of_one_layout_and_sign_domain_pair():
    x, residual = torch.randn(3, 8), torch.randn(3, 8)
    assert shared_pair([x, residual]) == (1, 0)
    positions = torch.arange(3)
    assert shared_pair([positions, x, residual]) == (2, 1)  # integers never take part
    assert shared_pair([x, torch.randn(3, 9)]) is None  # another shape
    assert shared_pair([x, torch.randn(3, 8, dtype=torch.bfloat16)]) is None
    assert shared_pair([x, torch.randn(8, 3).t()]) is None  # another layout
    variance = torch.rand(3, 8) + 0.1  # drawn positive: never given signed values
    assert shared_pair([x, variance]) is None
    assert shared_pair([variance, torch.rand(3, 8)]) == (1, 0)
    assert shared_pair([x, 2.0]) is None
