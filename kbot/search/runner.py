"""One optimize run end to end: store, evaluator, search loop, finalists, run directory.

`optimize()` is the Python API behind `kbot optimize`, and what `kbot run` calls per problem.
"""

from __future__ import annotations

import dataclasses
import enum
import secrets
import time
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kbot.errors import UsageError
from kbot.evaluate.options import EvalOptions
from kbot.evaluate.verdict import Verdict
from kbot.problem import ProblemSpec
from kbot.propose.base import Proposer
from kbot.propose.llm.settings import LLMSettings
from kbot.search.archive import Entry
from kbot.search.artifacts import prepare_run_dir, write_winner
from kbot.search.budget import STOP_MESSAGES, StopReason, StopRequest
from kbot.search.by_size import original_path_of
from kbot.search.environment import environment_key, resolve_device
from kbot.search.evaluating import CandidateEvaluator
from kbot.search.fallback import fallback_candidate
from kbot.search.final import (
    BySize,
    by_size_candidate,
    final_by_size,
    final_winner,
    sweep_summary,
    sweep_winner,
)
from kbot.search.inflight import Abandoned, prepare_evaluator
from kbot.search.loop import LoopResult, SearchLoop
from kbot.search.options import Budget, OptimizeOptions
from kbot.search.progress import NullProgress, Progress
from kbot.search.report import build_report
from kbot.search.store import Store
from kbot.search.sweep import SWEEP_FOLDER, sweep_points
from kbot.search.trajectories import FILE_NAME as TRAJECTORIES
from kbot.search.trajectories import TrajectoryLog

STORE_NAME = "kbot.sqlite"

EvaluatorFactory = Callable[[str, tuple[int, ...], int], AbstractContextManager]
ProposerFactory = Callable[[Sequence[str]], list[Proposer]]


class OptimizeStatus(str, enum.Enum):
    IMPROVED = "improved"  # accepted and faster than torch.compile above the noise floor
    NOT_FASTER = "not_faster"  # accepted, timed, but not faster than the baseline
    NOT_TIMED = "not_timed"  # accepted on a CPU (correctness only, "not timed (no GPU)")
    NO_ACCEPTED = "no_accepted"  # no candidate passed the evaluator
    INTERRUPTED = "interrupted"  # Ctrl-C: resume with --resume RUN_ID


@dataclass(frozen=True)
class OptimizeResult:
    run_id: str
    run_dir: Path
    status: OptimizeStatus
    message: str
    stop_reason: StopReason
    best_candidate_path: Path | None  # the winning ModelNew file, when there is one
    kernel_path: Path | None
    report_json_path: Path | None
    report_md_path: Path | None
    verdict: Verdict | None  # the winner's (re-measured on a GPU) verdict
    fitness: str  # the winner's fitness in words
    candidates: int  # evaluated in this run (fresh + cached)
    accepted: int
    fresh_evaluations: int  # evaluator calls made by this process
    stop_signal: str | None = None  # "SIGINT" (Ctrl-C) or "SIGTERM" that stopped the run

    @property
    def has_winner(self) -> bool:
        return self.best_candidate_path is not None


