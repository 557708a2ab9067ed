"""One job in the judge (the trusted side): import the problem, make inputs, run the reference,
and for each candidate start a fresh sandboxed process (kbot.evaluate.remote) that receives
inputs as data and returns outputs; compare here; then (on a GPU, when asked) time the accepted
ones interleaved with the baselines. Candidate code never runs in this process."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import torch

from kbot.evaluate.aliasing import NOTHING_SHARED, Allowed
from kbot.evaluate.autotune_trials import every_config
from kbot.evaluate.between_cases import TRIALS as BETWEEN_TRIALS
from kbot.evaluate.between_cases import between_cases
from kbot.evaluate.compute_guard import extern_aten
from kbot.evaluate.correctness import CandidateCrashed, ReferenceFailed, check_case
from kbot.evaluate.input_places import coarser_per_case
from kbot.evaluate.processes import short
from kbot.evaluate.protocol import CandidateOutcome, Job
from kbot.evaluate.reference_state import signs_keep_finite, vary_constant_parameters
from kbot.evaluate.remote import (
    CandidateFailed,
    CandidateLost,
    CandidateProcess,
    HostError,
)
from kbot.evaluate.roofline import tensor_bytes
from kbot.evaluate.rounding import coarsest_rounding
from kbot.evaluate.step_clock import HOST_STEPS
from kbot.evaluate.verdict import CaseResult, Reason, Stage
from kbot.problem.runtime import build_on, import_file, init_inputs, seeded_inputs

Send = Callable[[dict[str, Any]], None]
# Starting a candidate's process (interpreter, torch, Triton, CUDA, a warm-up kernel) is not
# the candidate's time: the judge's deadline for a check is the candidate's limit plus this.
STARTUP_ALLOWANCE_S = 180.0


@dataclass
class Loaded:
    """A candidate that imported and was built, in its own process, with the reference whose
    parameters it loaded."""

    host: CandidateProcess
    reference: torch.nn.Module


class _Rejected(Exception):
    def __init__(self, stage: Stage, reason: Reason) -> None:
        super().__init__(reason.message)
        self.stage = stage
        self.reason = reason


class Deadline:
    def __init__(self, seconds: float) -> None:
        self.at = time.monotonic() + seconds

    def left(self) -> float:
        return max(0.01, self.at - time.monotonic())


def run_job(job: Job, state: Any, send: Send) -> dict[str, Any]:
    timed = job.time and state.device.type == "cuda"
    if not timed:  # else after the baselines, whose autotuning times kernels
        _start_processes(job, state)
    try:
        problem = _problem(job, state)
        if job.problem_sha256 not in state.warmed:
            _warm_reference(job, state, problem)
            state.warmed.add(job.problem_sha256)
    except _Rejected as rejected:
        outcome = CandidateOutcome(False, rejected.stage, (rejected.reason,))
        return {
            "outcomes": [outcome.to_json()] * len(job.candidates),
            "restart": False,
            "failure": rejected.reason.message,
        }
    baselines = None
    if timed:
        from kbot.evaluate.timing_job import prepare_baselines

        try:
            baselines = prepare_baselines(job, state, problem, send)
        except Exception as exc:  # trusted code failed: the evaluator's failure, not a verdict
            reason = Reason("evaluator-error", f"building the baselines failed: {short(exc)}")
            outcome = CandidateOutcome(False, Stage.INPUT, (reason,))
            return {
                "outcomes": [outcome.to_json()] * len(job.candidates),
                "restart": True,
                "failure": reason.message,
            }
        _start_processes(job, state)
    if not job.candidates:  # Evaluator.prepare: the first candidate's process was started
        return {"outcomes": [], "restart": False}
    outcomes: list[CandidateOutcome] = []
    loaded: list[Loaded | None] = []
    try:
        for position, candidate in enumerate(job.candidates):
            send(
                {
                    "event": "phase",
                    "name": f"check {candidate.name}",
                    "timeout_s": job.candidate_timeout_s + STARTUP_ALLOWANCE_S,
                }
            )
            to_come = len(job.candidates) - position - 1
            outcome, item = _check_candidate(
                job, state, problem, candidate.name, candidate.source, to_come,
                lambda step: send({"event": "step", "name": step}),
            )  # fmt: skip
            outcomes.append(outcome)
            loaded.append(item)
        if baselines is not None and any(o.accepted for o in outcomes):
            from kbot.evaluate.gpu_lock import gpu_measurement
            from kbot.evaluate.timing_job import time_outcomes

            state.hosts.settle()  # no process is starting while the judge times
            with gpu_measurement(state.device):  # nor measuring on this GPU
                outcomes = time_outcomes(job, state, problem, baselines, outcomes, loaded, send)
        outcomes = [_finish(o, item) for o, item in zip(outcomes, loaded)]
    finally:
        for item in loaded:
            if item is not None:
                item.host.close()
    return {"outcomes": [o.to_json() for o in outcomes], "restart": False}


def _start_processes(job: Job, state: Any) -> None:
    """Starts the processes this job's candidates will take (a prepare job's: the first
    candidate's) and those of the jobs after it, before the job's own work rather than at each
    candidate's check: a start-up takes about 6 s on an H200 host, which a shape-sweep point's
    0.5 s check could not hide when each point started the next one's."""
    state.hosts.ahead((len(job.candidates) or 1) + _after(job, state))


