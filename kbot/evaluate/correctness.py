"""Dynamic correctness checks of one candidate on one case, in the worker.

Per case: the input buffers are allocated once, then every trial refills the SAME buffers in
place with a fresh seed and the next value distribution (so a candidate caching results by
pointer or identity answers the previous trial); the reference runs on clones; memory is
poisoned before the candidate runs; inputs must be unchanged afterwards; outputs are compared
structurally and numerically; an output identical across trials whose references differ is
input-independent.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import torch

from kbot.evaluate.compare import as_outputs, compare_outputs
from kbot.evaluate.verdict import CaseCorrectness, Reason
from kbot.problem.runtime import DISTRIBUTIONS, apply_distribution, refill_, seeded_inputs

# Large enough to cover any block the caching allocator may hand out next, small enough to be
# cheap: poisoning costs one fill per candidate call.
_POISON_MIN_BYTES = 64 << 20


@dataclass(frozen=True)
class CaseOutcome:
    correctness: CaseCorrectness
    failure: Reason | None


class ReferenceFailed(Exception):
    """The problem's own Model failed on its inputs: the problem, not the candidate, is bad."""


class CandidateCrashed(Exception):
    """The candidate's forward raised; carries the reason (and whether CUDA is now unusable)."""

    def __init__(self, reason: Reason, sticky: bool) -> None:
        super().__init__(reason.message)
        self.reason = reason
        self.sticky = sticky


def check_case(
    module: ModuleType,
    reference: torch.nn.Module,
    candidate: torch.nn.Module,
    case: dict[str, Any],
    trials: int,
    base_seed: int,
    device: torch.device,
    atol: float | None,
    rtol: float | None,
    mutates_inputs: bool = False,
) -> CaseOutcome:
    try:
        buffers = seeded_inputs(module, case, base_seed, device)
    except Exception as exc:
        raise ReferenceFailed(f"get_inputs({case}) raised {type(exc).__name__}: {exc}") from None
    distributions = tuple(DISTRIBUTIONS[k % len(DISTRIBUTIONS)] for k in range(trials))
    worst_abs = worst_norm = 0.0
    previous: tuple[tuple, tuple] | None = None
    failure: Reason | None = None
    tol_atol = tol_rtol = float("nan")
    precise = _PreciseReference(reference)
    float32_trials = 0
    for trial, distribution in enumerate(distributions):
        seed = base_seed + 1 + trial
        fresh = apply_distribution(seeded_inputs(module, case, seed, device), distribution, seed)
        refill_(buffers, fresh)
        pristine = _clone(buffers)
        reference_inputs = _clone(buffers)
        with torch.no_grad():
            try:
                references = as_outputs(reference(*reference_inputs))
            except Exception as exc:
                raise ReferenceFailed(
                    f"the problem's Model raised {type(exc).__name__}: {exc}"
                ) from None
        _poison(references, device)
        with torch.no_grad():
            try:
                outputs = as_outputs(candidate(*buffers))
                if device.type == "cuda":
                    torch.cuda.synchronize(device)
            except Exception as exc:  # the candidate's own error is its verdict
                raise CandidateCrashed(
                    _forward_error(exc, trial, distribution), _sticky(exc)
                ) from None
        where = f"(trial {trial + 1}/{trials}, {distribution} inputs, seed {seed})"
        if mutates_inputs:
            # The op's results include what it writes into its inputs: compare those too.
            written = [i for i, v in enumerate(pristine) if _changed(reference_inputs[i], v)]
            outputs = (*outputs, *[buffers[i] for i in written])
            references = (*references, *[reference_inputs[i] for i in written])
            untouched = [i for i in range(len(pristine)) if i not in written]
            mutated = _mutated([buffers[i] for i in untouched], [pristine[i] for i in untouched])
            mutated = None if mutated is None else untouched[mutated]
        else:
            mutated = _mutated(buffers, pristine)
        if mutated is not None:
            failure = Reason("input-mutated", f"input {mutated} was modified in place {where}")
            break
        result = compare_outputs(outputs, references, atol, rtol)
        if result.failure is not None and result.failure.rule == "mismatch" and not mutates_inputs:
            exact = precise.outputs(pristine, references)
            retry = (
                None
                if exact is None
                else compare_outputs(outputs, exact, atol, rtol, atol_per_rms=True)
            )
            if retry is not None and retry.failure is None:
                result = retry
                float32_trials += 1
        worst_abs = max(worst_abs, result.max_abs_error)
        worst_norm = max(worst_norm, result.max_rel_norm_error)
        if result.failure is not None:
            failure = Reason(result.failure.rule, f"{result.failure.message} {where}")
            break
        if (
            previous is not None
            and _same(outputs, previous[0])
            and not _same(references, previous[1])
        ):
            failure = Reason(
                "input-independent",
                f"the output is bit-identical to the previous trial's although the inputs and "
                f"the reference's output changed {where}",
            )
            break
        previous = (tuple(_detach(outputs)), references)
        tol_atol, tol_rtol = _tolerance_used(references, atol, rtol)
    return CaseOutcome(
        CaseCorrectness(
            case=dict(case),
            trials=trials,
            distributions=tuple(dict.fromkeys(distributions)),
            max_abs_error=worst_abs,
            max_rel_norm_error=worst_norm,
            atol=tol_atol,
            rtol=tol_rtol,
            passed=failure is None,
            float32_reference_trials=float32_trials,
        ),
        failure,
    )


