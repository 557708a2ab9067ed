"""One job in the worker: import the problem, load each candidate, check it on every case,
then (on a GPU, when asked) time the accepted ones interleaved with the baselines."""

from __future__ import annotations

import re
import sys
import traceback
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from kbot.evaluate.correctness import CandidateCrashed, ReferenceFailed, check_case
from kbot.evaluate.integrity import changed
from kbot.evaluate.protocol import CandidateOutcome, Job
from kbot.evaluate.verdict import CaseResult, Reason, Stage
from kbot.problem.runtime import import_file, init_inputs, seeded_inputs

Send = Callable[[dict[str, Any]], None]


@dataclass
class Loaded:
    """A candidate that imported and was built: its module, ModelNew and the reference Model."""

    module_name: str
    candidate: torch.nn.Module
    reference: torch.nn.Module


class _Rejected(Exception):
    def __init__(self, stage: Stage, reason: Reason) -> None:
        super().__init__(reason.message)
        self.stage = stage
        self.reason = reason


def run_job(job: Job, state: Any, send: Send) -> dict[str, Any]:
    restart = False
    try:
        problem = _problem(job, state)
    except _Rejected as rejected:
        outcome = CandidateOutcome(False, rejected.stage, (rejected.reason,))
        return {"outcomes": [outcome.to_json()] * len(job.candidates), "restart": False}
    if job.problem_sha256 not in state.warmed:
        # The reference is trusted code: run it once per case before any candidate, so what it
        # changes in torch (a @torch.compile reference wraps torch.manual_seed, say) is part of
        # the fingerprint and never blamed on a candidate.
        try:
            _warm_reference(job, state, problem)
        except _Rejected as rejected:
            outcome = CandidateOutcome(False, rejected.stage, (rejected.reason,))
            return {"outcomes": [outcome.to_json()] * len(job.candidates), "restart": False}
        state.warmed.add(job.problem_sha256)
        from kbot.evaluate.integrity import fingerprint

        state.fingerprint = fingerprint()
    baselines = None
    if job.time and state.device.type == "cuda":
        from kbot.evaluate.integrity import fingerprint
        from kbot.evaluate.timing_job import prepare_baselines

        # Trusted code only (the problem and torch.compile) has run since the last check, so
        # what compiling changes in torch's namespaces is not the candidate's doing.
        try:
            baselines = prepare_baselines(job, state, problem, send)
        except Exception as exc:
            reason = Reason("problem", f"building the baselines failed: {_short(exc)}")
            outcome = CandidateOutcome(False, Stage.INPUT, (reason,))
            return {"outcomes": [outcome.to_json()] * len(job.candidates), "restart": True}
        state.fingerprint = fingerprint()
    outcomes: list[CandidateOutcome] = []
    loaded: list[Loaded | None] = []
    for candidate in job.candidates:
        send(
            {
                "event": "phase",
                "name": f"check {candidate.name}",
                "timeout_s": job.candidate_timeout_s,
            }
        )
        try:
            item = _load(job, state, problem, candidate.name, candidate.source)
            results = _check(job, state, problem, item)
            outcomes.append(CandidateOutcome(True, Stage.CORRECTNESS, (), results))
            loaded.append(item)
        except _Rejected as rejected:
            outcomes.append(CandidateOutcome(False, rejected.stage, (rejected.reason,)))
            loaded.append(None)
        except CandidateCrashed as crashed:
            outcomes.append(CandidateOutcome(False, Stage.CORRECTNESS, (crashed.reason,)))
            loaded.append(None)
            if crashed.sticky:
                restart = True
                break
    while len(outcomes) < len(job.candidates):
        outcomes.append(
            CandidateOutcome(
                False,
                Stage.LOAD,
                (Reason("crash", "not run: an earlier candidate left CUDA unusable"),),
            )
        )
    if not restart and baselines is not None:
        from kbot.evaluate.timing_job import time_outcomes

        send({"event": "phase", "name": "timing", "timeout_s": job.candidate_timeout_s})
        try:
            outcomes, restart = time_outcomes(
                job, state, problem, baselines, outcomes, loaded, send
            )
        except Exception as exc:  # a candidate failing under timing is rejected there
            reason = Reason("forward-error", f"failed while being timed: {_short(exc)}")
            outcomes = [
                CandidateOutcome(False, Stage.TIMING, (reason,), o.cases) if o.accepted else o
                for o in outcomes
            ]
            restart = _sticky_text(str(exc))
    outcomes = [_finish(o, state) for o in outcomes]
    altered = changed(state.fingerprint)
    if altered:
        reason = Reason(
            "module-patching",
            f"the run changed {', '.join(altered[:5])}" + (" ..." if len(altered) > 5 else ""),
        )
        outcomes = [
            CandidateOutcome(False, o.stage, (reason, *o.reasons), o.cases) for o in outcomes
        ]
        restart = True
    for item in loaded:
        if item is not None:
            sys.modules.pop(item.module_name, None)
    return {"outcomes": [o.to_json() for o in outcomes], "restart": restart}


def _finish(outcome: CandidateOutcome, state: Any) -> CandidateOutcome:
    if not outcome.accepted:
        return outcome
    stage = Stage.DONE
    return CandidateOutcome(True, stage, outcome.reasons, outcome.cases, outcome.notes)


