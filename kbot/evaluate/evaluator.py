"""The evaluator: static rules in the parent, everything that runs candidate code in a pool
of worker children (one per GPU given, else one), each reused across jobs."""

from __future__ import annotations

import hashlib
import queue
import secrets
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from kbot.errors import UsageError
from kbot.evaluate.confine import Sandbox
from kbot.evaluate.credentials import held_credentials, mask, secret_values
from kbot.evaluate.options import EvalOptions
from kbot.evaluate.protocol import CandidateJob, CandidateOutcome, Job
from kbot.evaluate.sandbox import WorkerProcess, WorkerReply, WorkerStartError
from kbot.evaluate.static import check_source, problem_dtype_hint
from kbot.evaluate.verdict import Reason, Stage, Verdict
from kbot.problem.spec import ProblemSpec

_WARNED: set[str] = set()


def choose_sandbox(mode: str, allow_unsandboxed: bool) -> Sandbox:
    """Namespaces where the machine allows them. Otherwise candidates run as plain processes,
    which kbot says loudly, and refuses while a credential is in its environment unless the
    user opted out (`--allow-unsandboxed`, `KBOT_ALLOW_UNSANDBOXED=1`)."""
    from kbot.evaluate.confine import Probe, probe

    found = probe() if mode != "off" else Probe(False, "the sandbox was turned off")
    if found.available:
        return Sandbox(True)
    if mode == "namespaces":
        raise UsageError(f"the candidates' sandbox cannot be set up here: {found.why}")
    held = held_credentials()
    if held and not allow_unsandboxed:
        raise UsageError(
            f"candidates cannot be sandboxed here ({found.why}) and {', '.join(held[:3])} "
            "is set: unset it, or pass --allow-unsandboxed (KBOT_ALLOW_UNSANDBOXED=1) to run "
            "generated code unconfined beside it"
        )
    if found.why not in _WARNED:
        _WARNED.add(found.why)
        print(
            f"kbot: WARNING: candidates run WITHOUT an OS sandbox here: {found.why}",
            file=sys.stderr,
        )
    return Sandbox(False, found.why)


