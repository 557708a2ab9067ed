"""fp8 (e4m3fn) inputs in the judge: torch has no arithmetic for them on the CPU, so the input
distributions scale and add outliers in fp32 and saturate back into e4m3's range, and an input
the candidate wrote into is found bit for bit (there is no nan_to_num for fp8)."""

from __future__ import annotations

import torch

from kbot.evaluate.correctness import _mutated
from kbot.problem.runtime import DISTRIBUTIONS, apply_distribution

FP8 = torch.float8_e4m3fn


def _fp8(seed: int = 0) -> torch.Tensor:
    torch.manual_seed(seed)
    return (torch.randn(6, 64) * 50).clamp(-448, 448).to(FP8)


def test_every_distribution_keeps_an_fp8_input_fp8_and_finite():
    for distribution in DISTRIBUTIONS:
        x = _fp8()
        before = x.float().clone()
        (after,) = apply_distribution([x], distribution, seed=3)
        assert after is x and x.dtype == FP8
        values = x.float()
        assert torch.isfinite(values).all() and values.abs().max() <= 448
        if distribution == "small":
            assert values.abs().max() < before.abs().max()
        if distribution in ("large", "outliers"):
            assert not torch.equal(values, before)


def test_a_write_into_an_fp8_input_is_found():
    pristine = _fp8()
    untouched, touched = pristine.clone(), pristine.clone()
    touched.view(torch.uint8)[2, 5] ^= 1  # one bit of one element
    assert _mutated([untouched], [pristine]) is None
    assert _mutated([touched], [pristine]) == 0
