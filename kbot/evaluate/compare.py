"""Comparing a candidate's outputs with the reference's: exact structure, then finiteness,
near-constant outputs, and dtype-aware tolerances on both the relative error norm and each
element. Runs in the worker (imports torch)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from kbot.evaluate.index_outputs import IndexSource
from kbot.evaluate.rounding import tolerance_dtype
from kbot.evaluate.rounding_bias import HALF_WIDTH, rounding_bias
from kbot.evaluate.verdict import Reason

# Defaults per output dtype: (atol, rtol). The relative norm of the error must stay under rtol
# too; that is what catches an all-zeros answer to a softmax over 64k columns, whose every
# element is within any absolute tolerance of 1/65536. bf16's rtol is torch.testing's: one
# bf16 ulp is 0.4-0.8%, and a kernel that rounds once differs from a reference that rounds
# after every op by up to two.
DEFAULT_TOLERANCES: dict[torch.dtype, tuple[float, float]] = {
    torch.float64: (1e-7, 1e-7),
    torch.float32: (1e-4, 1e-4),
    torch.float16: (1e-2, 1e-2),
    torch.bfloat16: (1e-2, 1.6e-2),
}
# Against the higher-precision reference, a candidate may be this many times further from it (in
# error norm) than the reference as written is: where an output is all cancellation (the mean of
# a GroupNorm's output is 0 up to rounding), the reference's own rounding is the whole output,
# and no relative tolerance can tell a correct kernel from a wrong one; the reference's own
# error can. That error is the larger of the reference's distance from the higher-precision run
# and its response to one-ulp moves of its inputs (kbot.evaluate.judgement.PreciseReference):
# one draw of rounding alone can be small by luck where the output has a few elements.
REFERENCE_NOISE_MULTIPLE = 8.0
# Element by element, against the higher-precision reference, a candidate may be off by this many
# times the reference's own largest error on top of the tolerance, where the reference as written
# is itself outside that tolerance (kbot.evaluate.correctness): an fp32 convolution runs in TF32
# under PyTorch's defaults, about 1e-3 of the terms' size, so fp32's 1e-4 per element is met by no
# kernel but one that repeats the reference's own algorithm and so its rounding.
ELEMENT_NOISE_MULTIPLE = 2.0
# An output whose values all lie within this fraction of its largest magnitude is constant.
_CONSTANT_SPAN = 1e-6
# One bf16 ulp of a value is at most 2^-7 of it: how far a cast that truncates can land from one
# that rounds to nearest even, as a GPU does. Triton's CPU interpreter truncates; where
# kbot.evaluate.interpreter_rounding cannot make the candidate's process round, the CPU check
# allows one such cast (the store) on top of the tolerance. GPU tolerances never include it.
TRUNCATING_CAST_RTOL = 2.0**-7
_TRUNCATION_NOTE = "rtol includes 2^-7 for one truncating bf16 cast in Triton's CPU interpreter"


@dataclass(frozen=True)
class Tolerance:
    atol: float
    rtol: float
    truncation_allowed: bool = False  # rtol includes TRUNCATING_CAST_RTOL


@dataclass(frozen=True)
class Comparison:
    max_abs_error: float
    max_rel_norm_error: float
    failure: Reason | None


def tolerance_for(
    dtype: torch.dtype, atol: float | None, rtol: float | None, truncating_casts: bool = False
) -> Tolerance:
    """`truncating_casts`: the candidate ran where a cast into bf16 truncates (see
    TRUNCATING_CAST_RTOL); a bf16 output's rtol, the problem's own or the default, grows by one
    truncation."""
    default_atol, default_rtol = DEFAULT_TOLERANCES.get(dtype, (0.0, 0.0))
    tol = Tolerance(
        atol if atol is not None else default_atol, rtol if rtol is not None else default_rtol
    )
    if truncating_casts and dtype == torch.bfloat16:
        return Tolerance(tol.atol, tol.rtol + TRUNCATING_CAST_RTOL, truncation_allowed=True)
    return tol


def as_outputs(value: object) -> tuple[object, ...]:
    """A forward's return value as a flat tuple (one tensor, or a tuple/list of them)."""
    if isinstance(value, (tuple, list)):
        return tuple(value)
    return (value,)


