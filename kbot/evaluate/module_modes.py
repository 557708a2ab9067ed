"""Train and eval mode in the correctness trials.

nn.Module starts in train mode, and serving code often never calls `.eval()` (its ops have no
dropout or batch statistics, so nothing changes). The judge calls ModelNew in eval mode; a
forward that reads `self.training` could answer right there and wrong in the caller's train
mode (round nine's c09, accepted with the static rules off). Where the reference computes the
same in both modes, some trials therefore call ModelNew in train mode (the candidate's process
switches it back to eval before anything is compared); where the reference's own result
depends on the mode (dropout, batch or instance statistics, or code of its own that reads
`training`), every trial stays in eval mode.
"""

from __future__ import annotations

import inspect
import secrets
import weakref

import torch

# torch's modules whose result depends on the mode.
_MODE_DEPENDENT = (
    torch.nn.modules.dropout._DropoutNd,
    torch.nn.modules.batchnorm._NormBase,  # batch and instance norms: batch statistics
    torch.nn.RReLU,
    torch.nn.MultiheadAttention,
    torch.nn.TransformerEncoderLayer,
    torch.nn.TransformerDecoderLayer,
)


def same_in_both_modes(reference: torch.nn.Module) -> bool:
    """Whether the reference's result cannot depend on train or eval mode: none of its
    modules is one of torch's mode-dependent ones, and no class of its own mentions
    `training` (read from its source; a class whose source cannot be read counts as
    depending on it). Read once per reference."""
    known = _SAME.get(reference)
    if known is None:
        known = _SAME[reference] = _same_in_both_modes(reference)
    return known


_SAME: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _same_in_both_modes(reference: torch.nn.Module) -> bool:
    for module in reference.modules():
        if isinstance(module, _MODE_DEPENDENT):
            return False
        kind = type(module)
        if kind.__module__.split(".")[0] == "torch":
            continue
        try:
            source = inspect.getsource(kind)
        except (OSError, TypeError):
            return False
        if "training" in source:
            return False
    return True


def train_trials(trials: int, both_modes: bool) -> list[bool]:
    """Which trials call ModelNew in train mode: none where the reference depends on the mode
    or there is one trial; else about half, at least one of each, in an order drawn from the
    OS."""
    if not both_modes or trials < 2:
        return [False] * trials
    return _alternating(trials)


def frozen_trials(trials: int, has_parameters: bool) -> list[bool]:
    """Which trials call ModelNew with its parameters frozen (kbot.evaluate.call_modes.frozen):
    none where it has no parameter; else about half, at least one of each where there are two
    trials or more, in an order drawn from the OS apart from the train-mode trials'."""
    if not has_parameters:
        return [False] * trials
    return _alternating(trials)


def _alternating(trials: int) -> list[bool]:
    """Every other trial, starting from a side drawn from the OS."""
    first = secrets.randbelow(2) == 1
    return [(trial % 2 == 0) == first for trial in range(trials)]
