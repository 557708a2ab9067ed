"""Where the judge's inputs sit in a candidate's process, call by call.

Each case has one set of input buffers: its first aligned call allocates them, later ones
refill the same memory, so a candidate caching results by pointer answers the previous trial.
A fresh buffer's address is a multiple of the allocator's alignment (512 bytes on a GPU, 64 on
a CPU), and a user's tensor need not be: `x[1:]` of a contiguous tensor is contiguous and
starts one row further. Some trials therefore place the inputs `shift` bytes past such an
address (plus, in half of them, a far offset that keeps those low bits: far_offset), in
buffers of that call only; the judge picks which trials and the shift, a multiple of 16 below
512 (16 bytes is the alignment Triton and torch.compile's kernels
specialise on, and the published guard requires of every tensor: kbot.publish.guard), so a
kernel right only at higher alignments is caught, and one that branches on `data_ptr()` meets
several kinds of address (input_shifts).

A shifted input's dims of size 1 have strides no dense layout gives them (loose_strides).

On a GPU every input also sits before a watched pattern (kbot.evaluate.tail_canaries); on a GPU
and a CPU a shifted input sits after one, so a kernel writing before the view is caught.
"""

from __future__ import annotations

import secrets
from typing import Any

import torch

from kbot.evaluate import wire
from kbot.evaluate.address_rules import SHIFT_PERIOD  # the shifts: below one GPU granule
from kbot.evaluate.tail_canaries import Canaries

MIN_ALIGN = 16  # bytes: the alignment every input keeps, shifted or not
COARSER = (32, 64, 128, 256)  # the powers of two above MIN_ALIGN and below SHIFT_PERIOD
FAR_STEPS = 12  # far_offset: SHIFT_PERIOD times 1 to 2**11


class PlacementError(ValueError):
    """A request for a placement the judge never asks for."""


def checked_shift(value: Any) -> int:
    """The request's shift, when it is one the judge sends (0, or a multiple of 16 below
    512)."""
    if not isinstance(value, int) or isinstance(value, bool):
        raise PlacementError(f"an input shift must be an integer, not {value!r}")
    if value and (value % MIN_ALIGN or not 0 < value < SHIFT_PERIOD):
        raise PlacementError(f"an input shift of {value} bytes is not one the judge sends")
    return value


def input_shifts(trials: int, coarser: tuple[int, ...] | None = None) -> list[int]:
    """Bytes past an aligned address at which each trial's inputs sit (0: the case's own
    buffers), in an order drawn from the OS. Two trials or more: at least one shifted by an
    odd multiple of 16 (aligned to 16 bytes, never to 32), so a kernel right only at a higher
    alignment is always caught; three or more: two in the case's own buffers (a cache keyed
    by pointer meets refilled values) and the rest shifted (five at most), each by an odd
    multiple of another power of two, taken in turn from `coarser` (the judge passes each
    case a different part of one drawn order of COARSER, so that over the cases every
    alignment below the allocator's is met: a kernel wrong at one alignment only is caught).
    A lone trial stays aligned (the timed graph replays the case's own buffers)."""
    if trials < 2:
        return [0] * trials
    shifted = 1 if trials == 2 else min(trials - 2, 1 + len(COARSER))
    powers = [MIN_ALIGN, *(coarser if coarser is not None else drawn(COARSER))]
    shifts = [_odd_multiple(power) for power in powers[:shifted]]
    shifts += [0] * (trials - len(shifts))
    return drawn(shifts)


def coarser_per_case(cases: int, trials: int) -> list[tuple[int, ...]]:
    """For each case, the powers of two above 16 its shifted trials take (input_shifts):
    consecutive parts of one order drawn from the OS, so that two cases of five trials meet
    all four."""
    order = drawn(COARSER)
    slots = max(0, min(trials - 3, len(COARSER)))
    return [
        tuple(order[(case * slots + k) % len(order)] for k in range(len(COARSER)))
        for case in range(cases)
    ]


