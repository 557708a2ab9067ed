"""The run directory `<work-dir>/runs/<run_id>/`, as docs/architecture.md fixes it:
problem.py, target.json, best_candidate.py, kernel.py, report.json, report.md, and on a timed
run by_size.svg (µs per size, the chart report.md shows)."""

from __future__ import annotations

import ast
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kbot import __version__
from kbot.evaluate.verdict import NOT_MEASURED, Verdict, finite_json, measured
from kbot.problem import ProblemSpec
from kbot.propose.tune import find_tunables
from kbot.search.archive import Entry
from kbot.search.chart import svg
from kbot.search.fitness import Fitness
from kbot.search.report import case_label, render_markdown

KERNEL_IMPORT_ROOTS = ("torch", "triton")
CHART_NAME = "by_size.svg"


class KernelModuleError(Exception):
    """The winner cannot be split into a kernel module; the message says why."""


@dataclass(frozen=True)
class RunPaths:
    best_candidate: Path | None
    kernel: Path | None
    report_json: Path
    report_md: Path


def run_dir_of(work_dir: Path, run_id: str) -> Path:
    return Path(work_dir) / "runs" / run_id


def prepare_run_dir(
    work_dir: Path, run_id: str, problem: ProblemSpec, target: dict[str, Any] | None
) -> Path:
    run_dir = run_dir_of(work_dir, run_id)
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "problem.py").write_text(problem.source, encoding="utf-8")
    if target is not None:
        (run_dir / "target.json").write_text(json.dumps(target, indent=2) + "\n")
    return run_dir


def write_winner(
    run_dir: Path,
    problem: ProblemSpec,
    winner: tuple[Fitness, Entry, Verdict] | None,
    report: dict[str, Any],
    entries: dict[str, Entry],
) -> RunPaths:
    best_path, kernel_path = run_dir / "best_candidate.py", run_dir / "kernel.py"
    for stale in (best_path, kernel_path):
        stale.unlink(missing_ok=True)
    if winner is not None:
        _, entry, verdict = winner
        best_path.write_text(entry.source, encoding="utf-8")
        try:
            kernel = kernel_module(entry.source, header_context(problem, entry, verdict, entries))
        except KernelModuleError as exc:
            report["notes"].append(f"kernel.py not written: {exc}")
            kernel_path = None
        else:
            kernel_path.write_text(kernel, encoding="utf-8")
    else:
        best_path = kernel_path = None
    report_json, report_md = run_dir / "report.json", run_dir / "report.md"
    chart = (report.get("by_size") or {}).get("chart")
    (run_dir / CHART_NAME).unlink(missing_ok=True)
    if chart:
        (run_dir / CHART_NAME).write_text(svg(chart), encoding="utf-8")
    # an unmeasured figure (NaN) is written as null; allow_nan=False keeps any other from slipping
    report_json.write_text(
        json.dumps(finite_json(report), indent=2, default=str, allow_nan=False) + "\n"
    )
    report_md.write_text(render_markdown(report), encoding="utf-8")
    return RunPaths(best_path, kernel_path, report_json, report_md)


def header_context(
    problem: ProblemSpec, entry: Entry, verdict: Verdict, entries: dict[str, Entry]
) -> dict[str, Any]:
    chain, current = [], entry
    while current is not None and len(chain) < 50:
        chain.append(current.proposer)
        current = entries.get(current.parents[0]) if current.parents else None
    tolerances = sorted(
        {(c.correctness.atol, c.correctness.rtol) for c in verdict.cases if c.correctness}
    )
    timing_lines = []
    for case in verdict.cases:
        t = case.timing
        if t is None:
            continue
        compile_us = f"{t.compile_graph.median_us:.2f}" if t.compile_graph else "n/a"
        peak = f" ({t.roofline_peak})" if t.roofline_peak else ""
        roofline = (
            f"{100 * t.roofline_fraction:.0f}% of roofline{peak}"
            if measured(t.roofline_fraction)
            else f"roofline {NOT_MEASURED}"
        )
        timing_lines.append(
            f"{case_label(case.case)}: {t.candidate_graph.median_us:.2f} / {compile_us} / "
            f"{t.eager_graph.median_us:.2f}  ({roofline})"
        )
    timing_lines += [f"{case_label(c)}: not timed" for c in verdict.untimed_cases]
    try:
        tunables = ", ".join(f"{t.name}={t.value!r}" for t in find_tunables(entry.source))
    except SyntaxError:
        tunables = ""
    schedule = entry.params.get("schedule")
    tol_text = ", ".join(f"atol={a:g} rtol={r:g}" for a, r in tolerances) or "n/a"
    return {
        "title": f"Triton kernels for `{problem.name}`, found by `kbot optimize`.",
        "version": __version__,
        "lineage": "proposers " + " -> ".join(reversed(chain)),
        "problem_path": str(problem.path),
        "problem_sha256": problem.source_sha256,
        "device": verdict.device if verdict.timed else "CPU interpreter, not timed",
        "verdict_line": (
            f"{'accepted' if verdict.accepted else 'rejected'} after {verdict.seeds} seed(s) on "
            f"{len(verdict.cases)} case(s), {tol_text}."
        ),
        "case_lines": [f"case {case_label(c.case)}" for c in verdict.cases],
        "timing_lines": timing_lines,
        "tunables": tunables,
        "schedule": str(schedule) if schedule else "",
        "notes": "",
    }


