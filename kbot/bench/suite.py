"""Running the optimizer over a benchmark's problems, one at a time, resumably.

Each problem gets its own optimize run (its own wall budget, which holds: kbot.search bounds
the evaluation in flight too) in one work directory whose SQLite store every run shares; its
row is appended to the results log as soon as it finishes, and the report is rewritten.
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kbot.bench.fits import footprint
from kbot.bench.kernelbench import ProblemRef
from kbot.bench.metrics import Summary, summarize
from kbot.bench.outcome import not_run, problem_result
from kbot.bench.records import ProblemResult, ResultsLog, Status
from kbot.bench.render import build_report, git_commit, plot_speedups, render_markdown
from kbot.errors import KbotError, UsageError
from kbot.search.options import OptimizeOptions
from kbot.search.progress import NullProgress

LOG_NAME = "kernelbench.jsonl"
# A resumed run may choose other problems (a subset spread over several runs); every other
# setting must stay as the run began, so that one report compares like with like.
SELECTION = ("levels", "problems")


@dataclass(frozen=True)
class BenchSettings:
    """What a benchmark run was asked for; a resumed run must ask for the same."""

    root: str
    suite_dir: str
    levels: tuple[int, ...]
    problems: str  # the --problems text, "all" by default
    proposers: tuple[str, ...]
    time_budget_per_problem_s: float
    device: str
    # extern ops every problem declares (KernelBench files declare none): cuBLAS/cuDNN calls
    # a candidate may keep beside its Triton kernels, so a GEMM + epilogue can be extern GEMM
    # + one fused kernel, as torch.compile does
    extern_ops: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            k: list(v) if isinstance(v, tuple) else v for k, v in dataclasses.asdict(self).items()
        }


@dataclass(frozen=True)
class BenchOutcome:
    rows: tuple[ProblemResult, ...]
    summary: Summary
    report_json: Path
    report_md: Path
    plot: Path | None
    interrupted: bool
    ran: int  # problems run by this invocation (the others came from the log)


class _RunIdProgress(NullProgress):
    """Records an optimize run's id in the results log as soon as the run has one."""

    def __init__(self, log: ResultsLog, ref: ProblemRef, sha256: str) -> None:
        self.log, self.ref, self.sha256 = log, ref, sha256

    def started(self, run_id: str, problem: str, device: str) -> None:
        self.log.started(self.ref.key, self.sha256, run_id)


Optimize = Callable[..., Any]


def run_benchmark(
    refs: list[ProblemRef],
    settings: BenchSettings,
    options: OptimizeOptions,
    work_dir: Path,
    *,
    resume: bool,
    device: str,
    device_name: str,
    say: Callable[[str], None] = lambda text: None,
    optimize_fn: Optimize | None = None,
) -> BenchOutcome:
    from kbot.problem import load_problem
    from kbot.search import StopReason, optimize

    optimize_fn = optimize_fn or optimize
    # A benchmark scores each problem at its own sizes and publishes nothing: no shape sweep.
    options = dataclasses.replace(options, sweep_points=0)
    work_dir = Path(work_dir)
    log = ResultsLog(work_dir / LOG_NAME)
    stored, finished, started = log.read()
    if log.exists() and not resume:
        raise UsageError(
            f"{log.path} holds an earlier benchmark run; continue it with --resume, "
            "or pass another --work-dir"
        )
    current = settings.to_json()
    changed = sorted(
        k
        for k in current
        if k not in SELECTION and stored is not None and stored.get(k) != current[k]
    )
    if changed:
        raise UsageError(
            f"--resume: this run was started with other settings ({', '.join(changed)}); "
            "pass the same options, or another --work-dir"
        )
    if stored is None:
        log.start(settings.to_json())
    rows: list[ProblemResult] = []
    interrupted = False
    ran = 0
    timed = device == "cuda"
    for index, ref in enumerate(refs, 1):
        done = finished.get(ref.key)
        try:
            spec = load_problem(ref.path)
        except KbotError as exc:
            row = not_run(ref, "", Status.ERROR, "error: the problem file is unusable", str(exc))
            rows.append(row)
            if done is None:
                log.finished(row)
            continue
        if done is not None and done.sha256 == spec.source_sha256:
            rows.append(done)  # finished before: never run again
            continue
        ran += 1
        begun = time.monotonic()
        fit = footprint(ref.path, device)
        if not fit.fits:
            row = not_run(
                ref, spec.source_sha256, Status.SKIPPED,
                "skipped: inputs too big for this machine", fit.reason(),
            )  # fmt: skip
        else:
            spec = dataclasses.replace(
                spec, options=dataclasses.replace(spec.options, extern_ops=settings.extern_ops)
            )
            resume_id = started.get(ref.key) if done is None else None
            try:
                result = _optimize(optimize_fn, spec, options, work_dir, resume_id, log, ref)
            except KbotError as exc:
                row = not_run(
                    ref, spec.source_sha256, Status.ERROR, "error: kbot refused it", str(exc)
                )
            except Exception as exc:  # noqa: BLE001 - one problem's failure never ends the run
                row = not_run(
                    ref, spec.source_sha256, Status.ERROR, f"error: {type(exc).__name__}",
                    f"{type(exc).__name__}: {exc}; please report it",
                )  # fmt: skip
            else:
                if result.stop_reason is StopReason.INTERRUPTED:
                    interrupted = True
                    say(f"[{index}/{len(refs)}] {ref.key} {ref.name}: interrupted")
                    break
                row = problem_result(ref, spec.source_sha256, result, time.monotonic() - begun)
        log.finished(row)
        rows.append(row)
        say(f"[{index}/{len(refs)}] {_line(row)}")
        _write_report(work_dir, settings, rows, device_name, timed)
    # Problems finished by earlier invocations with another selection belong to the report.
    chosen = {row.key for row in rows}
    rows += [row for key, row in finished.items() if key not in chosen]
    rows.sort(key=lambda row: (row.level, row.number))
    report_json, report_md, plot, summary = _write_report(
        work_dir, settings, rows, device_name, timed
    )
    return BenchOutcome(tuple(rows), summary, report_json, report_md, plot, interrupted, ran)