def far_offset() -> int:
    """Bytes a shifted input sits further in, keeping its shift's low bits: none in half the
    calls, else 512 bytes to 1 MiB (a power of two, drawn). A user's view starts that far into
    its storage (`x[1:]` of rows of 1024 fp32 values: 4096 bytes), and a kernel may not read
    its storage offset other than in an alignment test (kbot.evaluate.address_rules); a result
    that depends on it is met here even without that rule (red-team round twelve)."""
    if secrets.randbelow(2):
        return 0
    return SHIFT_PERIOD << secrets.randbelow(FAR_STEPS)


def _odd_multiple(power: int) -> int:
    """An odd multiple of `power` below SHIFT_PERIOD, drawn."""
    return power * (2 * secrets.randbelow(SHIFT_PERIOD // (2 * power)) + 1)


def drawn(values) -> list:
    """`values` in an order drawn from the OS."""
    values = list(values)
    secrets.SystemRandom().shuffle(values)
    return values


class InputPlaces:
    """The buffers forward is called on, per case, and the canaries watching them (GPU)."""

    def __init__(self, device: torch.device, rng: torch.Generator) -> None:
        self.device = device
        self.rng = rng
        self._buffers: dict[int, list] = {}
        self._canaries: dict[int, Canaries | None] = {}

    def place(self, case: int, fresh: list, shift: int) -> tuple[list, Canaries]:
        """The inputs for this call (refilled with `fresh`'s values) and the canaries that
        watch them and the call's allocations (on a CPU: the bytes before shifted inputs, and
        garbage in the call's empties)."""
        watched = self.device.type == "cuda"
        if shift:
            # On a CPU too: the bytes before a shifted input lie inside its storage, where the
            # interpreter's bounds check lets a kernel write (red-team round eleven's c04).
            canaries = Canaries(self.device, self.rng, tails=watched)
            shift += far_offset()
            return [_shifted(v, shift, canaries) for v in fresh], canaries
        buffers = self._buffers.get(case)
        if buffers is None:
            canaries = Canaries(self.device, self.rng) if watched else None
            self._canaries[case] = canaries
            place = canaries.input if canaries is not None else (lambda v: v)
            self._buffers[case] = buffers = [place(v) for v in fresh]
        else:
            refill(buffers, fresh)
        if not watched:  # a CPU: the case's own buffers unwatched, the call's empties garbage
            return buffers, Canaries(self.device, self.rng, tails=False)
        return buffers, self._canaries[case]

    def buffers(self, case: int) -> list | None:
        """The case's own buffers (aligned), once a call has made them."""
        return self._buffers.get(case)


def _shifted(value: object, shift: int, canaries: Canaries) -> object:
    """`value` copied `shift` bytes past the start of a new buffer, watched by `canaries` (which
    leaves an empty tensor or one with negative strides where it is), its size-1 dims given
    strides of their own (loose_strides)."""
    if not isinstance(value, torch.Tensor) or shift % value.element_size():
        return value
    return canaries.input(value, shift, loose_strides(value))


def loose_strides(value: torch.Tensor) -> tuple[int, ...]:
    """`value`'s strides with each size-1 dim but the last given three times its own stride
    (at least 3): torch calls such a tensor contiguous whatever that stride is, and a user's
    has others (`qkv[:, :H]` at T = 1 is contiguous with a row stride of 3H). A kernel that
    reads a size-1 dim's stride as a size (round thirteen's c15 took its row width from
    `x.stride(0)`) is wrong there. The last dim keeps its stride: `x.stride(-1) == 1` is a
    common and harmless assertion."""
    strides = list(value.stride())
    for dim, size in enumerate(value.shape[:-1]):
        if size == 1:
            strides[dim] = 3 * max(1, strides[dim])
    return tuple(strides)


def refill(buffers: list, fresh: list) -> None:
    """`fresh`'s values into `buffers` (same memory for tensors)."""
    if len(buffers) != len(fresh):
        raise PlacementError("a different number of inputs than the first call")
    for index, (buffer, value) in enumerate(zip(buffers, fresh)):
        if isinstance(buffer, torch.Tensor):
            wire.refill_into(buffer, value)
        elif buffer != value:
            buffers[index] = value
