"""The judge's checks of a candidate's timed CUDA graph (kbot.evaluate.timing_job): its claimed
time against the judge's clock, its answer on fresh inputs and again with a few of their values
changed, and the answer of the call that placed the timed inputs; each judged as the
correctness trials judge."""

from __future__ import annotations

import secrets

import torch

from kbot.evaluate.compare import as_outputs
from kbot.evaluate.index_outputs import IndexSources
from kbot.evaluate.judgement import PreciseReference, casts_truncate, judge_outputs
from kbot.evaluate.protocol import Job
from kbot.evaluate.remote import CandidateFailed, CandidateLost
from kbot.evaluate.remote_timing import RemoteImplementation
from kbot.evaluate.verdict import Reason
from kbot.problem.runtime import apply_distribution, seeded_inputs

# partly_changed: the share of a floating-point input's values taken from another draw
CHANGED_SHARE = 1 / 64


def timing_reason(reason: Reason, case, rule_if_lost: str) -> Reason:
    rule = reason.rule if reason.rule not in ("protocol",) else rule_if_lost
    return Reason(rule, f"case {case}: {reason.message}")


def audit_candidate(
    impl: RemoteImplementation,
    inputs: list,
    model,
    problem,
    case,
    job: Job,
    rounded_to: torch.dtype | None,
) -> Reason | None:
    """The timed graph must compute the answer on fresh inputs (not just the calls made during
    the correctness checks), and its claimed time must agree with the judge's clock."""
    try:
        clock = impl.clock_check()
        if clock is not None:
            return Reason(clock.rule, f"case {case}: {clock.message}")
        fresh = _fresh(problem, case, inputs_device(inputs))
        # any one of the graph's calls, drawn here: a graph that computes only the calls the
        # trials made (copy 0) and skips the rest would time less work than the op
        copy = secrets.randbelow(impl.calls_per_replay)
        outputs = impl.recheck(fresh, copy)
    except (CandidateFailed, CandidateLost) as exc:
        return timing_reason(exc.reason, case, "timing")
    failure = judged(
        outputs, fresh, model, job, case, rounded_to,
        "the timed CUDA graph is wrong on fresh inputs",
    )  # fmt: skip
    if failure is not None:
        return failure
    # The same call again on those inputs with a few values changed: a graph that keeps what
    # it answered and checks a sample of its inputs to reuse it (red-team round twelve's
    # memo, which timed less work than the op) answers the last values here.
    changed = partly_changed(fresh, _fresh(problem, case, inputs_device(fresh)))
    try:
        outputs = impl.recheck(changed, copy)
    except (CandidateFailed, CandidateLost) as exc:
        return timing_reason(exc.reason, case, "timing")
    return judged(
        outputs, changed, model, job, case, rounded_to,
        "the timed CUDA graph is wrong once a few of its inputs' values change",
    )  # fmt: skip


def _fresh(problem, case, device) -> list:
    """The case's inputs drawn under a seed of the OS's, as the problem draws them."""
    seed = secrets.randbits(31)
    return apply_distribution(seeded_inputs(problem, case, seed, device), "normal", seed)


def partly_changed(inputs: list, other: list) -> list:
    """`inputs` with a drawn share (CHANGED_SHARE, at least one value) of each floating-point
    tensor's values taken from `other` (another draw of the same case), so a value's domain is
    kept; everything else as in `inputs`."""
    changed = []
    for value, new in zip(inputs, other):
        if not (isinstance(value, torch.Tensor) and value.is_floating_point() and value.numel()):
            changed.append(value)
            continue
        draws = torch.Generator(device=value.device).manual_seed(secrets.randbits(62))
        picked = torch.rand(value.shape, generator=draws, device=value.device) < CHANGED_SHARE
        picked.view(-1)[secrets.randbelow(value.numel())] = True
        changed.append(torch.where(picked, new.to(value.dtype), value))
    return changed


def judged(
    outputs, inputs: list, model, job: Job, case, rounded_to: torch.dtype | None, what: str
) -> Reason | None:
    """`outputs` judged against Model on `inputs` as the correctness trials judge them: the
    same tolerances, the reference's rounding, the retry one precision up (a different rule
    here rejected what correctness accepted)."""
    indexed = IndexSources()
    with torch.no_grad(), indexed:
        references = as_outputs(
            model(*[v.clone() if isinstance(v, torch.Tensor) else v for v in inputs])
        )
    result, _ = judge_outputs(
        tuple(outputs), references, inputs,
        None if job.mutates_inputs else PreciseReference(model),
        job.atol, job.rtol, casts_truncate(inputs_device(inputs)), rounded_to,
        indexed.for_outputs(references),
    )  # fmt: skip
    if result.failure is None:
        return None
    return Reason(result.failure.rule, f"case {case}: {what}: {result.failure.message}")


def inputs_device(inputs: list):
    for value in inputs:
        if isinstance(value, torch.Tensor):
            return value.device
    return torch.device("cuda")