def _problem(job: Job, state: Any):
    module = state.problems.get(job.problem_sha256)
    if module is not None:
        return module
    try:
        module = import_file(job.problem_path, prefix="kbot_problem")
    except BaseException as exc:  # the problem's own code: its failure is bad input
        raise _Rejected(
            Stage.INPUT, Reason("problem", f"importing the problem raised {_short(exc)}")
        ) from None
    state.problems[job.problem_sha256] = module
    return module


def _warm_reference(job: Job, state: Any, problem) -> None:
    try:
        torch.manual_seed(job.base_seed)
        model = problem.Model(*init_inputs(problem)).to(state.device).eval()
        with torch.no_grad():
            for case in job.cases:
                model(*seeded_inputs(problem, case, job.base_seed, state.device))
    except BaseException as exc:  # the problem's own code: its failure is bad input
        raise _Rejected(
            Stage.INPUT, Reason("problem", f"running the problem's Model raised {_short(exc)}")
        ) from None


def _load(job: Job, state: Any, problem, name: str, source: str) -> Loaded:
    folder = state.workdir / uuid.uuid4().hex[:12]
    folder.mkdir()
    # Triton reads a kernel's source through inspect, so the candidate must be a real file.
    path = folder / (re.sub(r"[^A-Za-z0-9_.-]", "_", name) or "candidate.py")
    path.write_text(source, encoding="utf-8")
    try:
        module = import_file(path, prefix="kbot_candidate")
    except BaseException as exc:
        raise _Rejected(
            Stage.LOAD, Reason("load", f"importing the candidate raised {_short(exc)}")
        ) from None
    model_new = getattr(module, "ModelNew", None)
    if not isinstance(model_new, type) or not issubclass(model_new, torch.nn.Module):
        raise _Rejected(Stage.LOAD, Reason("model-new", "ModelNew is not an nn.Module subclass"))
    try:
        init = init_inputs(problem)
        torch.manual_seed(job.base_seed)
        reference = problem.Model(*init)
    except BaseException as exc:
        raise _Rejected(
            Stage.INPUT, Reason("problem", f"building the problem's Model raised {_short(exc)}")
        ) from None
    try:
        torch.manual_seed(job.base_seed)
        candidate = model_new(*init)
    except BaseException as exc:
        raise _Rejected(
            Stage.LOAD, Reason("load", f"ModelNew(*get_init_inputs()) raised {_short(exc)}")
        ) from None
    _load_state(reference, candidate)
    reference.to(state.device).eval()
    candidate.to(state.device).eval()
    return Loaded(module.__name__, candidate, reference)


def _load_state(reference: torch.nn.Module, candidate: torch.nn.Module) -> None:
    # Non-persistent buffers (a rotary cos/sin cache) are state too: copied like the rest.
    theirs = {**reference.state_dict(), **dict(reference.named_buffers())}
    ours = {**candidate.state_dict(), **dict(candidate.named_buffers())}
    shared = {}
    for key, value in theirs.items():
        if key not in ours:
            continue
        if ours[key].shape != value.shape:
            raise _Rejected(
                Stage.LOAD,
                Reason(
                    "load",
                    f"ModelNew.{key} has shape {tuple(ours[key].shape)}; Model's is {tuple(value.shape)}",
                ),
            )
        if ours[key].dtype != value.dtype:
            raise _Rejected(
                Stage.LOAD,
                Reason(
                    "load", f"ModelNew.{key} has dtype {ours[key].dtype}; Model's is {value.dtype}"
                ),
            )
        shared[key] = value
    with torch.no_grad():
        for key, value in shared.items():
            ours[key].copy_(value)


def _check(job: Job, state: Any, problem, item: Loaded) -> tuple[CaseResult, ...]:
    results = []
    for case in job.cases:
        try:
            outcome = check_case(
                problem,
                item.reference,
                item.candidate,
                case,
                job.seeds,
                job.base_seed,
                state.device,
                job.atol,
                job.rtol,
                job.mutates_inputs,
            )
        except ReferenceFailed as exc:
            raise _Rejected(Stage.INPUT, Reason("problem", str(exc))) from None
        if outcome.failure is not None:
            raise _Rejected(
                Stage.CORRECTNESS,
                Reason(
                    outcome.failure.rule, f"case {case or '(default)'}: {outcome.failure.message}"
                ),
            )
        results.append(CaseResult(case=dict(case), correctness=outcome.correctness, timing=None))
    return tuple(results)


def _sticky_text(text: str) -> bool:
    lowered = text.lower()
    return any(m in lowered for m in ("illegal memory access", "device-side assert", "cuda error"))


def _short(exc: BaseException) -> str:
    """`TypeError: ... (file.py:12)`: the exception and where in user code it was raised."""
    frames = traceback.extract_tb(exc.__traceback__)
    where = ""
    for frame in reversed(frames):
        if "kbot/evaluate" not in frame.filename and "kbot/problem" not in frame.filename:
            where = f" ({frame.filename.rsplit('/', 1)[-1]}:{frame.lineno})"
            break
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {(text[0] if text else '')[:300]}{where}"
