"""Where the judge's inputs sit in the candidate's process (kbot.evaluate.input_places): the
case's own buffers, refilled each call, or a copy of that call only, off the allocator's
alignment by a shift the judge draws (input_shifts, same module)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from kbot.evaluate.audit import Policy
from kbot.evaluate.host_session import Session
from kbot.evaluate.input_places import InputPlaces, PlacementError, checked_shift, input_shifts

CPU = torch.device("cpu")


def _places() -> InputPlaces:
    return InputPlaces(CPU, torch.Generator().manual_seed(0))


def test_shifts_mix_both_kinds_and_stay_16_byte_aligned():
    for trials in (2, 3, 5):
        for _ in range(50):
            shifts = input_shifts(trials)
            assert len(shifts) == trials
            assert 0 in shifts and any(shifts), shifts
            assert all(s == 0 or (s % 32 == 16 and s < 512) for s in shifts), shifts
    assert input_shifts(1) == [0] and input_shifts(0) == []
    # the shift itself is drawn: a kernel cannot learn one address and wait for it
    assert len({s for _ in range(200) for s in input_shifts(5)}) > 8


@pytest.mark.parametrize("bad", [8, 32, 48 + 512, -16, 16.0, True, "16"])
def test_a_shift_the_judge_never_sends_is_refused(bad):
    with pytest.raises(PlacementError):
        checked_shift(bad)
    assert checked_shift(0) == 0 and checked_shift(496) == 496


def test_aligned_calls_refill_the_same_buffers():
    places = _places()
    first = [torch.randn(4, 8), 3]
    buffers, canaries = places.place(0, first, 0)
    assert canaries is None  # no canaries on a CPU
    pointer = buffers[0].data_ptr()
    second = [torch.randn(4, 8), 5]
    again, _ = places.place(0, second, 0)
    assert again is buffers and again[0].data_ptr() == pointer
    assert torch.equal(again[0], second[0]) and again[1] == 5
    assert places.buffers(0) is buffers and places.buffers(1) is None


@pytest.mark.parametrize(
    "value",
    [
        torch.randn(4, 8),
        torch.randn(8, 4).t(),  # strided
        torch.randn(5, 8)[1:],  # a view at a storage offset
        torch.randint(0, 9, (7,), dtype=torch.int64),
        torch.randn(3, 5).to(torch.bfloat16),
        torch.rand(6) > 0.5,
    ],
)
def test_a_shifted_call_gets_a_copy_off_alignment(value):
    places = _places()
    aligned, _ = places.place(0, [value], 0)
    shifted, _ = places.place(0, [value], 48)
    moved = shifted[0]
    assert moved.data_ptr() % 32 == 16
    assert moved.data_ptr() != aligned[0].data_ptr()
    assert moved.shape == value.shape and moved.stride() == value.stride()
    assert moved.dtype == value.dtype and torch.equal(moved, value)
    assert places.buffers(0) is aligned  # the case's own buffers are untouched


def test_a_session_refuses_a_shift_it_is_never_sent(tmp_path: Path):
    session = Session(CPU, tmp_path, Policy((), (), (), frozenset()))
    session.model = torch.nn.Identity()
    reply = session.handle({"op": "call", "case": 0, "inputs": [], "shift": 24})
    assert reply["ok"] is False and reply["rule"] == "protocol"
    assert "24 bytes" in reply["message"]
