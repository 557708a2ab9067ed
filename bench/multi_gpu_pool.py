"""Parts 2-4 of bench/multi_gpu.py (issue 19), through the evaluator's real pool: where each
worker runs (its judge's own report and a candidate's process's), the same kernel timed on
both GPUs, and a batch in which one worker meets a crash, a hang and the loss of its judge.

`ObservedPool` is the evaluator itself with a log of which worker ran which candidates and
when; it changes nothing the judges or the candidates' processes see. On a CPU its pool is two
CPU workers, as tests/evaluate/test_worker_pool.py builds it.
"""

from __future__ import annotations

import os
import queue
import signal
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from multi_gpu_report import FaultRow, PairCase, Placement, parse_placement

from kbot.evaluate import EvalOptions, Evaluator
from kbot.evaluate.sandbox import WorkerProcess
from kbot.evaluate.verdict import Verdict
from kbot.problem import ProblemSpec

CANDIDATES = Path(__file__).resolve().parent / "multi_gpu_candidates"
# The judge is killed this long into the job: well inside it, which takes seconds (~7 s a
# candidate on an H200, ~3 s on two CPU cores: bench/results/evaluator.md, and this script's
# CPU run); the kill is cancelled if the job ends first, and the row then says so.
JUDGE_KILL_AFTER_S = 0.5


@dataclass(frozen=True)
class Observed:
    worker: int  # position in the pool
    names: tuple[str, ...]
    started_s: float  # from the pool's creation
    ended_s: float
    judge_killed: bool = False


class ObservedPool(Evaluator):
    def __init__(self, options: EvalOptions, cpu_pool: bool = False) -> None:
        super().__init__(options)
        if cpu_pool:  # no worker has started yet: the handles are free to replace
            for worker in self._workers:
                worker.close()
            mode = "confined" if self.sandbox.confined else "plain"
            self._workers = [WorkerProcess("cpu", None, mode) for _ in range(2)]
            self._idle = queue.Queue()
            for worker in self._workers:
                self._idle.put(worker)
        self.epoch = time.monotonic()
        self.log: list[Observed] = []
        self.kill_judge_during: set[str] = set()  # candidate names whose judge is killed
        self._lock = threading.Lock()

    @property
    def workers(self) -> list[WorkerProcess]:
        return list(self._workers)

    def _run(self, worker, problem, candidates, sweep=False, upcoming=0):
        names = tuple(c.name for c in candidates)
        fired = threading.Event()
        timer = None
        if self.kill_judge_during.intersection(names):
            timer = threading.Timer(JUDGE_KILL_AFTER_S, self._kill_judge, (worker, fired))
            timer.start()
        started = time.monotonic() - self.epoch
        try:
            return super()._run(worker, problem, candidates, sweep, upcoming)
        finally:
            if timer is not None:
                timer.cancel()
            entry = Observed(
                self._workers.index(worker),
                names,
                started,
                time.monotonic() - self.epoch,
                fired.is_set(),
            )
            with self._lock:
                self.log.append(entry)

    @staticmethod
    def _kill_judge(worker: WorkerProcess, fired: threading.Event) -> None:
        """SIGKILL to the judge alone, from outside, as an OOM killer or a driver fault would:
        the parent learns of it from the closed pipe, not from its own kill()."""
        pid = worker.pid
        if pid is not None:
            os.kill(pid, signal.SIGKILL)
            fired.set()

    def where(self, name: str, since: int = 0) -> Observed | None:
        """The last job since log position `since` that carried candidate `name`."""
        with self._lock:
            found = [o for o in self.log[since:] if name in o.names]
        return found[-1] if found else None


def candidate_source(name: str) -> str:
    return (CANDIDATES / f"{name}.py").read_text(encoding="utf-8")


def check_pinning(pool: ObservedPool, problem: ProblemSpec) -> list[Placement]:
    """Each worker's judge's own report (WorkerInfo.placement, from its `ready`), and the line
    the probe candidate printed in one of that worker's candidates' processes."""
    probe = candidate_source("probe")
    since = len(pool.log)
    count = 2 * len(pool.workers)
    verdicts = pool.evaluate_many(problem, [probe] * count)
    printed: dict[int, list[dict[str, str]]] = {}
    failed: dict[int, str] = {}  # what stopped a probe before it printed
    for index, verdict in enumerate(verdicts):
        observed = pool.where(f"candidate_{index}.py", since)
        if observed is None:
            continue
        facts = parse_placement(verdict.worker_output)
        if facts is not None:
            printed.setdefault(observed.worker, []).append(facts)
        else:
            reasons = "; ".join(str(r) for r in verdict.reasons) or verdict.worker_output[-200:]
            failed.setdefault(observed.worker, reasons[:300])
    placements = []
    for position, worker in enumerate(pool.workers):
        seen = printed.get(position, [])
        candidate = seen[0] if seen else None
        if any(facts != seen[0] for facts in seen):
            candidate = {"error": f"its probes disagree: {seen}"}
        elif candidate is None and position in failed:
            candidate = {"error": failed[position]}
        gpu = worker.gpu if worker.gpu is not None else position
        placements.append(Placement(gpu, dict(worker.info.placement), candidate))
    return placements


