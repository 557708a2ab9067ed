"""The one numeric judgement of a candidate's outputs (kbot.evaluate.correctness's trials and
kbot.evaluate.timing_job's recheck of the timed graph): against the reference as written, and
after a mismatch against the reference run one precision up, with the reference's own noise
allowed."""

from __future__ import annotations

import copy
from dataclasses import replace

import torch
from torch.overrides import TorchFunctionMode

from kbot.evaluate.compare import (
    Comparison,
    as_outputs,
    compare_outputs,
    deviations,
    error_norms,
    is_constant,
    max_errors,
)
from kbot.evaluate.index_outputs import IndexSource
from kbot.evaluate.verdict import Reason


def judge_outputs(
    outputs: tuple,
    references: tuple,
    inputs: list,
    precise: PreciseReference | None,
    atol: float | None,
    rtol: float | None,
    truncating: bool,
    rounded_to: torch.dtype | None,
    index_sources: dict[int, IndexSource] | None = None,
) -> tuple[Comparison, bool]:
    """The one numeric judgement of a candidate's outputs, for the correctness trials and the
    timed graph's check on fresh inputs alike: against the reference as written (with the
    tolerance of its coarsest rounding, `rounded_to`), and after a mismatch against the
    reference one precision up (`precise`; None where the op writes into its inputs), with the
    reference's own noise allowed. Returns the comparison that stands and whether it was the
    retry's."""
    result = compare_outputs(
        outputs, references, atol, rtol, truncating_casts=truncating, rounded_to=rounded_to,
        index_sources=index_sources,
    )  # fmt: skip
    exact = None
    constant_ok: frozenset[int] = frozenset()
    if (
        result.failure is not None
        and result.failure.rule == "near-constant"
        and precise is not None
    ):
        # A constant output is no objection where the correctly rounded answer is constant too
        # (a bf16 logsumexp of small inputs: the reference, rounding twice, varies by an ulp).
        exact = precise.outputs(inputs, references)
        constant_ok = frozenset(
            i
            for i, (out, truth) in enumerate(zip(outputs, exact or ()))
            if is_constant(out)
            and isinstance(truth, torch.Tensor)
            and is_constant(truth.to(out.dtype))
        )
        if constant_ok:
            result = compare_outputs(
                outputs, references, atol, rtol,
                truncating_casts=truncating, rounded_to=rounded_to, constant_ok=constant_ok,
                index_sources=index_sources,
            )  # fmt: skip
    retried = ("mismatch", "rounding-bias")  # a reference rounded twice may differ one way
    if result.failure is None or result.failure.rule not in retried or precise is None:
        return result, False
    exact = exact if exact is not None else precise.outputs(inputs, references)
    if exact is None:
        return result, False
    noise = error_norms(references, exact)
    jitter = precise.jitter(inputs, references)
    moved = None
    if jitter is not None:
        noise, moved = _larger(noise, jitter[0]), jitter[1]
    worst = _coarse_reference(references, exact, atol, rtol, rounded_to)
    retry = _against_exact(
        outputs, exact, atol, rtol, truncating, rounded_to, noise, worst, constant_ok,
        index_sources, moved,
    )  # fmt: skip
    if retry.failure is not None:
        # PyTorch's own other implementation of a fused op (the math SDPA, which is what an
        # extern bmm + softmax + bmm candidate computes) is as correct as the one the reference
        # ran: its error is noise too (KernelBench L1/97 on the H100: the efficient-attention
        # reference 0.0044 from float64 at its worst element, a math-path candidate 0.0099).
        backend = precise.backend_outputs(inputs)
        if backend is not None and len(backend) == len(exact):
            noise = _larger(noise, error_norms(backend, exact))
            worst = _larger(worst, _coarse_reference(backend, exact, atol, rtol, rounded_to))
            retry = _against_exact(
                outputs, exact, atol, rtol, truncating, rounded_to, noise, worst, constant_ok,
                index_sources, moved,
            )  # fmt: skip
    if retry.failure is None:
        return retry, True
    # Both judgements say why: the float64 one is what a reviewer of a near miss needs (the
    # allowances it used are in its message).
    why = Reason(
        result.failure.rule,
        f"{result.failure.message}; against the reference one precision up: "
        f"{retry.failure.message}",
        result.failure.line,
    )
    return replace(result, failure=why), False


