"""The tolerances a PR's parity test checks each dtype with: the evaluator's own, per dtype, as
the run's report recorded them (kbot.publish.artifacts renders them)."""

from __future__ import annotations

from typing import Any

from kbot.publish.rundir import RunDir


def dtype_tolerances(run: RunDir, dtypes: tuple[str, ...]) -> dict[str, tuple[float, float]]:
    """(atol, rtol) per dtype the parity test checks: the loosest the evaluator used on the
    cases built in that dtype (report.json's case_dtypes), never another dtype's. A dtype with
    no checked case of its own (an older report, or none recorded) takes the loosest of all
    the cases when they share one dtype, else the evaluator's default for it."""
    by_case = {
        _case_key(row.get("case")): row.get("dtype")
        for row in run.report.get("case_dtypes") or []
        if isinstance(row, dict)
    }
    found: dict[str, tuple[float, float]] = {}
    every = (0.0, 0.0)
    for case in run.verdict.cases:
        if case.correctness is None:
            continue
        pair = (case.correctness.atol, case.correctness.rtol)
        every = (max(every[0], pair[0]), max(every[1], pair[1]))
        dtype = by_case.get(_case_key(case.case))
        if dtype is not None:
            old = found.get(dtype, (0.0, 0.0))
            found[dtype] = (max(old[0], pair[0]), max(old[1], pair[1]))
    for dtype in dtypes:
        if dtype not in found:
            single = len(dtypes) == 1 and every != (0.0, 0.0)
            found[dtype] = every if single else _default_tolerance(dtype)
    return found


def _default_tolerance(dtype: str) -> tuple[float, float]:
    """The evaluator's tolerance for a dtype, from the one table it uses."""
    import torch

    from kbot.evaluate.compare import DEFAULT_TOLERANCES

    return DEFAULT_TOLERANCES.get(getattr(torch, dtype, None), (1e-2, 1.6e-2))


def _case_key(case: Any) -> str:
    return repr(sorted(dict(case).items())) if isinstance(case, dict) else ""