def _optimize(
    optimize_fn: Optimize,
    spec: Any,
    options: OptimizeOptions,
    work_dir: Path,
    resume_id: str | None,
    log: ResultsLog,
    ref: ProblemRef,
) -> Any:
    progress = _RunIdProgress(log, ref, spec.source_sha256)
    if resume_id is not None:
        try:
            return optimize_fn(spec, options, work_dir, resume_run_id=resume_id, progress=progress)
        except KbotError:
            pass  # the killed run never reached the store: start it afresh
    return optimize_fn(spec, options, work_dir, progress=progress)


def _line(row: ProblemResult) -> str:
    head = f"{row.key} {row.name}: {row.status.value}"
    if row.correct:
        if row.speedup_vs_best is None:
            return f"{head} (not timed)"
        return f"{head}, {row.speedup_vs_best:.2f}x vs the faster of eager and torch.compile"
    # A failure already names its category ("timeout: the budget ran out ...").
    if row.failure.startswith(f"{row.status.value}:"):
        return f"{row.key} {row.name}: {row.failure}"
    return f"{head}: {row.failure}"


def _write_report(
    work_dir: Path, settings: BenchSettings, rows: list[ProblemResult], device: str, timed: bool
) -> tuple[Path, Path, Path | None, Summary]:
    summary = summarize(rows, timed)
    report = build_report(
        settings.to_json(), rows, summary, device, timed, git_commit(Path(settings.suite_dir))
    )
    plot_path = work_dir / "kernelbench_speedups.png"
    plot = plot_speedups(rows, plot_path)
    report["plot"] = plot
    report_json = work_dir / "kernelbench.json"
    report_md = work_dir / "kernelbench.md"
    report_json.write_text(json.dumps(report, indent=2, sort_keys=True) + "\n")
    report_md.write_text(render_markdown(report))
    return report_json, report_md, (plot_path if plot else None), summary


def summary_lines(outcome: BenchOutcome) -> list[str]:
    """The terminal text: the headline metrics, then one line per failure class."""
    s = outcome.summary

    def share(v: float | None) -> str:
        return "not measured" if v is None else f"{100 * v:.1f}%"

    def x(v: float | None) -> str:
        return "not measured" if v is None else f"{v:.2f}x"

    lines = [
        f"{s.problems} problem(s): {s.correct} correct (fast_0 {share(s.fast_0)}), {s.timed} timed",
        f"fast_1.0 {share(s.fast['best']['1.0'])}, fast_1.2 {share(s.fast['best']['1.2'])} "
        "vs the faster of eager and torch.compile; "
        f"fast_1.0 vs eager {share(s.fast['eager']['1.0'])}",
        f"geomean over correct problems: {x(s.geomean['best'])} vs the faster baseline, "
        f"{x(s.geomean['eager'])} vs eager, {x(s.geomean['compile'])} vs torch.compile",
    ]
    for failure in s.failures:
        lines.append(f"{failure.failure} ({len(failure.problems)}: {', '.join(failure.problems)})")
    return lines
