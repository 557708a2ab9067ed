"""The scan job's output: the targets as a `strategy.matrix` (`fromJSON`-ready), capped.

Built from `kbot scan PATH --emit-problems DIR --json`: targets in the scan's rank order, only
those whose problem file was extracted (an optimize job can do nothing with the others), at
most `max_targets`. Every target left out is kept with the reason, for the job summary.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any


@dataclass(frozen=True)
class MatrixEntry:
    """One optimize job. `op` names its artifact (`kbot-run-<op>`) and its PR branch."""

    op: str
    target: str  # "file.py::Qualname"
    kind: str
    file: str
    line: int
    qualname: str
    rank: int


@dataclass(frozen=True)
class ScanRow:
    """A line of the scan job's summary: every finding, and whether it got an optimize job."""

    rank: int
    op: str
    target: str
    kind: str
    time_share: float | None
    job: str  # "optimize job" or why not


@dataclass(frozen=True)
class TargetMatrix:
    include: tuple[MatrixEntry, ...]
    rows: tuple[ScanRow, ...]
    max_targets: int
    files_scanned: int

    def to_json(self) -> dict[str, Any]:
        """What `strategy.matrix: ${{ fromJSON(needs.scan.outputs.targets) }}` reads."""
        return {"include": [asdict(entry) for entry in self.include]}


def build_matrix(scan_data: dict[str, Any], max_targets: int) -> TargetMatrix:
    if max_targets < 1:
        raise ValueError(f"max-targets must be at least 1, got {max_targets}")
    problems = {p.get("name"): p for p in scan_data.get("problems") or []}
    include: list[MatrixEntry] = []
    rows: list[ScanRow] = []
    for finding in sorted(scan_data.get("findings") or [], key=lambda f: f.get("rank", 0)):
        name = str(finding.get("name") or "")
        profile = finding.get("profile") if isinstance(finding.get("profile"), dict) else {}
        time_share = profile.get("time_share") if profile else None
        problem = problems.get(name) or {}
        if finding.get("status") != "target":
            job = f"skipped: {finding.get('skip_reason') or 'not a target'}"
        elif problem.get("status") != "emitted" or not problem.get("path"):
            job = f"no problem: {problem.get('message') or 'not extracted'}"
        elif len(include) >= max_targets:
            job = f"left out (max-targets {max_targets})"
        else:
            job = "optimize job"
            include.append(
                MatrixEntry(
                    op=name,
                    target=str(finding.get("target") or ""),
                    kind=str(finding.get("kind") or ""),
                    file=str(finding.get("file") or ""),
                    line=int(finding.get("line") or 0),
                    qualname=str(finding.get("qualname") or ""),
                    rank=int(finding.get("rank") or 0),
                )
            )
        rows.append(
            ScanRow(
                rank=int(finding.get("rank") or 0),
                op=name,
                target=str(finding.get("target") or ""),
                kind=str(finding.get("kind") or ""),
                time_share=float(time_share) if time_share is not None else None,
                job=" ".join(job.split()),
            )
        )
    return TargetMatrix(
        tuple(include), tuple(rows), max_targets, int(scan_data.get("files_scanned") or 0)
    )