def optimize(
    problem: ProblemSpec,
    options: OptimizeOptions,
    work_dir: Path,
    target: dict[str, Any] | None = None,
    *,
    resume_run_id: str | None = None,
    evaluator_factory: EvaluatorFactory | None = None,
    proposer_factory: ProposerFactory | None = None,
    progress: Progress | None = None,
) -> OptimizeResult:
    """Searches for the best candidate of `problem`; writes `<work_dir>/runs/<run_id>/`.

    With `resume_run_id`, continues that run with its stored options (only the budget is
    taken from `options`), reusing every recorded proposal and verdict."""
    from kbot.propose.registry import make_proposers

    work_dir = Path(work_dir)
    progress = progress or NullProgress()
    device, device_name = resolve_device(options.device, options.gpus)
    # SIGINT/SIGTERM over the whole run: the evaluation in flight is abandoned and the run
    # still writes its store, report and envelope with what it measured
    with StopRequest() as stop, Store(work_dir / STORE_NAME) as store:
        if resume_run_id is not None:
            run = store.run(resume_run_id)
            if run.problem_sha256 != problem.source_sha256:
                raise UsageError(
                    f"run {resume_run_id} optimized a different version of {problem.path} "
                    f"(sha256 {run.problem_sha256[:12]}); resume with its problem.py"
                )
            options = dataclasses.replace(options_from_json(run.options), budget=options.budget)
            target = target if target is not None else run.target
            run_id, spent_before_s = run.run_id, run.spent_s
            store.update_run(run_id, status="running", stop_reason=None)
        else:
            run_id = new_run_id(problem)
            spent_before_s = 0.0
        env_key = environment_key(
            device_name, evaluation_options(device, options.gpus, options.seeds)
        )
        if resume_run_id is None:
            store.create_run(run_id, problem, env_key, options_to_json(options), target)
        run_dir = prepare_run_dir(work_dir, run_id, problem, target)
        proposers = (
            proposer_factory(options.proposers)
            if proposer_factory is not None
            else make_proposers(options.proposers, llm=_llm_for_pool(options))
        )
        progress.started(run_id, problem.name, device_name)
        factory = evaluator_factory or default_evaluator
        # The sweep's sizes and their inputs (child processes, before the search's clock starts)
        points = sweep_points(problem, run_dir / SWEEP_FOLDER, options.sweep_points)
        with factory(device, options.gpus, options.seeds) as evaluator:
            loop = SearchLoop(
                store, run_id, problem, env_key, device, options, proposers, evaluator,
                progress=progress, spent_before_s=spent_before_s, stop_request=stop,
                trajectories=TrajectoryLog(run_dir / TRAJECTORIES),
            )  # fmt: skip
            # torch.compile's own kernels (the inductor proposer's capture) compile while the
            # evaluator builds the baselines, before the budget's clock starts
            loop.start_slow_seeds()
            prepared = prepare_evaluator(evaluator, problem, stop)
            loop.tracker.sweep_points = len(points[0])  # kept back from the time budget
            result = loop.run()
            if prepared:
                result.notes.insert(0, prepared)
            finalists: list[tuple[Entry, Verdict]] = []
            if result.stop_reason is not StopReason.INTERRUPTED and not stop.requested:
                try:
                    finalists = _remeasure_finalists(
                        store, run_id, problem, env_key, loop, result, options.finalists
                    )
                except Abandoned as abandoned:  # the first verdicts stand
                    _abandoned(
                        result, abandoned, "finalists not re-measured", "the time budget ran out"
                    )
            sized = None
            if result.stop_reason is not StopReason.INTERRUPTED and not stop.requested:
                try:
                    sized = by_size_candidate(store, run_id, problem, env_key, loop, result,
                                              finalists, options.finalists,
                                              lambda: factory(device, options.gpus,
                                                              options.seeds))  # fmt: skip
                except Abandoned as abandoned:  # the single winner stands
                    _abandoned(
                        result,
                        abandoned,
                        "per-size module not evaluated",
                        "the time budget ran out",
                    )
            # a kernel compiled for the problem's sizes gets a generic one beside it, for the
            # other models' sizes the sweep checks (none to check: nothing to widen)
            if (
                points[0]
                and result.stop_reason is not StopReason.INTERRUPTED
                and not stop.requested
            ):
                try:
                    sized = fallback_candidate(store, run_id, problem, env_key, loop, result,
                                               finalists, options.finalists, sized,
                                               lambda: factory(device, options.gpus,
                                                               options.seeds),
                                               original_path_of(target))  # fmt: skip
                except Abandoned as abandoned:  # the specialised winner stands
                    _abandoned(
                        result, abandoned, "generic fallback not evaluated", "its time ran out"
                    )
            swept = None
            if result.stop_reason is not StopReason.INTERRUPTED and not stop.requested:
                swept = sweep_winner(store, run_id, env_key, loop, result,
                                     final_winner(result, finalists, options.finalists, sized),
                                     points, lambda: factory(device, options.gpus, options.seeds))  # fmt: skip
                if swept and swept.get("points"):
                    progress.note(f"other models' sizes: {sweep_summary(swept)} (report.md)")
            result.elapsed_s = loop.tracker.elapsed_s()
            store.update_run(run_id, spent_s=result.elapsed_s)
        finished = _finish(store, run_id, run_dir, problem, device_name, options, result,
                           finalists, progress, sized, target, swept)  # fmt: skip
        return dataclasses.replace(finished, stop_signal=stop.signal_name)