class Evaluator:
    """Owns the worker pool; use as a context manager and call `evaluate` many times."""

    def __init__(self, options: EvalOptions | None = None) -> None:
        self.options = options or EvalOptions()
        gpus: tuple[int | None, ...] = self.options.gpus or (None,)
        self.sandbox = choose_sandbox(self.options.sandbox, self.options.allow_unsandboxed)
        mode = "confined" if self.sandbox.confined else "plain"
        self._workers = [WorkerProcess(self.options.device, gpu, mode) for gpu in gpus]
        self.aborted_during: list[str] = []  # what busy workers were doing when aborted
        self._secrets = secret_values()
        self._idle: queue.Queue[WorkerProcess] = queue.Queue()
        for worker in self._workers:
            self._idle.put(worker)
        self._folder = Path(tempfile.mkdtemp(prefix="kbot-problems-"))

    def __enter__(self) -> Evaluator:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        for worker in self._workers:
            worker.close()

    def abort(self) -> None:
        """Kills every worker at once (with whatever its candidates left running) and closes:
        for an evaluation given up at a budget's end or on a signal. A busy worker cannot read
        the polite shutdown that close() sends first, so close() alone would wait its 5 s.
        What each busy worker was doing is kept in `aborted_during` for the run's notes."""
        now = time.monotonic()
        self.aborted_during = [
            f"{w.phase} for {now - w.phase_started:.0f} s" for w in self._workers if w.phase
        ]
        for worker in self._workers:
            worker.kill()
        self.close()

    @property
    def workers_spawned(self) -> int:
        """How many worker processes were started so far (respawns included)."""
        return sum(w.spawned for w in self._workers)

    def evaluate(
        self, problem: ProblemSpec, candidate_source: str, candidate_name: str = "candidate.py"
    ) -> Verdict:
        return self._evaluate_batch(problem, [(candidate_name, candidate_source)], remeasure=False)[
            0
        ]

    def evaluate_sweep(
        self,
        problem: ProblemSpec,
        candidate_source: str,
        candidate_name: str = "candidate.py",
        upcoming: int = 0,
    ) -> Verdict:
        """Correctness only, with ModelNew taking Model's state at Model's shapes: a point of the
        shape sweep (kbot.search.sweep), where `problem` is the run's problem at another size.
        `upcoming`: how many points the caller will send next (their processes start now)."""
        named = [(candidate_name, candidate_source)]
        return self._evaluate_batch(problem, named, remeasure=False, sweep=True, upcoming=upcoming)[
            0
        ]

    def evaluate_many(self, problem: ProblemSpec, sources: list[str]) -> list[Verdict]:
        """Evaluates independent candidates, spread over the pool's workers."""
        named = [(f"candidate_{i}.py", s) for i, s in enumerate(sources)]
        if len(self._workers) == 1:
            return [self.evaluate(problem, s, n) for n, s in named]
        with ThreadPoolExecutor(max_workers=len(self._workers)) as pool:
            return list(pool.map(lambda item: self.evaluate(problem, item[1], item[0]), named))

    def prepare(self, problem: ProblemSpec) -> str | None:
        """Starts every worker and has each build the problem's reference and, on a GPU, its
        baselines (torch.compile of every case) with no candidate: the one-time costs the first
        evaluation would otherwise pay inside a search's time budget. None when done, else the
        judge's failure (the first evaluation meets it again and reports it as its verdict)."""
        if len(self._workers) == 1:
            return self._prepare_one(problem)
        with ThreadPoolExecutor(max_workers=len(self._workers)) as pool:
            failures = list(pool.map(lambda _: self._prepare_one(problem), self._workers))
        return next((f for f in failures if f is not None), None)

    def _prepare_one(self, problem: ProblemSpec) -> str | None:
        worker = self._idle.get()
        try:
            try:
                info = worker.start()
            except WorkerStartError as exc:
                return str(exc)
            job = self._job(problem, [], info, sweep=False, base_seed=0)
            reply = worker.run(job)
        finally:
            self._idle.put(worker)
        if reply.result is None:
            return f"the judge {reply.failure or 'crash'}: {reply.message}"
        return reply.result.get("failure")

    def remeasure(self, problem: ProblemSpec, sources: list[str]) -> list[Verdict]:
        """Checks finalists again and, on a GPU, times them interleaved with each other and
        the baselines in one worker, so their comparison shares one noise environment."""
        named = [(f"finalist_{i}.py", s) for i, s in enumerate(sources)]
        return self._evaluate_batch(problem, named, remeasure=True)

    def _evaluate_batch(
        self,
        problem: ProblemSpec,
        named: list[tuple[str, str]],
        remeasure: bool,
        sweep: bool = False,
        upcoming: int = 0,
    ) -> list[Verdict]:
        hint = problem_dtype_hint(problem.source)
        verdicts: list[Verdict | None] = []
        runnable: list[CandidateJob] = []
        for name, source in named:
            reasons = check_source(source, problem.options, hint)
            if reasons:
                verdicts.append(Verdict(False, Stage.STATIC, reasons, device=self._device_label()))
            else:
                verdicts.append(None)
                runnable.append(CandidateJob(name, source))
        if not runnable:
            return [v for v in verdicts if v is not None]
        worker = self._idle.get()
        try:
            if remeasure:
                results = self._run(worker, problem, runnable)
            else:
                results = [
                    r
                    for i, c in enumerate(runnable)
                    for r in self._run(
                        worker, problem, [c], sweep, upcoming + len(runnable) - i - 1
                    )
                ]
        finally:
            self._idle.put(worker)
        it = iter(results)
        return [v if v is not None else next(it) for v in verdicts]

    def _device_label(self) -> str:
        for worker in self._workers:
            if worker.info.device_name:
                return worker.info.device_name
        return self.options.device

    def _run(
        self,
        worker: WorkerProcess,
        problem: ProblemSpec,
        candidates: list[CandidateJob],
        sweep: bool = False,
        upcoming: int = 0,
    ) -> list[Verdict]:
        try:
            info = worker.start()
        except WorkerStartError as exc:
            reason = Reason("worker", str(exc))
            return [
                Verdict(False, Stage.LOAD, (reason,), device=self._device_label())
                for _ in candidates
            ]
        base_seed = secrets.randbelow(2**30)
        job = self._job(problem, candidates, info, sweep, base_seed, upcoming)
        started = time.monotonic()
        reply = worker.run(job)
        return self._verdicts(reply, info, len(candidates), base_seed, time.monotonic() - started)

    def _job(
        self,
        problem: ProblemSpec,
        candidates: list[CandidateJob],
        info,
        sweep: bool,
        base_seed: int,
        upcoming: int = 0,
    ) -> Job:
        timed = self.options.time if self.options.time is not None else info.device == "cuda"
        return Job(
            kind="evaluate",
            problem_path=str(self._problem_path(problem)),
            problem_sha256=problem.source_sha256,
            cases=problem.cases,
            atol=problem.options.atol,
            rtol=problem.options.rtol,
            mutates_inputs=problem.options.mutates_inputs,
            extern_ops=tuple(problem.options.extern_ops),
            scalar_positions=problem.options.scalar_positions,
            candidates=tuple(candidates),
            seeds=self.options.seeds,
            time=timed and info.device == "cuda" and not sweep,
            compile_baselines=self.options.compile_baselines,
            candidate_timeout_s=self.options.timeout_s,
            baseline_timeout_s=self.options.baseline_timeout_s,
            timing_budget_s=self.options.timing_budget_s,
            base_seed=base_seed,
            adopt_state=sweep,
            upcoming=upcoming,
        )

    def _verdicts(
        self, reply: WorkerReply, info, count: int, base_seed: int, wall_s: float
    ) -> list[Verdict]:
        device = info.device_name or info.device
        if reply.result is None:
            # No candidate code runs in the judge (each candidate's own process has its own
            # deadline there), so a judge that timed out or crashed is the evaluator's failure
            # (the reference, a baseline's compilation, kbot itself): never a candidate's
            # verdict, never cached.
            reason = Reason(
                "evaluator-error", f"the judge {reply.failure or 'crash'}: {reply.message}"
            )
            stage = (
                Stage.TIMING
                if reply.phase in ("timing", "compile baselines")
                else Stage.CORRECTNESS
            )
            return [
                Verdict(
                    False,
                    stage,
                    (reason,),
                    device,
                    seeds=self.options.seeds,
                    wall_s=wall_s,
                    worker_output=mask(reply.output, self._secrets),
                    versions=dict(info.versions),
                    base_seed=base_seed,
                )
                for _ in range(count)
            ]
        verdicts = []
        for data in reply.result["outcomes"]:
            outcome = CandidateOutcome.from_json(data)
            verdicts.append(
                Verdict(
                    accepted=outcome.accepted,
                    stage=outcome.stage,
                    reasons=outcome.reasons + outcome.notes,
                    device=device,
                    cases=outcome.cases,
                    seeds=self.options.seeds,
                    wall_s=wall_s / max(count, 1),
                    worker_output=mask(outcome.output, self._secrets),
                    versions=dict(info.versions),
                    base_seed=base_seed,
                    steps_s=reply.steps,
                )
            )
        return verdicts

    def _problem_path(self, problem: ProblemSpec) -> Path:
        """The problem as a file the worker can import: the original when it is unchanged."""
        path = Path(problem.path).resolve()
        if (
            path.is_file()
            and hashlib.sha256(path.read_bytes()).hexdigest() == problem.source_sha256
        ):
            return path
        copy = self._folder / f"{problem.source_sha256[:16]}_{path.name or 'problem.py'}"
        if not copy.exists():
            copy.write_text(problem.source, encoding="utf-8")
        return copy


def evaluate(
    problem: ProblemSpec, candidate_source: str, options: EvalOptions | None = None
) -> Verdict:
    """One candidate with a short-lived evaluator (the search keeps an `Evaluator` instead)."""
    with Evaluator(options) as evaluator:
        return evaluator.evaluate(problem, candidate_source)
