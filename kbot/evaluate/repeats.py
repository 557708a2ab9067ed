"""The previous trial, as the input-independence check remembers it: an output bit-identical to
the previous trial's while the reference's output changed was not computed from the inputs.

Outputs of up to WHOLE_BYTES in all are held whole. Larger ones are held at SAMPLED positions
per output, drawn from the OS each trial: KernelBench's 36_RMSNorm_ returns 7 GiB, and its
output and reference held whole are 14 GiB of an 80 GB card beside the next trial's copies and
the judge's other processes. A sample can miss a difference but never invent one: where the
whole tensors show no repeat, the sample shows none either, so no honest candidate is rejected
by it; a candidate that repeats its previous answer at every sampled position of a multi-GB
output while the reference's changed there is rejected as the whole check would reject it.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass

import torch

WHOLE_BYTES = 1 << 30
SAMPLED = 1 << 20


@dataclass(frozen=True)
class _Sample:
    """One large tensor at the trial's positions, with its shape and dtype."""

    shape: tuple[int, ...]
    dtype: torch.dtype
    values: torch.Tensor


class PreviousTrial:
    """`outputs` and `references` of one trial (of equal length and shapes: the trial compared
    them), whole or at a sample of positions."""

    def __init__(self, outputs: tuple, references: tuple) -> None:
        held = sum(_nbytes(v) for v in (*outputs, *references))
        self._picks = [_picks(v) for v in outputs] if held > WHOLE_BYTES else None
        self._shapes = [tuple(v.shape) if isinstance(v, torch.Tensor) else () for v in outputs]
        self._outputs = self._held(outputs)
        self._references = self._held(references)

    def repeated_by(self, outputs: tuple, references: tuple) -> bool:
        """`outputs` equal the previous trial's bit for bit while `references` differ from
        theirs: the candidate's answer did not follow the inputs."""
        return _same(self._held(outputs), self._outputs) and not _same(
            self._held(references), self._references
        )

    def _held(self, values: tuple) -> tuple:
        if self._picks is None:
            return tuple(v.detach() if isinstance(v, torch.Tensor) else v for v in values)
        if len(values) != len(self._picks):
            return tuple(values)  # another count of outputs: unequal to the held ones anyway
        return tuple(_at(*held) for held in zip(values, self._picks, self._shapes))


def _nbytes(value: object) -> int:
    return value.numel() * value.element_size() if isinstance(value, torch.Tensor) else 0


def _picks(value: object) -> tuple[torch.Tensor, ...] | None:
    """SAMPLED positions of a tensor with more elements, as one index tensor per dim (read in
    place, whatever the strides: no copy of a multi-GB output)."""
    if not isinstance(value, torch.Tensor) or value.numel() <= SAMPLED:
        return None
    rng = torch.Generator(device=value.device)
    rng.manual_seed(secrets.randbits(62))
    flat = torch.randint(0, value.numel(), (SAMPLED,), generator=rng, device=value.device)
    return torch.unravel_index(flat, value.shape)


def _at(value: object, picks: tuple[torch.Tensor, ...] | None, shape: tuple) -> object:
    """`value` as held: whole where it was not sampled; else at the sampled positions of a
    tensor of `shape` (a tensor of another shape is unequal by its shape alone)."""
    if not isinstance(value, torch.Tensor):
        return value
    if picks is None:
        return value.detach()
    if tuple(value.shape) != shape:
        return _Sample(tuple(value.shape), value.dtype, value.new_empty(0))
    return _Sample(shape, value.dtype, value.detach()[picks])


def _same(a: tuple, b: tuple) -> bool:
    if len(a) != len(b):
        return False
    for x, y in zip(a, b):
        if isinstance(x, torch.Tensor) and isinstance(y, torch.Tensor):
            if x.shape != y.shape or x.dtype != y.dtype or not torch.equal(x, y):
                return False
        elif isinstance(x, _Sample) and isinstance(y, _Sample):
            if (x.shape, x.dtype) != (y.shape, y.dtype) or not torch.equal(x.values, y.values):
                return False
        elif x != y:
            return False
    return True