def _abandoned(result: LoopResult, abandoned: Abandoned, what: str, ran_out: str) -> None:
    """A step after the loop abandoned at the time budget's end (`ran_out`) or on a stop
    request, which interrupts the run: the note says which; what came before it stands."""
    result.notes.append(f"{what}: {ran_out if abandoned.why == 'time' else 'stopped'}")
    if abandoned.why == "stop":
        result.stop_reason = StopReason.INTERRUPTED


def evaluation_options(device: str, gpus: tuple[int, ...], seeds: int) -> EvalOptions:
    """The evaluator's options for a run: what `default_evaluator` runs with and what the
    verdict cache key records. On a CPU (`resolve_device` found no GPU) there is no GPU pool."""
    return EvalOptions(device=device, gpus=gpus if device != "cpu" else (), seeds=seeds)


def default_evaluator(
    device: str, gpus: tuple[int, ...], seeds: int
) -> AbstractContextManager[CandidateEvaluator]:
    from kbot.evaluate import Evaluator

    return Evaluator(evaluation_options(device, gpus, seeds))


def _llm_for_pool(options: OptimizeOptions) -> LLMSettings:
    """Concurrency 0 means as many requests in flight as the evaluator pool has GPUs."""
    if options.llm.concurrency:
        return options.llm
    return dataclasses.replace(options.llm, concurrency=max(1, len(options.gpus)))


def new_run_id(problem: ProblemSpec) -> str:
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime())
    safe = "".join(c if c.isalnum() or c in "-_" else "-" for c in problem.name)[:40]
    return f"{safe}-{stamp}-{secrets.token_hex(2)}"


def options_to_json(options: OptimizeOptions) -> dict[str, Any]:
    return dataclasses.asdict(options)


def options_from_json(data: dict[str, Any]) -> OptimizeOptions:
    fields = dict(data)
    fields["budget"] = Budget(**fields["budget"])
    fields["proposers"] = tuple(fields["proposers"])
    fields["gpus"] = tuple(fields["gpus"])
    fields["llm"] = LLMSettings.from_json(fields.get("llm"))
    return OptimizeOptions(**fields)


def load_run_options(work_dir: Path, run_id: str) -> tuple[OptimizeOptions, str, str]:
    """A stored run's options, problem path and problem sha256 (for `--resume`)."""
    path = Path(work_dir) / STORE_NAME
    if not path.is_file():
        raise UsageError(f"--resume {run_id}: no store at {path}; pass the run's --work-dir")
    with Store(path) as store:
        run = store.run(run_id)
    return options_from_json(run.options), run.problem_path, run.problem_sha256


def _remeasure_finalists(
    store: Store,
    run_id: str,
    problem: ProblemSpec,
    env_key: str,
    loop: SearchLoop,
    result: LoopResult,
    count: int,
) -> list[tuple[Entry, Verdict]]:
    """On a GPU the best few are timed again, interleaved, before one is declared the winner;
    on a CPU nothing is timed, so the first verdicts stand. Bounded like every evaluation: the
    time budget's end or a signal abandons it (Abandoned)."""
    elites = result.archive.elites(count)
    if not elites or not any(e.fitness.timed for e in elites):
        return []
    # A re-measurement the budget's end would cut short kills the evaluator with it, and the
    # per-size module after it would wait for a fresh one's start and baselines (H100,
    # gelu_tanh_and_mul at 150 s: 20 s left, 25 s an evaluation; the module was abandoned).
    short = loop.tracker.short_of_an_evaluation()
    if short is not None:
        left, median = short
        result.notes.append(
            f"finalists not re-measured: {left:.0f} s of the time budget left, under one "
            f"evaluation ({median:.0f} s); the first verdicts stand"
        )
        return []
    sources = [e.source for e in elites]
    evaluation = loop.evaluation
    verdicts = list(evaluation.bounded(lambda: evaluation.evaluator.remeasure(problem, sources)))
    for entry, verdict in zip(elites, verdicts):
        store.put_verdict(
            run_id, entry.sha256, problem.source_sha256, env_key, verdict, kind="remeasure"
        )
    return list(zip(elites, verdicts))


