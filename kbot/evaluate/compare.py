"""Comparing a candidate's outputs with the reference's: exact structure, then finiteness,
near-constant outputs, and dtype-aware tolerances on both the relative error norm and each
element. Runs in the worker (imports torch)."""

from __future__ import annotations

from dataclasses import dataclass

import torch

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
# An output whose values all lie within this fraction of its largest magnitude is constant.
_CONSTANT_SPAN = 1e-6


@dataclass(frozen=True)
class Tolerance:
    atol: float
    rtol: float


@dataclass(frozen=True)
class Comparison:
    max_abs_error: float
    max_rel_norm_error: float
    failure: Reason | None


def tolerance_for(dtype: torch.dtype, atol: float | None, rtol: float | None) -> Tolerance:
    default_atol, default_rtol = DEFAULT_TOLERANCES.get(dtype, (0.0, 0.0))
    return Tolerance(
        atol if atol is not None else default_atol, rtol if rtol is not None else default_rtol
    )


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
) -> Comparison:
    """`atol_per_rms`: take atol relative to each output's RMS (at least 1x). The retry against
    the float32 reference uses it: where terms cancel (RoPE's q1*cos - q2*sin at large inputs),
    a kernel's rounding errors scale with the terms, not with the small result."""
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
        result = _compare_one(index, out, ref, atol, rtol, atol_per_rms)
        worst_abs = max(worst_abs, result.max_abs_error)
        worst_norm = max(worst_norm, result.max_rel_norm_error)
        if result.failure is not None:
            return Comparison(worst_abs, worst_norm, result.failure)
    return Comparison(worst_abs, worst_norm, None)


def _compare_one(
    index: int, out: object, ref: object, atol, rtol, atol_per_rms: bool = False
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
    if not ref.is_floating_point():
        if not torch.equal(out, ref):
            wrong = int((out != ref).sum())
            return Comparison(
                0.0, 0.0, Reason("mismatch", f"{where}: {wrong} of {ref.numel()} values differ")
            )
        return Comparison(0.0, 0.0, None)
    tol = tolerance_for(ref.dtype, atol, rtol)
    o, r = out.double(), ref.double()
    ref_finite = torch.isfinite(r)
    out_finite = torch.isfinite(o)
    if bool((~out_finite & ref_finite).any()):
        bad = int((~out_finite & ref_finite).sum())
        return Comparison(
            float("nan"),
            float("nan"),
            Reason("nan-inf", f"{where}: {bad} NaN/Inf values where the reference is finite"),
        )
    if not bool(ref_finite.all()):
        same = torch.equal(
            o[~ref_finite].nan_to_num(0.0, 1.0, -1.0), r[~ref_finite].nan_to_num(0.0, 1.0, -1.0)
        )
        if not same:
            return Comparison(
                0.0, 0.0, Reason("mismatch", f"{where}: NaN/Inf values differ from the reference's")
            )
        o, r = o[ref_finite], r[ref_finite]
    if r.numel() == 0:
        return Comparison(0.0, 0.0, None)
    diff = (o - r).abs()
    max_abs = float(diff.max())
    ref_norm = float(r.norm())
    rel_norm = (
        float(diff.norm()) / ref_norm if ref_norm > 0 else (0.0 if max_abs == 0 else float("inf"))
    )
    constant = _is_constant(o)
    if constant and not _is_constant(r) and r.numel() > 1:
        return Comparison(
            max_abs,
            rel_norm,
            Reason(
                "near-constant",
                f"{where} is constant ({float(o.flatten()[0]):.6g} everywhere) but the reference "
                "varies: the output does not depend on the input",
            ),
        )
    if rel_norm > tol.rtol:
        return Comparison(
            max_abs,
            rel_norm,
            Reason(
                "mismatch",
                f"{where}: relative error norm {rel_norm:.3g} > rtol {tol.rtol:g} "
                f"(max abs error {max_abs:.3g})",
            ),
        )
    abs_tol = tol.atol * max(1.0, float(r.pow(2).mean().sqrt())) if atol_per_rms else tol.atol
    outside = diff > abs_tol + tol.rtol * r.abs()
    if bool(outside.any()):
        first = int(outside.flatten().nonzero()[0])
        return Comparison(
            max_abs,
            rel_norm,
            Reason(
                "mismatch",
                f"{where}: {int(outside.sum())} of {r.numel()} elements outside "
                f"atol {abs_tol:g} + rtol {tol.rtol:g}·|ref| (first at flat index {first}: "
                f"{float(o.flatten()[first]):.6g} vs {float(r.flatten()[first]):.6g})",
            ),
        )
    return Comparison(max_abs, rel_norm, None)


def _is_constant(values: torch.Tensor) -> bool:
    if values.numel() == 0:
        return True
    span = float(values.max() - values.min())
    scale = float(values.abs().max())
    return span <= _CONSTANT_SPAN * scale or scale == 0.0
