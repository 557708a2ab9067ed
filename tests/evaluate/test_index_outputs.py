"""Indices torch leaves unordered among ties (kbot.evaluate.index_outputs): a candidate's top-k,
sort or argmax indices may pick other tied positions, never other values or a position twice."""

import torch

from kbot.evaluate.compare import compare_outputs
from kbot.evaluate.index_outputs import IndexSources


def _reference(fn, x):
    sources = IndexSources()
    with torch.no_grad(), sources:
        outputs = fn(x)
    outputs = outputs if isinstance(outputs, tuple) else (outputs,)
    return outputs, sources.for_outputs(outputs)


def _judge(outputs, references, sources):
    return compare_outputs(outputs, references, None, None, index_sources=sources).failure


X = torch.tensor([[1.0, 5.0, 3.0, 5.0, 0.5], [2.0, 2.0, 2.0, 1.0, 0.0]])


def test_topk_ties_may_come_in_another_order():
    (values, indices), sources = _reference(lambda x: tuple(torch.topk(x, 2, dim=-1)), X)
    assert set(sources) == {1}
    swapped = torch.tensor([[3, 1], [2, 0]])  # the tied fives, two of the tied twos
    assert _judge((values, swapped), (values, indices), sources) is None


def test_other_values_or_a_repeated_position_are_a_mismatch():
    (values, indices), sources = _reference(lambda x: tuple(torch.topk(x, 2, dim=-1)), X)
    wrong = torch.tensor([[1, 2], [0, 1]])  # 3.0 is not the second largest
    assert _judge((values, wrong), (values, indices), sources).rule == "mismatch"
    twice = torch.tensor([[1, 1], [0, 1]])
    assert _judge((values, twice), (values, indices), sources).rule == "mismatch"
    outside = torch.tensor([[1, 9], [0, 1]])
    assert _judge((values, outside), (values, indices), sources).rule == "mismatch"


def test_cast_indices_are_followed_and_first_of_tied_ops_stay_exact():
    (values, indices), sources = _reference(
        lambda x: (lambda v, i: (v, i.to(torch.int32)))(*torch.topk(x, 2, dim=-1)), X
    )
    assert set(sources) == {1}
    swapped = torch.tensor([[3, 1], [2, 0]], dtype=torch.int32)
    assert _judge((values, swapped), (values, indices), sources) is None
    # argmax documents the first of the tied; a stable sort keeps the input's order
    (index,), sources = _reference(lambda x: torch.argmax(x, dim=-1), X)
    assert sources == {}
    (values, order), sources = _reference(lambda x: tuple(torch.sort(x, dim=-1, stable=True)), X)
    assert sources == {}


def test_indices_the_mode_did_not_see_are_compared_exactly():
    (values, indices), sources = _reference(
        lambda x: (lambda v, i: (v, i + 0))(*torch.topk(x, 2)), X
    )
    assert sources == {}
    swapped = torch.tensor([[3, 1], [2, 0]])
    assert _judge((values, swapped), (values, indices), sources).rule == "mismatch"