def kernel_module(candidate_source: str, context: dict[str, Any]) -> str:
    """The candidate minus its ModelNew class (and imports only ModelNew used), under a header."""
    try:
        tree = ast.parse(candidate_source)
    except SyntaxError as exc:
        raise KernelModuleError(f"the winner does not parse: {exc.msg}") from None
    lines = candidate_source.splitlines()
    drop: set[int] = set()  # 0-based line numbers
    notes = ""
    body = tree.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        if isinstance(body[0].value.value, str):
            # the generator's title paragraph gives way to the header; the rest are its notes
            notes = body[0].value.value.strip().partition("\n\n")[2].strip()
            drop.update(range(body[0].lineno - 1, body[0].end_lineno))
    model_new = [n for n in body if isinstance(n, ast.ClassDef) and n.name == "ModelNew"]
    if not model_new:
        raise KernelModuleError("the winner has no top-level class ModelNew")
    for node in model_new:
        start = min([d.lineno for d in node.decorator_list] + [node.lineno])
        drop.update(range(start - 1, node.end_lineno))
    kept_text = "\n".join(line for i, line in enumerate(lines) if i not in drop)
    for node in body:
        if not isinstance(node, (ast.Import, ast.ImportFrom)):
            continue
        roots = _import_roots(node)
        if any(root not in KERNEL_IMPORT_ROOTS for root in roots):
            raise KernelModuleError(
                f"line {node.lineno} imports {', '.join(sorted(roots))}; "
                "a kernel module imports only torch and triton"
            )
        if _imports_only_unused_nn(node, kept_text):
            drop.update(range(node.lineno - 1, node.end_lineno))
    kept: list[str] = []
    for i, line in enumerate(lines):
        blank_run = len(kept) >= 2 and not kept[-1].strip() and not kept[-2].strip()
        if i in drop or (not line.strip() and (blank_run or not kept)):
            continue
        kept.append(line)
    code = "\n".join(kept).rstrip() + "\n"
    context = dict(context, notes=_docstring_safe(notes))
    return _render_header(context) + "\n" + code


def _import_roots(node: ast.Import | ast.ImportFrom) -> set[str]:
    if isinstance(node, ast.ImportFrom):
        return {(node.module or "").split(".")[0]} if node.level == 0 else {"."}
    return {alias.name.split(".")[0] for alias in node.names}


def _imports_only_unused_nn(node: ast.Import | ast.ImportFrom, kept_text: str) -> bool:
    """`import torch.nn as nn` / `from torch import nn` that only ModelNew needed."""
    names = [(alias.asname or alias.name) for alias in node.names]
    if isinstance(node, ast.Import):
        is_nn = [alias.name == "torch.nn" and alias.asname for alias in node.names]
    else:
        is_nn = [node.module == "torch" and alias.name == "nn" for alias in node.names]
    if not names or not all(is_nn):
        return False
    return all(f"{name}." not in kept_text for name in names)


def _docstring_safe(notes: str) -> str:
    if not notes:
        return ""
    safe = notes.replace('"""', "'''").replace("\\", "\\\\")
    return "\n".join(safe.splitlines())


def _render_header(context: dict[str, Any]) -> str:
    from kbot.templates_dir import strict_environment

    env = strict_environment()
    return env.get_template("kernel_module.py.j2").render(**context)