def _finish(
    store: Store,
    run_id: str,
    run_dir: Path,
    problem: ProblemSpec,
    device_name: str,
    options: OptimizeOptions,
    result: LoopResult,
    finalists: list[tuple[Entry, Verdict]],
    progress: Progress,
    sized: BySize | None = None,
    target: dict[str, Any] | None = None,
    swept: dict[str, Any] | None = None,
) -> OptimizeResult:
    accepted = sum(1 for e in result.entries.values() if e.fitness.accepted)
    stop_message = STOP_MESSAGES[result.stop_reason].format(
        patience=options.patience, **dataclasses.asdict(options.budget)
    )
    common = dict(
        run_id=run_id,
        run_dir=run_dir,
        stop_reason=result.stop_reason,
        candidates=len(result.entries),
        accepted=accepted,
        fresh_evaluations=result.fresh_evaluations,
    )
    interrupted = result.stop_reason is StopReason.INTERRUPTED
    winner = final_winner(result, finalists, options.finalists, sized)
    by_size = final_by_size(problem, winner, sized, original_path_of(target))
    if by_size is not None and (target or {}).get("compiled_by"):
        by_size["compiled_by"] = target["compiled_by"]  # where the op runs compiled (kbot scan)
    status, message = _status(winner, len(result.entries), stop_message, result.notes)
    if interrupted:
        status = OptimizeStatus.INTERRUPTED
        best = f"; best so far: {winner[0].describe()}" if winner else ""
        message = (
            f"interrupted after {len(result.entries)} candidates{best}; "
            f"resume with --resume {run_id}"
        )
    report = build_report(
        run_id=run_id, problem=problem, device_name=device_name, options=options,
        result=result, finalists=finalists, winner=winner, status=status.value,
        message=message, stop_message=stop_message,
        llm_usage=store.ledger.usage(run_id), llm_usage_per_op=store.ledger.usage(
            problem_sha256=problem.source_sha256),
    )  # fmt: skip
    report["by_size"] = by_size  # which candidate serves which sizes (kbot.search.by_size)
    report["sweep"] = swept  # the winner at other models' sizes (kbot.search.sweep)
    paths = write_winner(run_dir, problem, winner, report, result.entries)
    store.update_run(
        run_id,
        status="interrupted" if interrupted else "finished",
        stop_reason=result.stop_reason.value,
        best_sha256=winner[1].sha256 if winner else None,
    )
    progress.finished(message)
    return OptimizeResult(
        status=status,
        message=message,
        best_candidate_path=paths.best_candidate,
        kernel_path=paths.kernel,
        report_json_path=paths.report_json,
        report_md_path=paths.report_md,
        verdict=winner[2] if winner else None,
        fitness=winner[0].describe() if winner else "",
        **common,
    )


def _status(
    winner: Any, candidates: int, stop_message: str, notes: list[str]
) -> tuple[OptimizeStatus, str]:
    if winner is None and candidates == 0:
        why = "; ".join(notes) or stop_message
        if notes and any(n.endswith("before the run stopped") for n in notes):
            why = f"{why} ({stop_message})"  # the budget, not the proposers, ended the run
        # Proposed but stopped in the judge (a budget shorter than one evaluation) is not the
        # same as nothing proposed: the user's fix is a longer budget, not another proposer.
        proposed = any(
            "evaluation stopped at the run's end" in n or "were not evaluated before" in n
            for n in notes
        )
        lead = "no candidate was evaluated in time" if proposed else "no candidate was proposed"
        return OptimizeStatus.NO_ACCEPTED, f"{lead}: {why}"
    if winner is None:
        return (
            OptimizeStatus.NO_ACCEPTED,
            f"no candidate accepted out of {candidates} ({stop_message}); see report.md for reasons",
        )
    fitness = winner[0]
    if not fitness.timed:
        return OptimizeStatus.NOT_TIMED, f"winner accepted: {fitness.describe()}; {stop_message}"
    # the evaluator already counts a speedup inside its confidence interval as 1.00
    if fitness.speedup is not None and fitness.speedup > 1.0:
        return OptimizeStatus.IMPROVED, f"winner: {fitness.describe()}; {stop_message}"
    return (
        OptimizeStatus.NOT_FASTER,
        f"winner accepted but not faster than {fitness.baseline} above the noise floor: "
        f"{fitness.describe()}; {stop_message}",
    )