def _larger(first: tuple[float, ...], second: tuple[float, ...]) -> tuple[float, ...]:
    """Per output, the larger of two allowances."""
    return tuple(max(a, b) for a, b in zip(first, second))


def _against_exact(
    outputs,
    exact,
    atol,
    rtol,
    truncating,
    rounded_to,
    noise,
    worst,
    constant_ok,
    index_sources,
    moved=None,
) -> Comparison:
    return compare_outputs(
        outputs, exact, atol, rtol,
        atol_per_rms=True,
        truncating_casts=truncating,
        rounded_to=rounded_to,
        reference_noise=noise,
        reference_max_error=worst,
        constant_ok=constant_ok,
        index_sources=index_sources,
        element_noise=moved,
    )  # fmt: skip


def _coarse_reference(
    references: tuple, exact: tuple, atol, rtol, rounded_to: torch.dtype | None
) -> tuple[float, ...]:
    """Per output, the reference's own largest error against its higher-precision run where the
    reference as written is itself outside the tolerance of that run (an fp32 convolution that
    PyTorch runs in TF32 by default), else 0: no tolerance is stricter than the op as written."""
    worst = max_errors(references, exact)
    allowance = []
    for index, (reference, truth) in enumerate(zip(references, exact)):
        own = compare_outputs((reference,), (truth,), atol, rtol, atol_per_rms=True,
                              rounded_to=rounded_to)  # fmt: skip
        allowance.append(worst[index] if own.failure is not None else 0.0)
    return tuple(allowance)


class _AttentionCalls(TorchFunctionMode):
    """Whether the reference called F.scaled_dot_product_attention."""

    def __init__(self) -> None:
        super().__init__()
        self.called = False

    def __torch_function__(self, func, types, args=(), kwargs=None):
        if getattr(func, "__name__", "") == "scaled_dot_product_attention":
            self.called = True
        return func(*args, **(kwargs or {}))


_LOW_PRECISION = (torch.bfloat16, torch.float16)
JITTER_RUNS = 3  # draws of one-ulp input moves whose largest effect sizes the noise allowance


def _one_ulp_away(inputs: list, draw: int) -> list:
    """The float32/float64 inputs each moved one ulp up or down (a seeded coin per element);
    other values as they are."""
    moved = []
    for value in inputs:
        if isinstance(value, torch.Tensor) and value.dtype in (torch.float32, torch.float64):
            generator = torch.Generator(device=value.device).manual_seed(draw)
            up = torch.rand(value.shape, generator=generator, device=value.device) < 0.5
            toward = torch.where(up, torch.inf, -torch.inf).to(value.dtype)
            value = torch.nextafter(value, toward)
        moved.append(value)
    return moved


def casts_truncate(device: torch.device) -> bool:
    """Whether the candidate's casts into bf16 truncate: on the CPU (Triton's interpreter) where
    its process cannot be made to round (kbot.evaluate.interpreter_rounding)."""
    if device.type != "cpu":
        return False
    from kbot.evaluate.interpreter_rounding import candidate_casts_truncate

    return candidate_casts_truncate()


