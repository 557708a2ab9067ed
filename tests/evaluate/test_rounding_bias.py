"""A 16-bit output within tolerance whose differences from the reference lie nearly all on one
side is a kernel that rounds one way (red-team round thirteen's c13: an fp32 -> bf16 cast by
dropping bits, every result an ulp toward zero half the time). Correct kernels that round
otherwise than the reference, or carry a small fp32 bias, differ on both sides or rarely."""

import pytest
import torch

from kbot.evaluate.compare import compare_outputs


def _truncated(x: torch.Tensor) -> torch.Tensor:
    bits = x.float().view(torch.int32) & ~0xFFFF  # drop the 16 low bits: toward zero
    return bits.view(torch.float32).to(torch.bfloat16)


def _rule(out, ref, truncating=False):
    result = compare_outputs((out,), (ref,), None, None, truncating_casts=truncating)
    return None if result.failure is None else result.failure.rule


def test_a_truncating_cast_is_a_rounding_bias():
    x = torch.randn(64, 256)
    reference = x.to(torch.bfloat16)
    assert _rule(_truncated(x), reference) == "rounding-bias"
    result = compare_outputs((_truncated(x),), (reference,), None, None)
    assert (
        "toward zero" in result.failure.message
        and "round to nearest even" in result.failure.message
    )


def test_a_bias_upward_is_one_too():
    x = torch.randn(64, 256)
    reference = x.to(torch.bfloat16)
    up = torch.nextafter(reference, torch.full_like(reference, float("inf")))
    biased = torch.where(torch.rand(x.shape) < 0.3, up, reference)
    assert _rule(biased, reference) == "rounding-bias"


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_rounding_once_where_the_reference_rounds_twice_is_no_bias(dtype):
    torch.manual_seed(0)
    x, w = torch.randn(64, 512), torch.randn(512).to(dtype)
    scale = torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6)
    twice = (x * scale).to(dtype) * w  # the eager reference: rounded, then multiplied in dtype
    once = (x * scale * w.float()).to(dtype)  # a fused kernel: one rounding
    assert int((twice != once).sum()) > 64
    assert _rule(once, twice) is None


def test_fused_multiply_add_residues_where_the_reference_cancels_are_no_bias():
    # A rotation's halves of a constant row, cos and sin one tensor (the judge's "outliers"
    # draw, on the H100): the reference rounds x1*c and x2*c alike and their difference is
    # exactly 0; a kernel whose multiply-add is fused keeps the product's rounding residue,
    # of either sign, in a few percent of the elements (litgpt's apply_rope, 2026-12-08).
    torch.manual_seed(0)
    x = torch.randn(64, 512) * 8
    reference = x.to(torch.bfloat16)
    cancel = torch.rand(x.shape) < 0.03
    reference[cancel] = 0
    residue = torch.where(torch.rand(x.shape) < 0.5, 1.0, -1.0) * 2.0**-7
    fused = torch.where(cancel, residue.to(torch.bfloat16), reference)
    assert int((fused != reference).sum()) > 0.01 * x.numel()
    assert _rule(fused, reference) is None
    truncated = torch.where(cancel, reference, _truncated(x))  # one-sided elsewhere: still one
    assert _rule(truncated, reference) == "rounding-bias"


def test_a_small_fp32_bias_before_rounding_flips_too_few_elements():
    x = torch.randn(256, 1024)
    reference = x.to(torch.bfloat16)
    biased = (x * (1 - 2.0**-22)).to(torch.bfloat16)  # an approximation a few fp32 ulps low
    assert 0 < int((biased != reference).sum()) < 0.01 * x.numel()
    assert _rule(biased, reference) is None


def test_float32_outputs_and_truncating_interpreters_are_not_judged_for_it():
    x = torch.randn(64, 256)
    assert _rule(_truncated(x), x.to(torch.bfloat16), truncating=True) is None
    low = x * (1 - 2.0**-20)  # fp32 outputs: their tolerance and norms judge them
    assert _rule(low, x) is None
