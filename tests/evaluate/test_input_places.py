"""Where the judge's inputs sit in the candidate's process (kbot.evaluate.input_places): the
case's own buffers, refilled each call, or a copy of that call only, off the allocator's
alignment by a shift the judge draws (input_shifts, same module)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from kbot.evaluate.audit import Policy
from kbot.evaluate.host_session import Session
from kbot.evaluate.input_places import (
    COARSER,
    InputPlaces,
    PlacementError,
    checked_shift,
    coarser_per_case,
    far_offset,
    input_shifts,
)

CPU = torch.device("cpu")


def _places() -> InputPlaces:
    return InputPlaces(CPU, torch.Generator().manual_seed(0))


def _valuation(shift: int) -> int:
    return (shift & -shift).bit_length() - 1


def test_shifts_mix_both_kinds_and_cover_several_alignments():
    for trials in (2, 3, 5, 8):
        for _ in range(50):
            shifts = input_shifts(trials)
            assert len(shifts) == trials
            moved = [s for s in shifts if s]
            # two aligned trials where there are three or more (a pointer cache meets refills),
            # more where the five alignments below 512 bytes are all drawn
            assert shifts.count(0) == (1 if trials == 2 else max(2, trials - 5)), shifts
            assert all(s % 16 == 0 and 0 < s < 512 for s in moved), shifts
            # one at 16 bytes and no coarser, the others each at another power of two
            assert any(s % 32 == 16 for s in moved), shifts
            assert len({_valuation(s) for s in moved}) == len(moved), shifts
    assert input_shifts(1) == [0] and input_shifts(0) == []
    # the shifts and their order are drawn: a kernel cannot learn one address and wait for it
    assert len({s for _ in range(200) for s in input_shifts(5)}) > 8
    assert len({tuple(s > 0 for s in input_shifts(5)) for _ in range(200)}) > 3
    # over many draws every alignment below the allocator's appears
    assert {_valuation(s) for _ in range(200) for s in input_shifts(5) if s} == {4, 5, 6, 7, 8}


@pytest.mark.parametrize("bad", [8, 24, 512, 48 + 512, -16, 16.0, True, "16"])
def test_a_shift_the_judge_never_sends_is_refused(bad):
    with pytest.raises(PlacementError):
        checked_shift(bad)
    assert checked_shift(0) == 0 and checked_shift(496) == 496 and checked_shift(256) == 256


def test_aligned_calls_refill_the_same_buffers():
    places = _places()
    first = [torch.randn(4, 8), 3]
    buffers, canaries = places.place(0, first, 0)
    # on a CPU: no pattern past the case's own buffers, only the empties' garbage
    assert canaries.tails is False and canaries.check() is None
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


def test_shifted_inputs_also_sit_far_into_their_storage_keeping_the_low_bits():
    # red-team round twelve: a kernel wrong once its input starts 512 bytes or more into its
    # storage (`x[1:]` of wide rows) met only offsets below 512
    draws = [far_offset() for _ in range(400)]
    assert 120 < draws.count(0) < 280
    assert {d for d in draws if d} <= {512 << k for k in range(12)}
    assert len({d for d in draws if d}) >= 8
    places, value = _places(), torch.randn(6, 4)
    offsets = set()
    for _ in range(40):
        (moved,), _ = places.place(0, [value], 48)
        assert moved.data_ptr() % 32 == 16  # the shift's low bits kept
        assert torch.equal(moved, value)
        offsets.add(moved.storage_offset() * 4)
    assert min(offsets) == 48 and max(offsets) >= 48 + 512 * 8


def test_a_session_refuses_a_shift_it_is_never_sent(tmp_path: Path):
    session = Session(CPU, tmp_path, Policy((), (), (), frozenset()))
    session.model = torch.nn.Identity()
    reply = session.handle({"op": "call", "case": 0, "inputs": [], "shift": 24})
    assert reply["ok"] is False and reply["rule"] == "protocol"
    assert "24 bytes" in reply["message"]


def test_the_cases_share_out_every_coarser_alignment():
    for _ in range(50):
        parts = coarser_per_case(2, 5)
        met = {power for part in parts for power in part[:2]}  # two coarser shifts a case
        assert met == set(COARSER), parts
        shifts = [input_shifts(5, part) for part in parts]
        valuations = {_valuation(s) for case in shifts for s in case if s}
        assert valuations == {4, 5, 6, 7, 8}, shifts
    assert coarser_per_case(3, 1)[2] and coarser_per_case(0, 5) == []


def test_on_a_cpu_an_empty_starts_as_garbage_and_other_allocations_keep_their_values():
    _, canaries = _places().place(0, [torch.randn(4, 8)], 0)
    empty = torch.zeros(4096)  # zeros, as fresh pages often are: an empty must not stay so
    assert canaries.allocated(empty, values=False) is empty
    assert (empty != 0).float().mean() > 0.9
    assert (empty.abs() < 1e-5).float().mean() < 0.35  # three odd bytes in four have bit 6 set
    zeros = torch.zeros(16)
    assert torch.equal(canaries.allocated(zeros, values=True), torch.zeros(16))


def test_a_write_before_a_shifted_input_is_found_on_a_cpu():
    places = _places()
    (moved,), canaries = places.place(0, [torch.randn(4, 8)], 48)
    start = moved.storage_offset() * moved.element_size()  # 48, or 48 plus a far offset
    assert start % 512 == 48 and canaries.check() is None
    head = torch.empty(0, dtype=torch.uint8).set_(moved.untyped_storage(), 0, (start,), (1,))
    head[start - 4 :] ^= 0xFF  # the element just before the view: the caller's memory
    assert "before the start" in canaries.check()
