"""A reference that computes coarser than its dtype's tolerance (an fp32 convolution that PyTorch
runs in TF32 by default: about 1e-3 of the terms' size) meets fp32's 1e-4 per element with no
kernel but one that repeats its algorithm. Against the reference run in float64, a kernel may be
off by twice the reference's own largest error there; where the reference as written is within
the tolerance, nothing is loosened, and a kernel further off than the reference still fails."""

from __future__ import annotations

import torch
from torch import nn

from kbot.evaluate.correctness import PreciseReference, judge_outputs


def _tf32(x: torch.Tensor, rounding: bool) -> torch.Tensor:
    """x with 10 mantissa bits, as a TF32 tensor core reads it (truncated, or rounded)."""
    bits = x.float().view(torch.int32)
    if rounding:
        bits = bits + (1 << 12)
    return (bits & ~((1 << 13) - 1)).view(torch.float32)


class _Linear(nn.Module):
    def __init__(self, coarse: bool) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.randn(96, 256, generator=torch.Generator().manual_seed(1)))
        self.coarse = coarse

    def forward(self, x):
        if self.coarse and x.dtype == torch.float32:  # the float64 run is exact, as cuDNN's is
            return _tf32(x, False) @ _tf32(self.weight, False).t()
        return x @ self.weight.t()


def _judge(reference: nn.Module, outputs: torch.Tensor, x: torch.Tensor):
    with torch.no_grad():
        expected = (reference(x),)
    result, _ = judge_outputs(
        (outputs,), expected, [x], PreciseReference(reference), None, None, False, None
    )
    return result.failure


def _inputs() -> torch.Tensor:
    return torch.randn(64, 256, generator=torch.Generator().manual_seed(0))


def test_a_kernel_with_its_own_tf32_rounding_passes_a_tf32_reference():
    reference, x = _Linear(coarse=True), _inputs()
    with torch.no_grad():
        own = _tf32(x, True) @ _tf32(reference.weight, True).t()  # rounds where it truncates
        exact = x @ reference.weight.t()
    assert (own - reference(x)).abs().max() > 1e-3  # not the reference's rounding
    assert _judge(reference, own, x) is None
    assert _judge(reference, exact, x) is None  # the IEEE result, too


def test_a_kernel_further_off_than_the_reference_fails():
    reference, x = _Linear(coarse=True), _inputs()
    with torch.no_grad():
        exact = x.double() @ reference.weight.double().t()
        worst = float((reference(x).double() - exact).abs().max())
        off = exact.clone()
        off[0, 0] += 4 * worst  # one element past twice the reference's own worst error
    failure = _judge(reference, off.float(), x)
    assert failure is not None and failure.rule == "mismatch"
    # Both judgements are in the reason: the float64 one names the allowance it used.
    against_written, _, against_float64 = failure.message.partition(
        "; against the reference one precision up: "
    )
    assert "relative error norm" in against_written
    assert "1 of 6144 elements outside" in against_float64


def test_an_exact_reference_keeps_fp32_tolerance():
    reference, x = _Linear(coarse=False), _inputs()
    with torch.no_grad():
        tf32 = _tf32(x, True) @ _tf32(reference.weight, True).t()
    failure = _judge(reference, tf32, x)
    assert failure is not None and failure.rule == "mismatch"
