"""Bytes past the end of a candidate's buffers, checked after each call on a GPU; and the bytes
before each input the judge placed off its buffer's start, on a GPU and a CPU alike.

A kernel with an unmasked tail (`tl.store(y_ptr + offs, v)` without `mask=offs < n`) writes up
to a block past its output. On a GPU those bytes land in the caching allocator's rounding slack
or in a neighbour's buffer that nobody compares, so the outputs are right and the judge
accepted it (round six's `control_unmasked_tail_store`, a GPU gap until this module); in a
user's process the neighbour is live data. The CPU interpreter refuses such an access outright
(interpreter_bounds.py).

In the correctness trials on a GPU, every buffer forward allocates (empty, zeros, full,
arange, ... and their `_like`/`new_` forms) is placed at the start of a larger one whose last
`PAD` bytes hold a random pattern, and so are the inputs the judge hands over; after the call
the pattern must be intact. A buffer forward freed before returning is not checked (its memory
may be reused legitimately); the outputs and the inputs always are. An allocation's own bytes
start as random bytes drawn anew each call (`garbage`), as the poisoned blocks they replace do
(host_session._poison): unwritten memory holds nothing a kernel can recognise (a fixed 0xFF
poison let a kernel tell the trials from a user's call, round eight's c07).
"""

from __future__ import annotations

import secrets
import weakref
from dataclasses import dataclass

import torch

from kbot.evaluate.wire import storage_span

PAD = 64 * 1024  # bytes watched past each buffer: a block of 16k fp32 elements


@dataclass(frozen=True)
class _Watched:
    """One padded buffer: where its pattern starts (bytes) and the tensor over it, held for an
    input, weakly for an allocation (a buffer forward frees may be reused legitimately)."""

    end: int
    held: torch.Tensor | weakref.ref
    allocated: bool
    front: int = 0  # bytes before the view (an input's shift): the pattern's start, watched too

    def tensor(self) -> torch.Tensor | None:
        return self.held() if self.allocated else self.held


