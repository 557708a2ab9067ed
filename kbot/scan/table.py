"""How a scan is shown: a ranked text table for people, JSON entries (and a GitHub Actions
matrix) for machines."""

from __future__ import annotations

from typing import Any

from kbot.output import to_jsonable
from kbot.scan.findings import Finding, ScanResult, Status


def target_id(finding: Finding) -> str:
    """`path/file.py::Qualname` (or `::Class.method`), the spelling `.kbot.yml` targets use."""
    return f"{finding.file}::{finding.callable_qualname}"


def time_label(finding: Finding) -> str:
    if finding.profile is None:
        return "static"
    stats = finding.profile
    return (
        f"{stats.time_share * 100:.1f}% ({stats.time_kind}), x{stats.e2e_speedup_if_3x:.2f} if 3x"
    )


def cases_label(finding: Finding) -> str:
    if finding.hint is not None and finding.hint.cases:
        return _format_cases(finding.hint.cases)
    if finding.profile is not None and finding.profile.inputs_seen:
        count = len(finding.profile.inputs_seen)
        return f"{count} shape{'s' if count > 1 else ''} seen"
    return "-"


def _format_cases(cases: tuple[dict[str, int], ...]) -> str:
    keys = list(dict.fromkeys(k for case in cases for k in case))
    if len(keys) == 1:
        return f"{keys[0]}=" + ",".join(str(c.get(keys[0])) for c in cases)
    return "; ".join(",".join(f"{k}={v}" for k, v in c.items()) for c in cases)


def status_label(finding: Finding, problem_status: str | None = None) -> str:
    if finding.status == Status.SKIPPED:
        return f"skipped: {finding.skip_reason}"
    flags = ", ".join(sorted({n.flag.value for n in finding.flags}))
    label = "target" + (f" [{flags}]" if flags else "")
    return f"{label}; {problem_status}" if problem_status else label


def render_table(
    result: ScanResult,
    problem_status: dict[str, str] | None = None,
    problem_cases: dict[str, tuple[dict[str, int], ...]] | None = None,
) -> str:
    """`problem_cases`: the CASES of each problem emitted, which the cases column shows (a
    target sized by --model-config has them only once its problem is made)."""
    problem_status = problem_status or {}
    problem_cases = problem_cases or {}
    rows = [("#", "op", "location", "kind", "time", "cases", "status")]
    for number, finding in enumerate(result.findings, 1):
        rows.append(
            (
                str(number),
                finding.name,
                f"{finding.file}:{finding.line}",
                finding.kind.value,
                time_label(finding),
                _format_cases(problem_cases[finding.name])
                if problem_cases.get(finding.name)
                else cases_label(finding),
                status_label(finding, problem_status.get(finding.name)),
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    lines = [
        "  ".join(cell.ljust(width) for cell, width in zip(row[:-1], widths)) + "  " + row[-1]
        for row in rows
    ]
    summary = (
        f"{len(result.targets)} target(s), {len(result.findings) - len(result.targets)} skipped, "
        f"{result.files_scanned} files in {result.scan_time_s:.2f} s"
    )
    if result.profile_time_kind:
        summary += f"; profile measured {result.profile_time_kind} time"
        if result.profile_time_kind == "cpu":
            summary += " (no GPU: shares are of CPU time)"
    lines.append(summary)
    for skip in result.file_skips:
        lines.append(f"not scanned: {skip.file}: {skip.reason}")
    return "\n".join(lines)


def finding_entry(finding: Finding, rank: int) -> dict[str, Any]:
    entry = to_jsonable(finding)
    entry.update(
        rank=rank, name=finding.name, target=target_id(finding), cases_label=cases_label(finding)
    )
    return entry


def matrix(result: ScanResult, problems: dict[str, str] | None = None) -> dict[str, Any]:
    """`strategy.matrix` for a GitHub Actions job per target: `matrix: ${{ fromJSON(...) }}`."""
    problems = problems or {}
    include = []
    for finding in result.targets:
        include.append(
            {
                "name": finding.name,
                "target": target_id(finding),
                "kind": finding.kind.value,
                "file": finding.file,
                "line": finding.line,
                "qualname": finding.qualname,
                "problem": problems.get(finding.name),
            }
        )
    return {"include": include}


def scan_json(result: ScanResult, problems: dict[str, str] | None = None) -> dict[str, Any]:
    return {
        "root": str(result.root),
        "files_scanned": result.files_scanned,
        "scan_time_s": round(result.scan_time_s, 3),
        "profile_time_kind": result.profile_time_kind,
        "findings": [finding_entry(f, i) for i, f in enumerate(result.findings, 1)],
        "file_skips": to_jsonable(result.file_skips),
        "matrix": matrix(result, problems),
    }
