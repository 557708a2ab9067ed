"""Dynamic correctness checks of one candidate on one case, on the judge's side.

Per trial: inputs drawn under a seed from the OS and the next value distribution; the reference
runs here on clones; the inputs travel to the candidate's process, which refills the SAME
buffers in place (so a candidate caching results by pointer or identity answers the previous
trial), or, in the trials `input_shifts` picks, a copy off the allocator's alignment
(kbot.evaluate.input_places), and poisons freed memory before calling forward; its outputs and its inputs as they are
after the call come back as data. Inputs must be unchanged; outputs are compared structurally
and numerically; an output identical across trials whose references differ is input-independent.
"""

from __future__ import annotations

import contextlib
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import torch

from kbot.evaluate.aliasing import reference_allows
from kbot.evaluate.compare import (
    as_outputs,
)
from kbot.evaluate.compute_guard import ExternCount
from kbot.evaluate.index_outputs import IndexSources
from kbot.evaluate.input_places import input_shifts
from kbot.evaluate.judgement import PreciseReference, casts_truncate, judge_outputs
from kbot.evaluate.module_modes import frozen_trials, same_in_both_modes, train_trials
from kbot.evaluate.repeats import PreviousTrial
from kbot.evaluate.shared_inputs import shared_pair, shared_trials
from kbot.evaluate.verdict import CaseCorrectness, Reason
from kbot.problem.runtime import DISTRIBUTIONS, apply_distribution, seeded_inputs


@dataclass(frozen=True)
class CaseOutcome:
    correctness: CaseCorrectness
    failure: Reason | None


class ReferenceFailed(Exception):
    """The problem's own Model failed on its inputs: the problem, not the candidate, is bad."""


class CandidateCrashed(Exception):
    """The candidate's forward failed in its process; carries the reason (and whether its CUDA
    context is now unusable)."""

    def __init__(self, reason: Reason, sticky: bool) -> None:
        super().__init__(reason.message)
        self.reason = reason
        self.sticky = sticky


def _check_scalars(inputs: list, positions: tuple[int, ...], case: dict[str, Any]) -> None:
    """The places the problem declares numbers (KBOT scalar_inputs) hold numbers: the static
    checks let a candidate compute with them in Python."""
    for place in positions:
        value = inputs[place] if place < len(inputs) else None
        if not isinstance(value, (int, float)):
            raise ReferenceFailed(
                f"get_inputs({case}) gives a {type(value).__name__} as forward argument "
                f"{place + 1}, which KBOT scalar_inputs declares a number; fix the declaration"
            )


# torch's autograd modes, by the name kbot.evaluate.host_session runs each under.
GRAD_MODES = ("no_grad", "enable_grad", "inference_mode")


