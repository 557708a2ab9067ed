"""kbot.evaluate.tail_canaries: on a GPU the buffers forward allocates and the inputs the judge
hands over sit before a random pattern, checked after each call, so an unmasked tail store
(which a GPU lets land in allocator slack nobody compares) is refused. The class is the same on
any device; these tests drive it on the CPU, writing past a buffer through its storage as such
a kernel does."""

from __future__ import annotations

import torch

from kbot.evaluate.compute_guard import ComputeGuard, guarding
from kbot.evaluate.tail_canaries import PAD, Canaries

CPU = torch.device("cpu")


def _write_past(tensor: torch.Tensor, elements: int, value: float = 1.0) -> None:
    """What an unmasked tail store does: `elements` values right after the last element the
    tensor's view reaches."""
    reach = 1 + sum((n - 1) * s for n, s in zip(tensor.shape, tensor.stride()))
    end = tensor.storage_offset() + reach
    past = torch.empty(0, dtype=tensor.dtype)
    past.set_(tensor.untyped_storage(), end, (elements,), (1,)).fill_(value)


def _allocate(canaries: Canaries, make):
    with guarding(ComputeGuard(frozenset(), canaries=canaries)):
        return make()


def test_an_allocation_is_padded_and_starts_as_new_garbage():
    canaries = Canaries(CPU)
    y = _allocate(canaries, lambda: torch.empty(256))
    again = _allocate(canaries, lambda: torch.empty(256))
    assert y.untyped_storage().nbytes() == 1024 + PAD
    assert not torch.equal(y.view(torch.int32), again.view(torch.int32))  # drawn anew
    assert canaries.check((y, again)) is None


def test_a_write_past_an_allocation_is_found():
    canaries = Canaries(CPU)
    y = _allocate(canaries, lambda: torch.empty_like(torch.ones(3, 5)))
    _write_past(y, 24)
    message = canaries.check((y,))
    assert message is not None and "past the end of a (3, 5) float32 buffer" in message


def test_values_of_constant_allocations_are_kept():
    canaries = Canaries(CPU)
    z, r, f = _allocate(
        canaries,
        lambda: (torch.zeros(4), torch.arange(6), torch.full((2, 3), 7.0)),
    )
    assert z.tolist() == [0.0] * 4 and r.tolist() == list(range(6))
    assert f.tolist() == [[7.0] * 3] * 2
    assert all(t.untyped_storage().nbytes() > PAD for t in (z, r, f))
    assert canaries.check((z, r, f)) is None


def test_a_returned_view_is_checked_after_its_buffer_object_is_dropped():
    canaries = Canaries(CPU)

    def make():
        buffer = torch.empty(8)
        return buffer.view(2, 4)  # `buffer` itself dies here

    out = _allocate(canaries, make)
    _write_past(out, 1)
    assert canaries.check((out,)) is not None


def test_inputs_are_watched_and_kept_across_calls():
    canaries = Canaries(CPU)
    x = torch.randn(6, 4)[:, 1:3]  # a strided view with an offset
    moved = canaries.input(x)
    assert torch.equal(moved, x) and moved.stride() == x.stride()
    assert moved.storage_offset() == x.storage_offset()
    y = _allocate(canaries, lambda: torch.empty(3))
    canaries.forget_allocations()
    _write_past(y, 2)  # no longer watched: freed buffers may be reused
    assert canaries.check() is None
    _write_past(moved, 3)
    assert canaries.check() is not None  # the input stays watched


def test_fill_and_in_place_ops_are_not_moved():
    canaries = Canaries(CPU)
    x = torch.ones(5)
    with guarding(ComputeGuard(frozenset(), canaries=canaries)):
        x.zero_()
    assert x.untyped_storage().nbytes() == 20 and canaries.check() is None


def test_a_shifted_input_sits_off_alignment_before_its_pattern():
    """The judge's shifted trials (kbot.evaluate.input_places) on a GPU: the copy starts `shift`
    bytes into its padded buffer and the pattern still follows its last element."""
    canaries = Canaries(CPU)
    x = torch.randn(3, 5)
    moved = canaries.input(x, 48)
    base = moved.untyped_storage().data_ptr()
    assert moved.data_ptr() - base == 48 and torch.equal(moved, x)
    assert moved.untyped_storage().nbytes() == 48 + x.numel() * 4 + PAD
    assert canaries.check((moved,)) is None
    _write_past(moved, 1)
    message = canaries.check((moved,))
    assert message is not None and "past the end of a (3, 5) float32 buffer" in message
