"""The run report: the winner's verdict, per-case times and speedups (or "not timed (no GPU)"),
roofline, lineage and best fitness per generation, as JSON and as markdown (templates/report.md.j2)."""

from __future__ import annotations

import dataclasses
from typing import Any

from kbot import __version__
from kbot.evaluate.verdict import NOT_MEASURED, NOT_TIMED, CaseResult, Stat, Verdict, measured
from kbot.problem import ProblemSpec
from kbot.search.archive import Entry
from kbot.search.fitness import Fitness, fitness_of
from kbot.search.ledger import ModelUsage
from kbot.search.loop import LoopResult
from kbot.search.options import OptimizeOptions

REPORT_SCHEMA = 1


def build_report(
    *,
    run_id: str,
    problem: ProblemSpec,
    device_name: str,
    options: OptimizeOptions,
    result: LoopResult,
    finalists: list[tuple[Entry, Verdict]],
    winner: tuple[Fitness, Entry, Verdict] | None,
    status: str,
    message: str,
    stop_message: str,
    llm_usage: ModelUsage | None = None,
    llm_usage_per_op: ModelUsage | None = None,
) -> dict[str, Any]:
    """The JSON report (report.json); report.md is rendered from the same data. `llm_usage`:
    this run's model requests; `llm_usage_per_op`: those of every run of this problem."""
    entries = result.entries
    verdict = winner[2] if winner else None
    return {
        "schema": REPORT_SCHEMA,
        "kbot": __version__,
        "run_id": run_id,
        "status": status,
        "message": message,
        "stop_reason": result.stop_reason.value,
        "stop_message": stop_message,
        "problem": {
            "name": problem.name,
            "path": str(problem.path),
            "sha256": problem.source_sha256,
        },
        "device": verdict.device if verdict is not None and verdict.timed else device_name,
        "timed": bool(verdict and verdict.timed),
        # cases of a timed winner that could not be timed; its speedups are over the others
        "untimed_cases": [case_label(c) for c in verdict.untimed_cases] if verdict else [],
        "versions": dict(verdict.versions) if verdict else {},
        "options": dataclasses.asdict(options),
        "winner": _winner(winner) if winner else None,
        "cases": [case_row(c) for c in verdict.cases] if verdict else [],
        # the floating dtype of each case's inputs (None: none), and all of them: the dtypes a
        # PR's parity test checks, each with its own cases' tolerances (kbot.publish)
        **_dtypes(problem),
        "verdict": verdict.to_json() if verdict else None,
        "lineage": lineage(winner[1], entries) if winner else [],
        "generations": [dataclasses.asdict(g) for g in result.generations],
        "finalists": [
            {
                "sha256": entry.sha256,
                "proposer": entry.proposer,
                "first": entry.fitness.describe(),
                "remeasured": _describe(verdict, entry),
            }
            for entry, verdict in finalists
        ],
        "counts": {
            "candidates": len(entries),
            "accepted": sum(1 for e in entries.values() if e.fitness.accepted),
            "fresh_evaluations": result.fresh_evaluations,
            "cached_verdicts": result.cached_verdicts,
        },
        "rejections": _rejections(entries),
        "notes": list(result.notes),
        "llm": _llm(llm_usage, llm_usage_per_op),
        "elapsed_s": round(result.elapsed_s, 3),
        "first_accepted_s": (
            None if result.first_accepted_s is None else round(result.first_accepted_s, 3)
        ),
    }


def _dtypes(problem: ProblemSpec) -> dict[str, Any]:
    from kbot.problem.runtime import case_dtypes

    try:
        found = case_dtypes(problem.path, [dict(c) for c in problem.cases])
    except Exception:  # the user's get_inputs cannot build on meta: the PR reads the source
        return {}
    return {
        "case_dtypes": [{"case": dict(c), "dtype": d} for c, d in zip(problem.cases, found)],
        "dtypes": sorted({d for d in found if d is not None}),
    }


def _llm(run: ModelUsage | None, per_op: ModelUsage | None) -> dict[str, Any] | None:
    """Tokens and USD of the model requests; None for a run that made none."""
    if run is None or not run.calls:
        return None

    def usage(u: ModelUsage) -> dict[str, Any]:
        return {
            "calls": u.calls,
            "paid_calls": u.paid_calls,
            "cached_calls": u.cached_calls,
            "candidates": u.candidates,
            "prompt_tokens": u.prompt_tokens,
            "completion_tokens": u.completion_tokens,
            "tokens": u.tokens,
            "usd": round(u.usd, 6),
            "by_status": dict(u.by_status),
            "by_model": [
                {"model": m, "calls": n, "tokens": t, "usd": round(d, 6)}
                for m, n, t, d in u.by_model
            ],
        }

    return {"run": usage(run), "op": usage(per_op) if per_op is not None else None}


def _describe(verdict: Verdict, entry: Entry) -> str:
    return fitness_of(verdict, entry.source).describe()