def _after(job: Job, state: Any) -> int:
    """Processes wanted for the jobs after this one: those announced (`upcoming`) and, on a GPU
    host, which has the cores to start one more, the next job's first candidate."""
    return job.upcoming + (1 if state.device.type == "cuda" else 0)


def _check_candidate(
    job: Job, state: Any, problem, name: str, source: str, to_come: int, step: Callable
) -> tuple[CandidateOutcome, Loaded | None]:
    """Loads and checks one candidate; `step(name)` tells the parent how far it got (an
    evaluation stopped at a budget's end says where the time went)."""
    try:
        host = state.hosts.take()
    except HostError as exc:
        reason = Reason("evaluator-error", str(exc))
        return CandidateOutcome(False, Stage.LOAD, (reason,)), None
    # The processes of the candidates to come start while this one is checked.
    state.hosts.ahead(to_come + _after(job, state))
    deadline = Deadline(job.candidate_timeout_s)
    try:
        step("loading (the reference's state sent to the candidate)")
        item = _load(job, state, problem, host, name, source, deadline)
        results = _check(job, state, problem, item, deadline, step)
        outcome = CandidateOutcome(True, Stage.CORRECTNESS, (), results)
    except _Rejected as rejected:
        outcome = CandidateOutcome(False, rejected.stage, (rejected.reason,))
        item = None
    except CandidateCrashed as crashed:
        outcome = CandidateOutcome(False, Stage.CORRECTNESS, (crashed.reason,))
        item = None
    except CandidateLost as lost:
        outcome = CandidateOutcome(False, Stage.CORRECTNESS, (lost.reason,))
        item = None
    outcome = replace(outcome, output=host.output())
    outcome = _sandbox_refusals(outcome, host)
    if item is None or not outcome.accepted or not job.time:
        host.close()
        return outcome, None
    return outcome, item


def _sandbox_refusals(outcome: CandidateOutcome, host: CandidateProcess) -> CandidateOutcome:
    """Anything the audit hooks refused rejects the candidate, whatever else it did."""
    if not host.refused:
        return outcome
    more = f" (and {len(host.refused) - 1} more)" if len(host.refused) > 1 else ""
    reason = Reason("sandbox", f"the candidate's process tried {host.refused[0]}{more}")
    return replace(outcome, accepted=False, reasons=(reason, *outcome.reasons))


def _finish(outcome: CandidateOutcome, item: Loaded | None) -> CandidateOutcome:
    if item is not None:
        outcome = _sandbox_refusals(outcome, item.host)
    if not outcome.accepted:
        return outcome
    return replace(outcome, stage=Stage.DONE)