class Canaries:
    """The buffers of one call (or one case's inputs) and the pattern past each."""

    def __init__(
        self, device: torch.device, rng: torch.Generator | None = None, tails: bool = True
    ) -> None:
        """`tails=False`: only the bytes before each input are watched, and allocations stay
        where they are, an empty's bytes made garbage in place (the CPU, whose interpreter
        refuses accesses past a storage, but not into the slack before a shifted input that
        lies inside its storage; and whose allocator handed a small `torch.empty` a block the
        poison had not reached, zeros, in 3 runs of 100 of round eight's reset_to_zero cheat)."""
        self.device = device
        self.tails = tails
        self.rng = rng or judge_generator(device)
        self._pattern: torch.Tensor | None = None
        self._watched: dict[int, _Watched] = {}  # by storage pointer

    def pattern(self) -> torch.Tensor:
        if self._pattern is None:
            self._pattern = torch.empty(PAD, dtype=torch.uint8, device=self.device)
            garbage(self._pattern, self.rng)
        return self._pattern

    def allocated(self, result: torch.Tensor, values: bool) -> torch.Tensor:
        """`result` (a fresh allocation) moved to the start of a padded buffer; its values
        copied when `values` (zeros, full, arange), else random bytes (empty)."""
        if result.numel() == 0 or result.storage_offset() != 0:
            return result
        nbytes = result.untyped_storage().nbytes()
        if not self.tails:  # in place: an empty's bytes are garbage all the same
            if not values:
                garbage(_bytes(result.untyped_storage(), 0, nbytes), self.rng)
            return result
        moved = self._padded(result, nbytes, 0, result.stride())
        if values:
            moved.copy_(result)
        else:
            garbage(_bytes(moved.untyped_storage(), 0, nbytes), self.rng)
        self._watch(_Watched(nbytes, weakref.ref(moved), allocated=True), moved)
        return moved

    def input(self, value: object, shift: int = 0, strides: tuple | None = None) -> object:
        """An input tensor copied into a padded buffer, `shift` bytes (a multiple of its
        element size) further from the buffer's start than its own storage offset (kept alive
        by the caller, watched for as long as this object is), with `strides` (None: its
        own; any given differ from its own only in dims of size 1)."""
        if not isinstance(value, torch.Tensor) or value.numel() == 0:
            return value
        if any(s < 0 for s in value.stride()):
            return value
        reach, offset = storage_span(value)
        offset += shift // value.element_size()
        end = (offset + reach) * value.element_size()
        moved = self._padded(value, end, offset, strides or value.stride())
        moved.copy_(value)
        front = offset * value.element_size()
        self._watch(_Watched(end, moved, allocated=False, front=front), moved)
        return moved

    def check(self, outputs: tuple = ()) -> str | None:
        """None if every watched pattern is intact, else what was written past which buffer."""
        alive: dict[int, tuple[int, torch.Tensor]] = {}
        for pointer, watched in self._watched.items():
            tensor = watched.tensor()
            if tensor is not None:
                alive[pointer] = (watched.end, tensor)
        for value in outputs:  # a view of a buffer forward made, its first object dropped
            if isinstance(value, torch.Tensor) and value.numel() > 0:
                pointer = value.untyped_storage().data_ptr()
                if pointer in self._watched and pointer not in alive:
                    alive[pointer] = (self._watched[pointer].end, value)
        for pointer, (end, tensor) in alive.items():
            what = f"{tuple(tensor.shape)} {str(tensor.dtype).replace('torch.', '')} buffer"
            front = self._watched[pointer].front
            if front:
                head = _bytes(tensor.untyped_storage(), 0, front)
                changed = int((head != self._front_pattern(front)).sum())
                if changed:
                    return (
                        f"{changed} bytes written within {front} bytes before the start of a "
                        f"{what} (the caller's memory before a view): a kernel wrote outside "
                        "the tensors it was given"
                    )
            if not self.tails:
                continue
            tail = _bytes(tensor.untyped_storage(), end, PAD)
            changed = int((tail != self.pattern()).sum())
            if changed:
                return (
                    f"{changed} bytes written within {PAD} bytes past the end of a {what} "
                    "(an unmasked tail store?): a kernel wrote outside the tensors it was given"
                )
        return None

    def forget_allocations(self) -> None:
        """Drops the call's allocations, keeps the inputs."""
        self._watched = {p: w for p, w in self._watched.items() if not w.allocated}

    def _watch(self, watched: _Watched, moved: torch.Tensor) -> None:
        self._watched[moved.untyped_storage().data_ptr()] = watched

    def _front_pattern(self, count: int) -> torch.Tensor:
        """The pattern before a view: the tail's, repeated to `count` bytes."""
        return self.pattern().repeat(-(-count // PAD))[:count]

    def _padded(self, like: torch.Tensor, end: int, offset: int, strides: tuple) -> torch.Tensor:
        base = torch.empty(end + (PAD if self.tails else 0), dtype=torch.uint8, device=like.device)
        if self.tails:
            base[end:].copy_(self.pattern())
        front = offset * like.element_size()
        if front:
            base[:front].copy_(self._front_pattern(front))
        moved = torch.empty(0, dtype=like.dtype, device=like.device)
        moved.set_(base.untyped_storage(), offset, like.size(), strides)
        return moved


def judge_generator(device: torch.device) -> torch.Generator:
    """A generator of the judge's own, seeded from the OS: the candidate's RNG is untouched and
    says nothing about it."""
    rng = torch.Generator(device=device)
    rng.manual_seed(secrets.randbits(62))
    return rng


_GARBAGE_CHUNK = 64 << 20  # bytes biased at a time: a multi-GB poison block needs no twin


def garbage(flat_bytes: torch.Tensor, rng: torch.Generator) -> torch.Tensor:
    """Random bytes into a uint8 tensor, new at every call, three odd bytes in four with bit 6
    set. Read as floats, plain random bytes are tiny about four times in ten (an exponent byte
    under 0x37: below 1e-5 in fp32), so a kernel that adds onto an output it never zeroed was
    right by chance in about 3 runs of 100 (round eight's reset_to_zero cheat); bit 6 of a
    little-endian float's high byte is its exponent's top bit in fp16, bf16, fp32 and fp64
    alike, so such elements are 2 or more in magnitude (or inf/NaN)."""
    flat_bytes.random_(0, 256, generator=rng)
    for start in range(0, flat_bytes.numel(), _GARBAGE_CHUNK):
        odd = flat_bytes[start : start + _GARBAGE_CHUNK][1::2]
        odd.bitwise_or_(odd.bitwise_and(1).bitwise_left_shift_(6))
    return flat_bytes


def _bytes(storage, start: int, count: int) -> torch.Tensor:
    view = torch.empty(0, dtype=torch.uint8, device=storage.device)
    return view.set_(storage, start, (count,), (1,))