def check_case(
    module: ModuleType,
    reference: torch.nn.Module,
    call: Callable[[list, list[int], str, bool], tuple[tuple, list, bool]],
    case: dict[str, Any],
    trials: int,
    device: torch.device,
    atol: float | None,
    rtol: float | None,
    mutates_inputs: bool = False,
    rounded_to: torch.dtype | None = None,
    scalar_positions: tuple[int, ...] = (),
    extern: frozenset[str] = frozenset(),
    coarser: tuple[int, ...] | None = None,
    phases: dict[str, float] | None = None,
    first_kind: str = "",
) -> CaseOutcome:
    """`call(inputs, poison_bytes, where, allowed, extern_counts, grad_mode, shift, train, kind,
    frozen, shared)` runs the
    candidate in its own process and returns its outputs, the inputs as they are after the
    call and whether forward returned a tuple or list (kbot.evaluate.jobs). `extern` names the aten ops of the declared extern ops: the
    candidate may make as many calls of them as the reference does, no more. The trials take
    the autograd modes in turn from a random one (GRAD_MODES), so that with three trials or
    more each mode is checked and none is predictable from the trial's number; the inputs'
    alignment is drawn per trial (input_shifts, with this case's part of the coarser
    alignments: `coarser`), and so is ModelNew's train or eval mode where the reference's
    result does not depend on it (kbot.evaluate.module_modes), and whether its parameters are
    frozen (`requires_grad` off, as serving engines load them); one trial may pass one tensor
    as two arguments (kbot.evaluate.shared_inputs). `phases`, where given, gathers
    the seconds the trials spend in each phase (PHASES), the device synchronised at each
    boundary, so a slow judgement says where its time went. The trials take the
    distributions in turn from `first_kind` (the first, `normal`, by default); the candidate's
    process is told each trial's, so its autotune configs meet every kind
    (kbot.evaluate.autotune_turns)."""
    clock = PhaseClock(phases, device)
    first = DISTRIBUTIONS.index(first_kind) if first_kind else 0
    distributions = tuple(DISTRIBUTIONS[(first + k) % len(DISTRIBUTIONS)] for k in range(trials))
    first_mode = secrets.randbelow(len(GRAD_MODES))
    shifts = input_shifts(trials, coarser)
    train = train_trials(trials, same_in_both_modes(reference))
    frozen = frozen_trials(trials, any(True for _ in reference.parameters()))
    shared = shared_trials(trials, mutates_inputs)
    worst_abs = worst_norm = 0.0
    previous: PreviousTrial | None = None
    failure: Reason | None = None
    tol_atol = tol_rtol = float("nan")
    precise = PreciseReference(reference)
    float32_trials = 0
    truncating = casts_truncate(device)
    for trial, distribution in enumerate(distributions):
        # Drawn here, from the OS: nothing the candidate's process sees predicts them.
        seed = secrets.randbits(31)
        grad_mode = GRAD_MODES[(first_mode + trial) % len(GRAD_MODES)]
        placed = f", inputs {shifts[trial]} bytes off alignment" if shifts[trial] else ""
        mode = "in train mode, " if train[trial] else ""
        mode += "parameters frozen, " if frozen[trial] else ""
        clock.start("inputs")
        try:
            drawn = seeded_inputs(module, case, seed, device)
        except Exception as exc:
            raise ReferenceFailed(
                f"get_inputs({case}) raised {type(exc).__name__}: {exc}"
            ) from None
        _check_scalars(drawn, scalar_positions, case)
        pristine = apply_distribution(drawn, distribution, seed)
        # forward's argument j is argument i this trial: one tensor passed twice
        pair = shared_pair(pristine) if shared[trial] else None
        if pair is not None:
            pristine[pair[0]] = pristine[pair[1]]
            mode += f"inputs {pair[1]} and {pair[0]} one tensor, "
        where = (
            f"(trial {trial + 1}/{trials}, {distribution} inputs{placed}, seed {seed}, "
            f"forward called {mode}under {grad_mode})"
        )
        reference_inputs = _clone(pristine)
        if pair is not None:
            reference_inputs[pair[0]] = reference_inputs[pair[1]]
        clock.start("reference")
        counted, indexed = ExternCount(extern), IndexSources()
        with torch.no_grad(), counted if extern else contextlib.nullcontext(), indexed:
            try:
                returned = reference(*reference_inputs)
                sequence = isinstance(returned, (tuple, list))
                references = as_outputs(returned)
                del returned
            except Exception as exc:
                raise ReferenceFailed(
                    f"the problem's Model raised {type(exc).__name__}: {exc}"
                ) from None
        index_sources = indexed.for_outputs(references)
        poison = [r.numel() * r.element_size() for r in references if isinstance(r, torch.Tensor)]
        # A candidate's output may share memory with its inputs, another output or the
        # module's state only where the reference's does (or the op writes into its inputs):
        # else it returned a view, not a result.
        allowed = reference_allows(references, reference_inputs, reference, mutates_inputs)
        if not mutates_inputs:
            # What the reference left in its inputs is not read again: a multi-GB input is not
            # held a third time through the candidate's call (KernelBench 36: 7 GB an input).
            del reference_inputs
        counts = (
            (counted.calls, counted.fused_adds, counted.scaled, counted.flops) if extern else None
        )
        clock.start("candidate call")
        outputs, after, said_sequence = call(
            pristine,
            poison,
            where,
            allowed,
            counts,
            grad_mode,
            shifts[trial],
            train[trial],
            distribution,
            frozen[trial],
            pair,
        )
        clock.start("judgement")
        if len(after) != len(pristine):
            failure = Reason("input-mutated", f"the inputs came back changed in number {where}")
            break
        if said_sequence != sequence:
            shape = {True: "a tuple or list", False: "a bare value"}
            failure = Reason(
                "output-structure",
                f"forward returned {shape[said_sequence]} where the reference returns "
                f"{shape[sequence]}: its callers index the result {where}",
            )
            break
        if mutates_inputs:
            # The op's results include what it writes into its inputs: compare those too.
            written = [i for i, v in enumerate(pristine) if _changed(reference_inputs[i], v)]
            outputs = (*outputs, *[after[i] for i in written])
            references = (*references, *[reference_inputs[i] for i in written])
            untouched = [i for i in range(len(pristine)) if i not in written]
            mutated = _mutated([after[i] for i in untouched], [pristine[i] for i in untouched])
            mutated = None if mutated is None else untouched[mutated]
        else:
            mutated = _mutated(after, pristine)
        del after  # compared; what the op wrote into its inputs is in `outputs` now
        if mutated is not None:
            failure = Reason("input-mutated", f"input {mutated} was modified in place {where}")
            break
        result, one_up = judge_outputs(
            outputs, references, pristine, None if mutates_inputs else precise,
            atol, rtol, truncating, rounded_to, index_sources,
        )  # fmt: skip
        float32_trials += one_up
        worst_abs = max(worst_abs, result.max_abs_error)
        worst_norm = max(worst_norm, result.max_rel_norm_error)
        if result.failure is not None:
            failure = Reason(result.failure.rule, f"{result.failure.message} {where}")
            break
        if previous is not None and previous.repeated_by(outputs, references):
            failure = Reason(
                "input-independent",
                f"the output is bit-identical to the previous trial's although the inputs and "
                f"the reference's output changed {where}",
            )
            break
        # the judge's own tensors (decoded from the candidate's reply): held, not copied; a
        # sample of them where they are large (kbot.evaluate.repeats)
        previous = PreviousTrial(outputs, references)
        tol_atol, tol_rtol = _tolerance_used(references, atol, rtol, truncating, rounded_to)
        # released before the next trial's inputs and reference run: a multi-GB input, output
        # and reference are not held beside the next ones
        del pristine, outputs, references
    clock.start(None)
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