def _problem(job: Job, state: Any):
    module = state.problems.get(job.problem_sha256)
    if module is not None:
        return module
    try:
        module = import_file(job.problem_path, prefix="kbot_problem")
    except BaseException as exc:  # the problem's own code: its failure is bad input
        raise _Rejected(
            Stage.INPUT, Reason("problem", f"importing the problem raised {short(exc)}")
        ) from None
    state.problems[job.problem_sha256] = module
    return module


def _warm_reference(job: Job, state: Any, problem) -> None:
    try:
        init = init_inputs(problem)
        model = build_on(state.device, lambda: problem.Model(*init), job.base_seed)
        model = model.to(state.device).eval()
        with torch.no_grad():
            for index, case in enumerate(job.cases):
                inputs = seeded_inputs(problem, case, job.base_seed, state.device)
                key = (job.problem_sha256, index)
                state.rounded_to[key] = coarsest_rounding(model, inputs)  # runs it once
        del model
        state.signs[job.problem_sha256] = signs_keep_finite(
            lambda: (
                build_on(state.device, lambda: problem.Model(*init), job.base_seed)
                .to(state.device)
                .eval()
            ),
            job.base_seed,
            lambda: seeded_inputs(
                problem, job.cases[0] if job.cases else {}, job.base_seed, state.device
            ),
        )
    except BaseException as exc:  # the problem's own code: its failure is bad input
        raise _Rejected(
            Stage.INPUT, Reason("problem", f"running the problem's Model raised {short(exc)}")
        ) from None


def _load(
    job: Job, state: Any, problem, host: CandidateProcess, name: str, source: str, deadline
) -> Loaded:
    path = host.folder / "source" / (_safe_name(name) or "candidate.py")
    path.write_text(source, encoding="utf-8")
    try:
        init = init_inputs(problem)
        reference = build_on(state.device, lambda: problem.Model(*init), job.base_seed)
    except BaseException as exc:
        raise _Rejected(
            Stage.INPUT, Reason("problem", f"building the problem's Model raised {short(exc)}")
        ) from None
    reference.to(state.device).eval()
    # A parameter a fresh Model holds constant (LayerNorm's ones) gets values a checkpoint
    # could hold, so a kernel must read it (kbot.evaluate.reference_state).
    vary_constant_parameters(
        reference, job.base_seed, signed=state.signs.get(job.problem_sha256, False)
    )
    # Non-persistent buffers (a rotary cos/sin cache) are state too: sent like the rest.
    shared = {**reference.state_dict(), **dict(reference.named_buffers())}
    try:
        host.request(
            "load",
            deadline.left(),
            source=str(path),
            init=init,
            state={k: v.detach() for k, v in shared.items()},
            persistent=list(reference.state_dict()),  # what a checkpoint loads
            adopt=job.adopt_state,
            extern_ops=list(job.extern_ops),
            mutates_inputs=job.mutates_inputs,
        )
    except CandidateFailed as failed:
        raise _Rejected(Stage.LOAD, failed.reason) from None
    except CandidateLost as lost:
        raise _Rejected(Stage.LOAD, lost.reason) from None
    return Loaded(host, reference)


def _safe_name(name: str) -> str:
    return "".join(c if c.isalnum() or c in "_.-" else "_" for c in name)