_LOW_PRECISION = (torch.bfloat16, torch.float16)


class _PreciseReference:
    """The reference run in float32 (its floating parameters, buffers and low-precision inputs
    upcast), its outputs rounded once to the dtypes the reference returns. Built on first use:
    only a candidate that misses the reference as written pays for it."""

    def __init__(self, reference: torch.nn.Module) -> None:
        self._reference = reference
        self._model: torch.nn.Module | None = None
        self._failed = False

    def outputs(self, inputs: list, references: tuple) -> tuple | None:
        low = [r for r in references if isinstance(r, torch.Tensor) and r.dtype in _LOW_PRECISION]
        if not low or self._failed:
            return None
        try:
            if self._model is None:
                self._model = copy.deepcopy(self._reference).float()
            upcast = [
                v.float() if isinstance(v, torch.Tensor) and v.dtype in _LOW_PRECISION else v
                for v in inputs
            ]
            with torch.no_grad():
                exact = as_outputs(self._model(*upcast))
        except Exception:  # a reference that only runs in its own dtype keeps the strict check
            self._failed = True
            return None
        if len(exact) != len(references):
            return None
        return tuple(
            e.to(r.dtype) if isinstance(e, torch.Tensor) and isinstance(r, torch.Tensor) else e
            for e, r in zip(exact, references)
        )


def _tolerance_used(references: tuple, atol, rtol) -> tuple[float, float]:
    from kbot.evaluate.compare import tolerance_for

    floats = [r for r in references if isinstance(r, torch.Tensor) and r.is_floating_point()]
    if not floats:
        return 0.0, 0.0
    tolerances = [tolerance_for(r.dtype, atol, rtol) for r in floats]
    return max(t.atol for t in tolerances), max(t.rtol for t in tolerances)


def _clone(values: list) -> list:
    return [v.clone() if isinstance(v, torch.Tensor) else v for v in values]


def _detach(values: tuple) -> list:
    return [v.detach().clone() if isinstance(v, torch.Tensor) else v for v in values]


def _same(a: tuple, b: tuple) -> bool:
    if len(a) != len(b):
        return False
    for x, y in zip(a, b):
        if isinstance(x, torch.Tensor) and isinstance(y, torch.Tensor):
            if x.shape != y.shape or x.dtype != y.dtype or not torch.equal(x, y):
                return False
        elif x != y:
            return False
    return True


def _changed(after: Any, before: Any) -> bool:
    return isinstance(after, torch.Tensor) and _mutated([after], [before]) is not None


def _mutated(buffers: list, pristine: list) -> int | None:
    for index, (now, before) in enumerate(zip(buffers, pristine)):
        if isinstance(now, torch.Tensor):
            if now.shape != before.shape or now.dtype != before.dtype:
                return index
            if not torch.equal(now.nan_to_num(0.0), before.nan_to_num(0.0)) or not torch.equal(
                now.isnan(), before.isnan()
            ):
                return index
    return None


def _poison(references: tuple, device: torch.device) -> None:
    """Fills freed allocator blocks with NaN bytes so an output the candidate allocates but
    does not write cannot inherit a previous (correct) result."""
    sizes = [r.numel() * r.element_size() for r in references if isinstance(r, torch.Tensor)]
    blocks = [torch.empty(max(n, 1), dtype=torch.uint8, device=device).fill_(0xFF) for n in sizes]
    if device.type == "cuda":
        total = max(_POISON_MIN_BYTES, 2 * sum(sizes))
        blocks.append(torch.empty(total, dtype=torch.uint8, device=device).fill_(0xFF))
    del blocks


def _forward_error(exc: BaseException, trial: int, distribution: str) -> Reason:
    message = str(exc).strip().splitlines()
    first = message[0] if message else ""
    return Reason(
        "forward-error",
        f"forward raised {type(exc).__name__}: {first[:300]} (trial {trial + 1}, {distribution} inputs)",
    )


def _sticky(exc: BaseException) -> bool:
    text = str(exc).lower()
    return any(
        marker in text
        for marker in (
            "cuda error",
            "illegal memory access",
            "device-side assert",
            "cudaerror",
            "misaligned address",
        )
    )