# Where a correctness trial's time goes: drawing the inputs, the reference's run, the candidate's
# call (the inputs and outputs crossing between the processes with it), and the judgement
# (the comparisons, a run one precision up where one is needed, the input-independence check).
PHASES = ("inputs", "reference", "candidate call", "judgement")


class PhaseClock:
    """Adds the seconds between start() calls to the phase started before (none: nothing)."""

    def __init__(self, phases: dict[str, float] | None, device: torch.device) -> None:
        self.phases, self.device = phases, device
        self.current: str | None = None
        self.since = 0.0

    def start(self, phase: str | None) -> None:
        if self.phases is None:
            return
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)  # the reference's kernels end in its phase
        now = time.perf_counter()
        if self.current is not None:
            self.phases[self.current] = self.phases.get(self.current, 0.0) + now - self.since
        self.current, self.since = phase, now


def _tolerance_used(
    references: tuple, atol, rtol, truncating: bool, rounded_to: torch.dtype | None = None
) -> tuple[float, float]:
    from kbot.evaluate.compare import tolerance_for
    from kbot.evaluate.rounding import tolerance_dtype

    floats = [r for r in references if isinstance(r, torch.Tensor) and r.is_floating_point()]
    if not floats:
        return 0.0, 0.0
    tolerances = [
        tolerance_for(tolerance_dtype(r.dtype, rounded_to), atol, rtol, truncating) for r in floats
    ]
    return max(t.atol for t in tolerances), max(t.rtol for t in tolerances)


def _clone(values: list) -> list:
    return [v.clone() if isinstance(v, torch.Tensor) else v for v in values]


def _changed(after: Any, before: Any) -> bool:
    return isinstance(after, torch.Tensor) and _mutated([after], [before]) is not None


def _bits(tensor: torch.Tensor) -> torch.Tensor:
    return tensor.contiguous().view(torch.uint8)


def _mutated(buffers: list, pristine: list) -> int | None:
    for index, (now, before) in enumerate(zip(buffers, pristine)):
        if isinstance(now, torch.Tensor):
            if now.shape != before.shape or now.dtype != before.dtype:
                return index
            if not all(_same_values(a, b) for a, b in _pieces(now, before)):
                return index
    return None


# Elements compared at a time: nan_to_num of a 7 GB input whole took two more 7 GB temporaries
# beside the judge's other copies, past an 80 GB card's memory.
MUTATION_CHUNK = 1 << 26


def _pieces(now: torch.Tensor, before: torch.Tensor):
    """The two tensors in matching flat pieces where both are contiguous, else whole."""
    if not (now.is_contiguous() and before.is_contiguous()) or now.numel() <= MUTATION_CHUNK:
        yield now, before
        return
    flat_now, flat_before = now.reshape(-1), before.reshape(-1)
    for start in range(0, flat_now.numel(), MUTATION_CHUNK):
        stop = start + MUTATION_CHUNK
        yield flat_now[start:stop], flat_before[start:stop]


def _same_values(now: torch.Tensor, before: torch.Tensor) -> bool:
    """Equal values, NaN where NaN was (any payload), +0 and -0 alike."""
    if now.dtype.is_floating_point and now.element_size() == 1:
        # fp8, for which torch has no nan_to_num: compared bit for bit
        return torch.equal(_bits(now), _bits(before))
    if not now.dtype.is_floating_point and not now.is_complex():
        return torch.equal(now, before)
    return torch.equal(now.nan_to_num(0.0), before.nan_to_num(0.0)) and torch.equal(
        now.isnan(), before.isnan()
    )
