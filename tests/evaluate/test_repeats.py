"""kbot.evaluate.repeats: the input-independence check's memory of the previous trial holds
small outputs whole and large ones at positions drawn each trial, and rejects a repeat either
way (a candidate answering the previous trial's output while the reference's changed)."""

from __future__ import annotations

import torch

from kbot.evaluate import repeats
from kbot.evaluate.repeats import PreviousTrial


def _big(monkeypatch):
    # the sampled path at test sizes: held whole up to 1 KiB, 64 positions a tensor
    monkeypatch.setattr(repeats, "WHOLE_BYTES", 1 << 10)
    monkeypatch.setattr(repeats, "SAMPLED", 64)


def test_a_repeat_is_seen_whole():
    out, ref = torch.randn(8, 8), torch.randn(8, 8)
    previous = PreviousTrial((out,), (ref,))
    assert previous.repeated_by((out.clone(),), (ref + 1,))
    assert not previous.repeated_by((out + 1,), (ref + 1,))
    assert not previous.repeated_by((out.clone(),), (ref.clone(),))  # the reference repeated too


def test_a_repeat_is_seen_in_the_sample(monkeypatch):
    _big(monkeypatch)
    out, ref = torch.randn(64, 96), torch.randn(64, 96)
    previous = PreviousTrial((out, 3), (ref, 3))
    assert previous._picks is not None  # held as a sample, not whole
    assert previous.repeated_by((out.clone(), 3), (ref + 1, 3))
    assert not previous.repeated_by((out + 1, 3), (ref + 1, 3))
    assert not previous.repeated_by((out.clone(), 3), (ref.clone(), 3))


def test_the_sample_reads_strided_outputs_in_place(monkeypatch):
    _big(monkeypatch)
    out = torch.randn(96, 64).t()  # not contiguous
    ref = torch.randn(64, 96)
    previous = PreviousTrial((out,), (ref,))
    assert previous.repeated_by((out.contiguous(),), (ref * 2,))
    assert not previous.repeated_by((out.contiguous().double().float() + 0.5,), (ref * 2,))


def test_a_changed_shape_or_dtype_is_no_repeat(monkeypatch):
    _big(monkeypatch)
    out, ref = torch.randn(64, 96), torch.randn(64, 96)
    previous = PreviousTrial((out,), (ref,))
    assert not previous.repeated_by((out.double(),), (ref + 1,))
    assert not previous.repeated_by((out.reshape(96, 64),), (ref.reshape(96, 64) + 1,))
