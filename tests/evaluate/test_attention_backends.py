"""A fused attention reference has more than one correct implementation in PyTorch itself: on a
GPU the efficient-attention kernel the reference runs, and the math backend (two matmuls and a
softmax) that an extern bmm + softmax + bmm candidate computes. Where the math path is coarser
than the kernel the reference ran (KernelBench L1/97 on the H100: 0.0044 from float64 at the
reference's worst element, 0.0099 at the math-path candidate's), its error is the op's noise
too, and a candidate that matches it is accepted; one further off still fails, and a reference
without attention gets no such allowance."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.attention import SDPBackend, sdpa_kernel

from kbot.evaluate.correctness import PreciseReference, judge_outputs


def _coarse(x: torch.Tensor) -> torch.Tensor:
    """x with 10 mantissa bits: a stand-in for a path that rounds more than the fused kernel."""
    return (x.float().view(torch.int32) & ~((1 << 13) - 1)).view(torch.float32)


class _Attention(nn.Module):
    """Emulates on the CPU what the GPU shows: the fused kernel (the default) is exact enough,
    the math backend (forced by the judge through `sdpa_kernel`) is coarser."""

    def forward(self, q, k, v):
        if q.dtype == torch.float32 and not torch.backends.cuda.flash_sdp_enabled():
            return F.scaled_dot_product_attention(_coarse(q), _coarse(k), v)
        return F.scaled_dot_product_attention(q, k, v)


class _NoAttention(nn.Module):
    def forward(self, q, k, v):
        return torch.softmax(q @ k.transpose(-1, -2), dim=-1) @ v


def _inputs():
    g = torch.Generator().manual_seed(0)
    return [torch.randn(1, 2, 64, 32, generator=g) for _ in range(3)]


def _judge(reference: nn.Module, outputs: torch.Tensor, inputs: list):
    with torch.no_grad():
        expected = (reference(*inputs),)
    result, _ = judge_outputs(
        (outputs,), expected, inputs, PreciseReference(reference), None, None, False, None
    )
    return result.failure


def _math_path(inputs: list) -> torch.Tensor:
    q, k, v = inputs
    return F.scaled_dot_product_attention(_coarse(q), _coarse(k), v)


def test_a_candidate_as_accurate_as_the_math_backend_passes(monkeypatch):
    inputs = _inputs()
    candidate = _math_path(inputs)
    assert _judge(_Attention(), candidate, inputs) is None
    # ... and only because of the math backend's allowance
    monkeypatch.setattr(PreciseReference, "backend_outputs", lambda self, inputs: None)
    failure = _judge(_Attention(), candidate, inputs)
    assert failure is not None and failure.rule == "mismatch"


def test_a_candidate_further_off_than_the_math_backend_fails():
    inputs = _inputs()
    q, k, v = (x.double() for x in inputs)
    exact = F.scaled_dot_product_attention(q, k, v)
    worst = float((_math_path(inputs).double() - exact).abs().max())
    off = exact.clone()
    off[0, 0, 0, 0] += 8 * worst
    failure = _judge(_Attention(), off.float(), inputs)
    assert failure is not None and failure.rule == "mismatch"
    assert "1 of 4096 elements outside" in failure.message


def test_the_math_backend_is_asked_only_of_references_that_call_attention():
    inputs = _inputs()
    assert PreciseReference(_NoAttention()).backend_outputs(inputs) is None
    (math,) = PreciseReference(_Attention()).backend_outputs(inputs)
    with sdpa_kernel(SDPBackend.MATH):
        assert torch.equal(math, _math_path(inputs))
    assert torch.backends.cuda.flash_sdp_enabled()  # the backends are as they were
