"""The judge's check that a candidate left its inputs as they were, in pieces for large inputs
(kbot.evaluate.correctness._mutated): the same verdicts whole or chunked."""

from __future__ import annotations

import pytest
import torch

from kbot.evaluate import correctness
from kbot.evaluate.correctness import _mutated


@pytest.fixture(params=[False, True], ids=["whole", "chunked"])
def chunked(request, monkeypatch):
    if request.param:
        monkeypatch.setattr(correctness, "MUTATION_CHUNK", 64)
    return request.param


def test_a_write_in_the_last_piece_is_found(chunked):
    before = torch.randn(1000)
    after = before.clone()
    assert _mutated([after], [before]) is None
    after[-1] += 1
    assert _mutated([after], [before]) == 0


def test_nan_must_stay_where_it_was_and_signed_zeros_are_alike(chunked):
    before = torch.randn(4, 250)
    before[3, 7] = float("nan")
    before[0, 0] = 0.0
    after = before.clone()
    after[0, 0] = -0.0
    assert _mutated([after], [before]) is None
    after[3, 7] = 1.0
    assert _mutated([after], [before]) == 0
    after = before.clone()
    after[2, 200] = float("nan")
    assert _mutated([after], [before]) == 0


def test_integer_and_strided_inputs(chunked):
    ints = torch.arange(500)
    changed = ints.clone()
    changed[400] = -1
    assert _mutated([ints.clone(), changed], [ints, ints]) == 1
    strided = torch.randn(300, 4).t()  # not contiguous: compared whole
    moved = strided.clone()
    moved[3, 299] += 1
    assert _mutated([strided.clone()], [strided]) is None
    assert _mutated([moved], [strided]) == 0