class PreciseReference:
    """The reference run one precision up, its outputs rounded once to the dtypes the reference
    returns: bf16/fp16 outputs from a float32 run (its floating parameters, buffers and
    low-precision inputs upcast), float32 outputs from a float64 run (a long fp32 prefix sum or
    reduction whose terms cancel: summation order alone moves the small results past the fixed
    fp32 atol, so correct kernels were rejected depending on the seed). Built on first use:
    only a candidate that misses the reference as written pays for it."""

    def __init__(self, reference: torch.nn.Module) -> None:
        self._reference = reference
        self._models: dict[torch.dtype, torch.nn.Module] = {}
        self._failed: set[torch.dtype] = set()
        self._as_written: torch.nn.Module | None = None  # a copy: the runs leave no state behind

    def jitter_norms(self, inputs: list, references: tuple) -> tuple[float, ...] | None:
        """The norms of `jitter`."""
        jitter = self.jitter(inputs, references)
        return None if jitter is None else jitter[0]

    def jitter(
        self, inputs: list, references: tuple
    ) -> tuple[tuple[float, ...], tuple[torch.Tensor | None, ...]] | None:
        """Per output, the largest distance from `references` of the reference as written run
        on its float32/float64 inputs moved by one ulp each (a random direction per element,
        JITTER_RUNS draws), as a norm and element by element: how far rounding moves an output
        that is all cancellation, which the reference's own error against the run one precision
        up measures from one draw only (a GroupNorm's mean over three rows: a correct kernel was
        11 times further than the reference happened to be; a GEMM's element that cancels
        terms of 1024x outliers: a correct kernel 4.5e-4 from float64 where the reference was
        1e-4 and the element moved 8e-4). None where no input is float32/float64 or the run
        fails."""
        if not any(
            isinstance(v, torch.Tensor) and v.dtype in (torch.float32, torch.float64)
            for v in inputs
        ):
            return None
        try:
            if self._as_written is None:
                self._as_written = copy.deepcopy(self._reference)
            worst: list[float] | None = None
            farthest: list[torch.Tensor | None] | None = None
            for draw in range(JITTER_RUNS):
                with torch.no_grad():
                    moved = as_outputs(self._as_written(*_one_ulp_away(inputs, draw)))
                norms = error_norms(moved, references)
                apart = deviations(moved, references)
                del moved
                if worst is None or farthest is None:
                    worst, farthest = list(norms), list(apart)
                    continue
                worst = [max(a, b) for a, b in zip(worst, norms)]
                farthest = [
                    a if b is None else b if a is None else torch.maximum(a, b)
                    for a, b in zip(farthest, apart)
                ]
        except Exception:  # the reference's own failure: the allowance stays as it was
            return None
        return tuple(worst or ()), tuple(farthest or ())

    def backend_outputs(self, inputs: list) -> tuple | None:
        """The reference as written, its fused attention run by PyTorch's math backend (the
        matmuls, softmax and matmul it is defined as); None where it calls no
        scaled_dot_product_attention or the run fails. Once per inputs, on a failing retry
        only."""
        from torch.nn.attention import SDPBackend, sdpa_kernel

        try:
            if self._as_written is None:
                self._as_written = copy.deepcopy(self._reference)
            seen = _AttentionCalls()
            with seen, sdpa_kernel(SDPBackend.MATH), torch.no_grad():
                outputs = as_outputs(self._as_written(*inputs))
        except Exception:  # the reference's own failure: no other allowance
            return None
        return outputs if seen.called else None

    def outputs(self, inputs: list, references: tuple) -> tuple | None:
        floats = [
            r.dtype for r in references if isinstance(r, torch.Tensor) and r.is_floating_point()
        ]
        if not floats:
            return None
        # One precision above the widest floating output the reference returns.
        up = torch.float64 if torch.float32 in floats else torch.float32
        if any(d not in (*_LOW_PRECISION, torch.float32) for d in floats) or up in self._failed:
            return None
        try:
            if up not in self._models:
                self._models[up] = copy.deepcopy(self._reference).to(up)
            below = (*_LOW_PRECISION, torch.float32) if up == torch.float64 else _LOW_PRECISION
            upcast = [
                v.to(up) if isinstance(v, torch.Tensor) and v.dtype in below else v for v in inputs
            ]
            with torch.no_grad():
                exact = as_outputs(self._models[up](*upcast))
        except Exception:  # a reference that only runs in its own dtype keeps the strict check
            self._failed.add(up)
            return None
        if len(exact) != len(references):
            return None
        return tuple(
            e.to(r.dtype) if isinstance(e, torch.Tensor) and isinstance(r, torch.Tensor) else e
            for e, r in zip(exact, references)
        )
