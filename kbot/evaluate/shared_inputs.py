"""Trials that pass one tensor as two of forward's arguments, the way a caller may
(`silu_and_mul`'s gate and up from one buffer, `x * x` through a binary op's two inputs): a
kernel with another path where two inputs are one (`a.data_ptr() == b.data_ptr()`, allowed as
an identity test by kbot.evaluate.address_rules) ran only its path for distinct inputs, and
passed with a wrong one (red-team round fourteen's c04).

Only an op that writes none of its inputs gets such a trial (an in-place op's result depends
on which of its inputs alias), and only two floating-point inputs of one shape, dtype and
layout whose values share a sign domain (both with negative values, or both without): an input
drawn positive only (a variance, a scale) keeps its domain when it takes the other's values.
"""

from __future__ import annotations

import secrets

import torch


def shared_trials(trials: int, op_writes_inputs: bool) -> list[bool]:
    """Which trials pass one tensor twice: one, drawn from the OS, where there are two trials
    or more and the op writes none of its inputs."""
    chosen = secrets.randbelow(trials) if trials >= 2 and not op_writes_inputs else -1
    return [trial == chosen for trial in range(trials)]


def shared_pair(inputs: list) -> tuple[int, int] | None:
    """(j, i), j > i: forward's argument j may be passed as argument i; None where no two
    inputs qualify."""
    tensors = [
        (index, value)
        for index, value in enumerate(inputs)
        if isinstance(value, torch.Tensor) and value.is_floating_point() and value.numel() > 0
    ]
    for later, (j, b) in enumerate(tensors):
        for i, a in tensors[:later]:
            if (a.shape, a.dtype, a.stride(), a.device) != (b.shape, b.dtype, b.stride(), b.device):
                continue
            if bool((a < 0).any()) == bool((b < 0).any()):
                return j, i
    return None