def compare_outputs(
    outputs: tuple[object, ...],
    references: tuple[object, ...],
    atol: float | None,
    rtol: float | None,
    atol_per_rms: bool = False,
    truncating_casts: bool = False,
    rounded_to: torch.dtype | None = None,
    reference_noise: tuple[float, ...] | None = None,
    reference_max_error: tuple[float, ...] | None = None,
    constant_ok: frozenset[int] = frozenset(),
    index_sources: dict[int, IndexSource] | None = None,
    element_noise: tuple[torch.Tensor | None, ...] | None = None,
) -> Comparison:
    """`atol_per_rms`: take atol relative to each output's RMS (at least 1x). The retry against
    the float32 reference uses it: where terms cancel (RoPE's q1*cos - q2*sin at large inputs),
    a kernel's rounding errors scale with the terms, not with the small result.
    `truncating_casts`: see `tolerance_for`. `rounded_to`: the reference's coarsest rounding
    (kbot.evaluate.rounding), whose tolerance an fp32/fp64 output is judged with.
    `reference_noise`: per output, the error norm of the reference as written against these
    (higher-precision) references; the error norm may reach REFERENCE_NOISE_MULTIPLE times it.
    `reference_max_error`: per output, the reference's largest elementwise error against them;
    each element may be off by ELEMENT_NOISE_MULTIPLE times it on top of the tolerance.
    `element_noise`: per output, how far each element of the reference moved when its inputs
    moved one ulp (kbot.evaluate.judgement.PreciseReference.jitter): that element may be off by
    ELEMENT_NOISE_MULTIPLE times it too (a GEMM's element that cancels terms a million times its
    size is as uncertain as its terms' rounding, whatever the other elements are).
    `constant_ok`: outputs that may be constant where the reference varies (the correctly
    rounded answer is constant: kbot.evaluate.judgement.judge_outputs). `index_sources`:
    outputs that are indices torch leaves unordered among ties (kbot.evaluate.index_outputs),
    which may pick other tied positions."""
    if len(outputs) != len(references):
        return Comparison(
            0.0,
            0.0,
            Reason(
                "output-count",
                f"forward returned {len(outputs)} outputs; the reference returns {len(references)}",
            ),
        )
    worst_abs = worst_norm = 0.0
    for index, (out, ref) in enumerate(zip(outputs, references)):
        noise = reference_noise[index] if reference_noise else 0.0
        worst = reference_max_error[index] if reference_max_error else 0.0
        moved = element_noise[index] if element_noise else None
        result = _compare_one(
            index, out, ref, atol, rtol, atol_per_rms, truncating_casts, rounded_to, noise, worst,
            index in constant_ok, (index_sources or {}).get(index), moved,
        )  # fmt: skip
        worst_abs = max(worst_abs, result.max_abs_error)
        worst_norm = max(worst_norm, result.max_rel_norm_error)
        if result.failure is not None:
            return Comparison(worst_abs, worst_norm, result.failure)
    return Comparison(worst_abs, worst_norm, None)


