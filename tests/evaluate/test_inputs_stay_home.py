"""Inputs a candidate's process left byte-for-byte unchanged do not cross back to the judge
(a 6 GB KernelBench input crossed back on every trial); the judge then uses what it sent, and
a reply that misreports which inputs stayed is the candidate's protocol failure."""

import pytest
import torch

from kbot.evaluate.correctness import CandidateCrashed
from kbot.evaluate.host_session import _snapshot, _unchanged
from kbot.evaluate.jobs import _inputs_after


def test_only_inputs_with_the_same_layout_and_bytes_count_as_unchanged():
    kept = torch.tensor([1.0, float("nan"), -0.0])
    written = torch.zeros(3)
    resized = torch.zeros(4)
    restrided = torch.arange(6.0).reshape(2, 3)
    buffers = [kept, written, resized, restrided, 7]
    before = _snapshot(buffers)
    written[1] = 2.0
    resized.resize_(2)  # same bytes where it still reaches, another shape
    restrided.as_strided_((3, 2), (1, 3))  # the same storage read another way
    same = [i for i, v in enumerate(buffers) if _unchanged(v, before[i])]
    assert same == [0]  # NaN and -0.0 compared as bytes; a plain value always goes back


def test_a_value_that_changes_only_its_sign_of_zero_is_sent_back():
    x = torch.zeros(2)
    before = _snapshot([x])
    x.neg_()
    assert not _unchanged(x, before[0])


def test_the_judge_fills_in_its_own_inputs_for_those_reported_unchanged():
    sent = [torch.ones(2), torch.zeros(2), 3]
    back = torch.full((2,), 5.0)
    after = _inputs_after(sent, {"inputs_after": [None, back, 3], "inputs_unchanged": [0]})
    assert after[0] is sent[0] and after[1] is back and after[2] == 3


@pytest.mark.parametrize(
    "reply",
    [
        {"inputs_after": [None, None], "inputs_unchanged": [0]},  # a hole not claimed
        {"inputs_after": [None], "inputs_unchanged": [0]},  # fewer inputs than sent
        {"inputs_after": [None, None], "inputs_unchanged": [0, 0, 1]},  # claimed twice
        {"inputs_after": [None, None], "inputs_unchanged": [0, 2]},  # out of range
        {"inputs_after": [torch.ones(1), None], "inputs_unchanged": [0, 1]},  # a value claimed
        {"inputs_after": [None, None], "inputs_unchanged": [True, 1]},  # not an index
        {"inputs_after": [None, None], "inputs_unchanged": "01"},
    ],
)
def test_a_reply_that_misreports_the_unchanged_inputs_is_a_protocol_failure(reply):
    with pytest.raises(CandidateCrashed) as raised:
        _inputs_after([torch.ones(1), torch.ones(1)], reply)
    assert raised.value.reason.rule == "protocol"