def _largest(verdict: Verdict):
    """The case whose kernel takes longest: the least launch-bound of the verdict's timings."""
    timed = [c for c in verdict.cases if c.timing is not None]
    return max(timed, key=lambda c: c.timing.candidate_graph.median_us) if timed else None


def _label(case: dict) -> str:
    return ", ".join(f"{k}={v}" for k, v in case.items()) or "default"


def time_pair(
    pool: ObservedPool, problem: ProblemSpec, kernel: str, rounds: int
) -> tuple[list[PairCase], list[str]]:
    """The kernel evaluated on both workers at once, `rounds` times; per case and GPU the
    CUDA-graph median of each round's verdict. Also what went wrong, one line each."""
    medians: dict[str, dict[int, list[float]]] = {}
    spreads: dict[str, dict[int, list[float]]] = {}
    widths: dict[str, float] = {}
    notes: list[str] = []
    for round_index in range(rounds):
        since = len(pool.log)
        verdicts = pool.evaluate_many(problem, [kernel] * len(pool.workers))
        for index, verdict in enumerate(verdicts):
            observed = pool.where(f"candidate_{index}.py", since)
            gpu = pool.workers[observed.worker].gpu if observed else None
            if gpu is None or not verdict.accepted or not verdict.timed:
                why = "; ".join(str(r) for r in verdict.reasons)[:200] or "not timed"
                notes.append(f"round {round_index + 1}, copy {index}: {why}")
                continue
            for case in verdict.cases:
                if case.timing is None:
                    continue
                stat = case.timing.candidate_graph
                label = _label(case.case)
                medians.setdefault(label, {}).setdefault(gpu, []).append(stat.median_us)
                spreads.setdefault(label, {}).setdefault(gpu, []).append(stat.spread)
                width = 100.0 * stat.median_half_width_us / stat.median_us
                widths[label] = max(widths.get(label, 0.0), width)
    cases = [
        PairCase(label, by_gpu, spreads[label], widths.get(label))
        for label, by_gpu in medians.items()
    ]
    return cases, notes


def run_faults(
    pool: ObservedPool,
    problem: ProblemSpec,
    kernel: str,
    plan: list[str],
    clean: list[PairCase] | None = None,
) -> tuple[list[FaultRow], int]:
    """One batch laid out by `plan` (roles: good, crash, hang, judge-kill) over the pool; the
    rows in plan order and how many judges were started again meanwhile. `clean`: part 3's
    measurements of the same kernel, which each good verdict's largest case is compared with."""
    reference = {case.label: case for case in clean or ()}
    sources = {
        "good": kernel,
        "judge-kill": kernel,
        "crash": candidate_source("crash"),
        "hang": candidate_source("hang"),
    }
    pool.kill_judge_during = {f"candidate_{i}.py" for i, r in enumerate(plan) if r == "judge-kill"}
    since, spawned = len(pool.log), pool.workers_spawned
    batch_start = time.monotonic() - pool.epoch
    try:
        verdicts = pool.evaluate_many(problem, [sources[role] for role in plan])
    finally:
        pool.kill_judge_during = set()
    rows = []
    for index, (role, verdict) in enumerate(zip(plan, verdicts)):
        observed = pool.where(f"candidate_{index}.py", since)
        position = observed.worker if observed else -1
        gpu = pool.workers[position].gpu if observed else None
        first = verdict.reasons[0] if verdict.reasons else None
        largest = _largest(verdict)
        stat = largest.timing.candidate_graph if largest is not None else None
        before = reference.get(_label(largest.case)) if largest is not None else None
        rows.append(
            FaultRow(
                index=index,
                role=role,
                gpu=gpu,
                worker=position,
                accepted=verdict.accepted,
                rule=first.rule if first is not None and not verdict.accepted else "",
                message=first.message if first is not None else "",
                started_s=(observed.started_s - batch_start) if observed else 0.0,
                ended_s=(observed.ended_s - batch_start) if observed else 0.0,
                timed=verdict.timed,
                median_us=stat.median_us if stat is not None else None,
                spread=stat.spread if stat is not None else None,
                clean_median_us=before.median_us(gpu) if before and gpu is not None else None,
                clean_spread=before.spread(gpu) if before and gpu is not None else None,
                judge_killed=bool(observed and observed.judge_killed),
            )
        )
    return rows, pool.workers_spawned - spawned