def _compare_one(
    index: int,
    out: object,
    ref: object,
    atol,
    rtol,
    atol_per_rms: bool = False,
    truncating_casts: bool = False,
    rounded_to: torch.dtype | None = None,
    reference_noise: float = 0.0,
    reference_max_error: float = 0.0,
    constant_ok: bool = False,
    index_source: IndexSource | None = None,
    element_noise: torch.Tensor | None = None,
) -> Comparison:
    where = f"output {index}"
    if not isinstance(ref, torch.Tensor):
        if out != ref:
            return Comparison(0.0, 0.0, Reason("mismatch", f"{where} is {out!r}, expected {ref!r}"))
        return Comparison(0.0, 0.0, None)
    if type(out) is not torch.Tensor:
        return Comparison(
            0.0,
            0.0,
            Reason("output-type", f"{where} is a {type(out).__name__}, not a torch.Tensor"),
        )
    for field, got, want in (
        ("shape", tuple(out.shape), tuple(ref.shape)),
        ("dtype", out.dtype, ref.dtype),
        ("device", out.device, ref.device),
    ):
        if got != want:
            return Comparison(
                0.0, 0.0, Reason(f"output-{field}", f"{where} has {field} {got}, expected {want}")
            )
    if ref.is_contiguous() and not out.is_contiguous():
        # right values in another layout: the caller's `y.view(-1)` raises, a kernel reading
        # y as row-major reads it wrong
        return Comparison(
            0.0,
            0.0,
            Reason(
                "output-layout",
                f"{where} has strides {tuple(out.stride())} where the reference's is contiguous "
                f"{tuple(ref.stride())}; return it contiguous",
            ),
        )
    if not ref.is_floating_point():
        if not torch.equal(out, ref) and not (
            index_source is not None and index_source.same_choice(out, ref)
        ):
            wrong = int((out != ref).sum())
            return Comparison(
                0.0, 0.0, Reason("mismatch", f"{where}: {wrong} of {ref.numel()} values differ")
            )
        return Comparison(0.0, 0.0, None)
    tol = tolerance_for(tolerance_dtype(ref.dtype, rounded_to), atol, rtol, truncating_casts)
    note = f" ({_TRUNCATION_NOTE})" if tol.truncation_allowed else ""
    flat_out, flat_ref = out.reshape(-1), ref.reshape(-1)
    stats = _Stats()
    for o, r in _chunks(flat_out, flat_ref):
        ref_finite = torch.isfinite(r)
        stats.bad_nan += int((~torch.isfinite(o) & ref_finite).sum())
        if not bool(ref_finite.all()):
            # Where the reference is not finite the output must be the same: +inf, -inf, or a
            # NaN (any payload). Not a number standing in for it (-1 for log(0)'s -inf).
            o_nf, r_nf = o[~ref_finite], r[~ref_finite]
            same = (o_nf == r_nf) | (o_nf.isnan() & r_nf.isnan())
            stats.nonfinite_differ |= not bool(same.all())
            o, r = o[ref_finite], r[ref_finite]
        stats.add(o, r)
    if stats.bad_nan:
        return Comparison(
            float("nan"),
            float("nan"),
            Reason(
                "nan-inf", f"{where}: {stats.bad_nan} NaN/Inf values where the reference is finite"
            ),
        )
    if stats.nonfinite_differ:
        return Comparison(
            0.0, 0.0, Reason("mismatch", f"{where}: NaN/Inf values differ from the reference's")
        )
    if stats.count == 0:
        return Comparison(0.0, 0.0, None)
    max_abs = stats.max_abs
    ref_norm = math.sqrt(stats.ref_sq)
    rel_norm = (
        math.sqrt(stats.diff_sq) / ref_norm
        if ref_norm > 0
        else (0.0 if max_abs == 0 else float("inf"))
    )
    if stats.out_constant and not stats.ref_constant and stats.count > 1 and not constant_ok:
        return Comparison(
            max_abs,
            rel_norm,
            Reason(
                "near-constant",
                f"{where} is constant ({stats.out_first:.6g} everywhere) but the reference "
                "varies: the output does not depend on the input",
            ),
        )
    error_norm = math.sqrt(stats.diff_sq)
    noise_allowed = REFERENCE_NOISE_MULTIPLE * reference_noise
    if rel_norm > tol.rtol and error_norm > tol.rtol * ref_norm + noise_allowed:
        within = (
            f"; {noise_allowed:.3g} allowed by the reference's own rounding error"
            if noise_allowed
            else ""
        )
        return Comparison(
            max_abs,
            rel_norm,
            Reason(
                "mismatch",
                f"{where}: relative error norm {rel_norm:.3g} > rtol {tol.rtol:g} "
                f"(max abs error {max_abs:.3g}{within}){note}",
            ),
        )
    rms = math.sqrt(stats.ref_sq / stats.count)
    abs_tol = tol.atol * max(1.0, rms) if atol_per_rms else tol.atol
    abs_tol += ELEMENT_NOISE_MULTIPLE * reference_max_error
    # Second pass, elementwise, now that the tolerance is known.
    outside_count, first, offset = 0, None, 0
    if element_noise is not None and element_noise.shape != ref.shape:
        element_noise = None
    flat_noise = element_noise.reshape(-1) if element_noise is not None else None
    for start, (o, r) in zip(
        range(0, flat_ref.numel(), CHUNK_ELEMENTS), _chunks(flat_out, flat_ref)
    ):
        keep = torch.isfinite(r)
        o, r = o[keep], r[keep]
        bound = abs_tol + tol.rtol * r.abs()
        if flat_noise is not None:
            moved = flat_noise[start : start + CHUNK_ELEMENTS].double()[keep]
            bound = bound + ELEMENT_NOISE_MULTIPLE * moved
        outside = (o - r).abs() > bound
        count = int(outside.sum())
        if count and first is None:
            at = int(outside.nonzero()[0])
            first = (offset + at, float(o[at]), float(r[at]))
        outside_count += count
        offset += r.numel()
    if first is not None:
        index, got, want = first
        return Comparison(
            max_abs,
            rel_norm,
            Reason(
                "mismatch",
                f"{where}: {outside_count} of {stats.count} elements outside "
                f"atol {abs_tol:g} + rtol {tol.rtol:g}·|ref|"
                + (
                    f" + {ELEMENT_NOISE_MULTIPLE:g}x each element's move under one-ulp input moves"
                    if flat_noise is not None
                    else ""
                )
                + f" (first at flat index {index}: "
                f"{got:.6g} vs {want:.6g}){note}",
            ),
        )
    if out.dtype in HALF_WIDTH and not tol.truncation_allowed:
        bias = rounding_bias(stats.differ, stats.count, stats.sides)
        if bias is not None:
            return Comparison(max_abs, rel_norm, Reason("rounding-bias", f"{where}: {bias}"))
    return Comparison(max_abs, rel_norm, None)


