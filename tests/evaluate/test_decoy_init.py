"""The decoy ModelNew's constructor values (kbot.evaluate.decoy_init): every float doubled, given
or defaulted, so a module-level cache keyed without one of them shows (red-team round
fourteen's c06)."""

from __future__ import annotations

from kbot.evaluate.decoy_init import decoy_arguments


class _Rotary:
    def __init__(self, head_dim, max_positions, base=10000.0, *, scale=1.0, neox=True):
        pass


class _Sized:
    def __init__(self, hidden, eps=0.0, flag=False):
        pass


class _Variadic:
    def __init__(self, *args, base=500000.0):
        pass


def test_given_and_defaulted_floats_are_doubled_and_nothing_else():
    assert decoy_arguments(_Rotary, [64, 128]) == ([64, 128], {"base": 20000.0, "scale": 2.0})
    assert decoy_arguments(_Rotary, [64, 128, 1e6]) == ([64, 128, 2e6], {"scale": 2.0})
    assert decoy_arguments(_Variadic, [1, 2.5]) == ([1, 5.0], {"base": 1e6})


def test_no_decoy_without_a_float_to_change():
    assert decoy_arguments(_Sized, [4096]) is None  # a zero, a bool and an int stay
    assert decoy_arguments(_Sized, [4096, float("inf")]) is None