def _winner(winner: tuple[Fitness, Entry, Verdict]) -> dict[str, Any]:
    fitness, entry, verdict = winner
    return {
        # where the judge's job that gave this verdict spent its time (kbot.evaluate.sandbox)
        "evaluation_s": round(sum(seconds for _, seconds in verdict.steps_s), 1),
        "evaluation_steps": [
            {"step": label, "s": round(seconds, 1)} for label, seconds in verdict.steps_s
        ],
        "sha256": entry.sha256,
        "proposer": entry.proposer,
        "generation": entry.generation,
        "params": entry.params,
        "fitness": fitness.describe(),
        "speedup": fitness.speedup,
        "baseline": fitness.baseline,
        "roofline_fraction": fitness.roofline_fraction,
        "kernels": fitness.kernels,
        "code_lines": fitness.code_lines,
        "file": "best_candidate.py",
    }


def case_row(case: CaseResult) -> dict[str, Any]:
    """One case for the report table: correctness figures and timings in microseconds."""
    row: dict[str, Any] = {"case": case.case, "label": case_label(case.case)}
    if case.correctness is not None:
        c = case.correctness
        row["correctness"] = {
            "passed": c.passed,
            "trials": c.trials,
            "max_abs_error": c.max_abs_error,
            "max_rel_norm_error": c.max_rel_norm_error,
            "atol": c.atol,
            "rtol": c.rtol,
            "float32_reference_trials": c.float32_reference_trials,
        }
    if case.timing is None:
        row["timing"] = NOT_TIMED
        return row
    t = case.timing
    row["timing"] = {
        "candidate_graph": _stat(t.candidate_graph),
        "candidate_plain": _stat(t.candidate_plain),
        "eager_graph": _stat(t.eager_graph),
        "eager_plain": _stat(t.eager_plain),
        "compile_graph": _stat(t.compile_graph),
        "compile_plain": _stat(t.compile_plain),
        "compile_max_autotune_graph": _stat(t.compile_max_autotune_graph),
        "candidate_host": _stat(t.candidate_host),
        "eager_host": _stat(t.eager_host),
        "compile_host": _stat(t.compile_host),
        "speedup_vs_eager": t.speedup_vs_eager,
        "speedup_vs_compile": t.speedup_vs_compile,
        # null when the device's peaks could not be measured: shown as "not measured"
        "roofline_percent": (
            round(100 * t.roofline_fraction, 1) if measured(t.roofline_fraction) else None
        ),
        # the peak that bound it ("fp32 FMA 51.2 TFLOP/s", "copy 4.25 TB/s"); null in
        # verdicts from before kbot named it
        "roofline_peak": t.roofline_peak or None,
        "bytes_moved": t.bytes_moved,
        "flops": t.flops,
    }
    return row


def case_label(case: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in case.items()) or "default"


def _stat(stat: Stat | None) -> dict[str, Any] | None:
    if stat is None:
        return None
    return {"median_us": stat.median_us, "iqr_us": stat.iqr_us, "runs": stat.runs}


def lineage(entry: Entry, entries: dict[str, Entry]) -> list[dict[str, Any]]:
    """The winner and its first parents back to a seed (candidates outside this run end it)."""
    chain: list[dict[str, Any]] = []
    seen: set[str] = set()
    current: Entry | None = entry
    while current is not None and current.sha256 not in seen:
        seen.add(current.sha256)
        chain.append(
            {
                "sha256": current.sha256,
                "proposer": current.proposer,
                "generation": current.generation,
                "fitness": current.fitness.describe(),
                "params": current.params,
            }
        )
        current = entries.get(current.parents[0]) if current.parents else None
    return chain


def _rejections(entries: dict[str, Entry]) -> list[dict[str, Any]]:
    """Rejections grouped by stage and rule, most frequent first, each with one example."""
    groups: dict[str, dict[str, Any]] = {}
    for entry in entries.values():
        if entry.fitness.accepted or not entry.verdict.reasons:
            continue
        reason = entry.verdict.reasons[0]
        key = f"{entry.verdict.stage.value}: [{reason.rule}]"
        group = groups.setdefault(key, {"reason": key, "candidates": 0, "example": ""})
        group["candidates"] += 1
        group["example"] = group["example"] or " ".join(reason.message.split())[:300]
    ranked = sorted(groups.values(), key=lambda g: g["candidates"], reverse=True)
    return ranked[:10]


def render_markdown(report: dict[str, Any]) -> str:
    from kbot.search.fallback import fallback_sentence
    from kbot.templates_dir import strict_environment

    env = strict_environment()
    env.filters["us"] = lambda stat: "—" if stat is None else f"{stat['median_us']:.2f}"
    env.filters["x"] = lambda v: "—" if v is None else f"{v:.2f}x"
    env.filters["percent"] = lambda v: NOT_MEASURED if v is None else f"{v}%"
    env.globals["fallback_sentence"] = fallback_sentence
    return env.get_template("report.md.j2").render(r=report, not_timed=NOT_TIMED)