# Elements compared at a time, in float64: a 16384 x 131072 logits output compared whole
# would need several 17 GB temporaries (a worker died of it on the H200); a chunk needs 128 MB.
CHUNK_ELEMENTS = 1 << 24


def _comparable(value: object, want: object) -> bool:
    """Both floating tensors of one shape: what the noise measures below compare."""
    return (
        isinstance(value, torch.Tensor)
        and isinstance(want, torch.Tensor)
        and want.is_floating_point()
        and value.shape == want.shape
    )


def max_errors(values: tuple[object, ...], exact: tuple[object, ...]) -> tuple[float, ...]:
    """Per output, the largest `|value - exact|` over the elements where both are finite (0 for
    a non-tensor or non-floating output): the reference's worst error against its
    higher-precision run."""
    worst = []
    for value, want in zip(values, exact):
        largest = 0.0
        if _comparable(value, want):
            for v, w in _chunks(value.reshape(-1), want.reshape(-1)):
                keep = torch.isfinite(v) & torch.isfinite(w)
                if bool(keep.any()):
                    largest = max(largest, float((v[keep] - w[keep]).abs().max()))
        worst.append(largest)
    return tuple(worst)


def error_norms(values: tuple[object, ...], exact: tuple[object, ...]) -> tuple[float, ...]:
    """Per output, the L2 norm of `values - exact` over the elements where both are finite (0
    for a non-tensor or non-floating output): how far the reference as written lies from its
    higher-precision run."""
    norms = []
    for value, want in zip(values, exact):
        if not _comparable(value, want):
            norms.append(0.0)
            continue
        total = 0.0
        for v, w in _chunks(value.reshape(-1), want.reshape(-1)):
            keep = torch.isfinite(v) & torch.isfinite(w)
            total += float((v[keep] - w[keep]).square().sum())
        norms.append(math.sqrt(total))
    return tuple(norms)