def _check(
    job: Job, state: Any, problem, item: Loaded, deadline, step: Callable
) -> tuple[CaseResult, ...]:
    """Each case's trials, a step each: the first also pays the candidate's compiles."""

    between = between_cases(job.cases)
    coarser = coarser_per_case(len(job.cases) + len(between), job.seeds)
    phases: dict[str, float] = {}  # seconds per phase of the trials (correctness.PHASES)
    host_steps: dict[str, float] = {}  # the same by the candidate's process (HOST_STEPS)

    def trials(index: int, case: dict, count: int, drawn: bool = False, kind: str = ""):
        try:
            outcome = check_case(
                problem,
                item.reference,
                _remote_call(item.host, index, deadline, host_steps),
                case,
                count,
                state.device,
                job.atol,
                job.rtol,
                job.mutates_inputs,
                state.rounded_to.get((job.problem_sha256, index)),
                job.scalar_positions,
                extern_aten(job.extern_ops),
                coarser[index],
                phases,
                kind,
            )
        except ReferenceFailed as exc:
            if drawn:  # a size the problem cannot make or its Model cannot take: not served
                return None
            raise _Rejected(Stage.INPUT, Reason("problem", str(exc))) from None
        if outcome.failure is not None:
            drawn_note = " (a size drawn between the cases: the guard admits it)" if drawn else ""
            raise _Rejected(
                Stage.CORRECTNESS,
                Reason(
                    outcome.failure.rule,
                    f"case {case or '(default)'}{drawn_note}: {outcome.failure.message}",
                ),
            )
        return outcome

    results = []
    for index, case in enumerate(job.cases):
        step(f"correctness trials, case {case}" if len(job.cases) > 1 else "correctness trials")
        outcome = trials(index, case, job.seeds)
        results.append(CaseResult(case=dict(case), correctness=outcome.correctness, timing=None))
    for extra, case in enumerate(between):
        step(f"correctness trials, case {case}, drawn between the cases")
        trials(len(job.cases) + extra, case, BETWEEN_TRIALS, drawn=True)
    refusal = every_config(
        item.host,
        deadline,
        step,
        lambda extra, kind: trials(*_nth(job.cases, extra), 1, kind=kind),
    )
    if refusal is not None:
        raise _Rejected(Stage.CORRECTNESS, refusal)
    # a step of no duration whose name says where the trials' time went
    step("correctness trials' phases: " + ", ".join(f"{k} {v:.1f} s" for k, v in phases.items()))
    if host_steps:
        step(
            "the candidate call's steps by its process's clock (its word, not checked): "
            + ", ".join(f"{k} {v:.1f} s" for k, v in host_steps.items())
        )
    return tuple(results)


def _nth(cases, extra: int) -> tuple[int, dict]:
    index = extra % len(cases)
    return index, cases[index]


def _remote_call(host: CandidateProcess, case_index: int, deadline, host_steps: dict[str, float]):
    """The candidate's forward as the correctness check calls it: inputs out, outputs and the
    inputs as they are after the call back. The seconds the process says each of its steps
    took add up in `host_steps` (numbers only, for the report)."""

    def call(
        inputs: list,
        poison_bytes: list[int],
        where: str,
        allowed: Allowed = NOTHING_SHARED,
        extern_counts: tuple[int, int, int, int] | None = None,
        grad_mode: str = "no_grad",
        shift: int = 0,
        train: bool = False,
        kind: str = "",
        frozen: bool = False,
        shared: tuple[int, int] | None = None,
    ) -> tuple[tuple, list, bool]:
        # What may come back: the inputs as they are after the call, and outputs like the
        # reference's (twice over, for a candidate that returns more than it should).
        host.max_reply_bytes = tensor_bytes(inputs) + 2 * sum(poison_bytes) + (64 << 20)
        try:
            reply = host.request(
                "call",
                deadline.left(),
                case=case_index,
                inputs=inputs,
                poison_bytes=poison_bytes,
                return_inputs=True,
                alias_ok=allowed.inputs,
                overlap_ok=allowed.outputs,
                state_view_ok=allowed.state,
                extern_calls=None if extern_counts is None else extern_counts[0],
                fused_adds=None if extern_counts is None else extern_counts[1],
                scaled_calls=None if extern_counts is None else extern_counts[2],
                extern_flops=None if extern_counts is None else extern_counts[3],
                grad_mode=grad_mode,
                shift=shift,
                train=train,
                kind=kind,
                frozen=frozen,
                shared=list(shared) if shared is not None else None,
            )
        except CandidateFailed as failed:
            reason = Reason(failed.reason.rule, f"{failed.reason.message} {where}".strip())
            raise CandidateCrashed(reason, failed.fatal) from None
        said = reply.get("steps")
        for name in HOST_STEPS:
            value = said.get(name) if isinstance(said, dict) else None
            if isinstance(value, (int, float)) and not isinstance(value, bool) and 0 <= value < 1e6:
                host_steps[name] = host_steps.get(name, 0.0) + float(value)
        return tuple(reply["outputs"]), list(reply["inputs_after"]), reply.get("sequence") is True

    return call