def deviations(
    values: tuple[object, ...], references: tuple[object, ...]
) -> tuple[torch.Tensor | None, ...]:
    """Per output, `|value - reference|` element by element in float32 (None for a non-tensor or
    non-floating output); 0 where either is not finite, so that no element's allowance is NaN
    (a NaN bound would pass any value)."""
    moved: list[torch.Tensor | None] = []
    for value, want in zip(values, references):
        if not _comparable(value, want):
            moved.append(None)
            continue
        parts = []
        for v, w in _chunks(value.reshape(-1), want.reshape(-1)):
            apart = (v - w).abs()
            parts.append(torch.where(torch.isfinite(apart), apart, 0.0).float())
        flat = torch.cat(parts) if parts else torch.zeros(0)
        moved.append(flat.reshape(want.shape))
    return tuple(moved)


def _chunks(out: torch.Tensor, ref: torch.Tensor):
    for start in range(0, ref.numel(), CHUNK_ELEMENTS):
        stop = start + CHUNK_ELEMENTS
        yield out[start:stop].double(), ref[start:stop].double()


class _Stats:
    """Running sums over the chunks' finite-reference elements."""

    def __init__(self) -> None:
        self.bad_nan = 0
        self.nonfinite_differ = False
        self.count = 0
        self.max_abs = 0.0
        self.diff_sq = 0.0
        self.ref_sq = 0.0
        self.out_first = 0.0
        self.differ = 0  # elements whose output is not the reference's value
        self.sides = {"up": 0, "down": 0, "toward zero": 0, "away from zero": 0}
        self._out = [math.inf, -math.inf, 0.0]  # min, max, max |.|
        self._ref = [math.inf, -math.inf, 0.0]

    def add(self, o: torch.Tensor, r: torch.Tensor) -> None:
        if r.numel() == 0:
            return
        if self.count == 0:
            self.out_first = float(o[0])
        self.count += r.numel()
        signed = o - r
        diff = signed.abs()
        self.differ += int((diff > 0).sum())
        self.sides["up"] += int((signed > 0).sum())
        self.sides["down"] += int((signed < 0).sum())
        smaller = o.abs() < r.abs()
        self.sides["toward zero"] += int(smaller.sum())
        # Where the reference is exactly zero every difference is "away from zero": no
        # evidence of a rounding direction there. A fused multiply-add leaves its rounding
        # residue where the reference's separately rounded products cancel exactly (a RoPE
        # of a constant row with cos and sin one tensor, on the H100), on both signs.
        self.sides["away from zero"] += int(((o.abs() > r.abs()) & (r != 0)).sum())
        self.max_abs = max(self.max_abs, float(diff.max()))
        self.diff_sq += float(diff.square().sum())
        self.ref_sq += float(r.square().sum())
        for span, values in ((self._out, o), (self._ref, r)):
            span[0] = min(span[0], float(values.min()))
            span[1] = max(span[1], float(values.max()))
            span[2] = max(span[2], float(values.abs().max()))

    @property
    def out_constant(self) -> bool:
        return _is_constant_span(*self._out)

    @property
    def ref_constant(self) -> bool:
        return _is_constant_span(*self._ref)


def is_constant(value: object) -> bool:
    """A floating-point tensor whose finite values are all equal (as `near-constant` counts)."""
    if not isinstance(value, torch.Tensor) or not value.is_floating_point():
        return False
    finite = value[torch.isfinite(value)].double()
    if finite.numel() < 2:
        return False
    low, high = float(finite.min()), float(finite.max())
    return _is_constant_span(low, high, float(finite.abs().max()))


def _is_constant_span(low: float, high: float, scale: float) -> bool:
    return high - low <= _CONSTANT_SPAN * scale or scale == 0.0
