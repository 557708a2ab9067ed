"""Reading an optimize run directory (docs/architecture.md) into typed records for publishing.

A run directory holds `problem.py`, `best_candidate.py`, `kernel.py`, `report.json` and, when
the problem came from a scan, `target.json`. Nothing here runs the files it reads.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kbot.errors import KbotError, ProblemError
from kbot.evaluate.verdict import Verdict, VerdictFormatError
from kbot.problem import ProblemSpec, load_problem

REQUIRED_FILES = ("problem.py", "best_candidate.py", "kernel.py", "report.json")


class RunDirError(KbotError):
    """A run directory that cannot be published; the message says which file to fix or re-make."""


@dataclass(frozen=True)
class TargetInfo:
    """Where the optimized op lives in the target repository (a scan finding)."""

    file: str  # relative to `root` (the scanned path)
    line: int
    qualname: str  # "RMSNorm", "RMSNorm.forward_native", "fused_gelu", "Attn.forward"
    kind: str  # custom_op | fused_op | default_backend | torch_compile | marker | config_target | profiled
    entry: str = ""  # the reference method of an op class ("forward_native"), "" for a function
    root: str | None = None  # the scanned path, when the scan recorded it
    flags: tuple[str, ...] = ()
    time_share: float | None = None  # of measured op time in the profiled run, 0..1
    time_kind: str | None = None  # "device" or "cpu": what the time share measured
    adapter: str = "auto"  # from `.kbot.yml` targets[*].adapter, when the run recorded it
    module: str = ""  # the dotted module the problem file imports the op from ("" unknown)


@dataclass(frozen=True)
class RunDir:
    path: Path
    op: str  # the kernel's name: the launcher `<op>(...)` the candidate's forward calls
    problem: ProblemSpec
    candidate_source: str
    kernel_source: str
    verdict: Verdict
    target: TargetInfo | None
    report: dict[str, Any]  # the whole report.json, for fields only the PR body shows

    @property
    def kernel_sha256(self) -> str:
        return hashlib.sha256(self.kernel_source.encode()).hexdigest()


def load_run_dir(path: str | Path) -> RunDir:
    path = Path(path)
    if not path.is_dir():
        raise RunDirError(f"run directory {path} does not exist; run `kbot optimize` first")
    missing = [name for name in REQUIRED_FILES if not (path / name).is_file()]
    if missing:
        raise RunDirError(
            f"run directory {path} lacks {', '.join(missing)}; re-run `kbot optimize` into it"
        )
    try:
        problem = load_problem(path / "problem.py")
    except ProblemError as exc:
        raise RunDirError(f"{path}/problem.py: {exc}") from None
    report = _read_json(path / "report.json")
    verdict_json = report.get("verdict")
    if not isinstance(verdict_json, dict):
        raise RunDirError(
            f"{path}/report.json has no winner's verdict (status "
            f"{report.get('status', 'unknown')!r}): no accepted kernel to publish"
        )
    verdict = verdict_from_json(verdict_json, path / "report.json")
    if not verdict.accepted:
        raise RunDirError(
            f"{path}: the best candidate was not accepted by the evaluator "
            f"({verdict.stage.value}); nothing to publish"
        )
    from kbot.publish.callsite import parse_kernel_call  # parsing code, not running it

    candidate_source = (path / "best_candidate.py").read_text(encoding="utf-8")
    call = parse_kernel_call(candidate_source, path / "best_candidate.py")
    target_file = path / "target.json"
    target = _target_info(_read_json(target_file), target_file) if target_file.is_file() else None
    return RunDir(
        path=path,
        op=call.launcher,
        problem=problem,
        candidate_source=candidate_source,
        kernel_source=(path / "kernel.py").read_text(encoding="utf-8"),
        verdict=verdict,
        target=target,
        report=report,
    )


def _read_json(path: Path) -> dict[str, Any]:
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise RunDirError(f"{path}: not valid JSON (line {exc.lineno}: {exc.msg})") from None
    if not isinstance(value, dict):
        raise RunDirError(f"{path}: expected a JSON object")
    return value


def _target_info(raw: dict[str, Any], path: Path) -> TargetInfo:
    for key in ("file", "qualname", "kind"):
        if not isinstance(raw.get(key), str) or not raw[key]:
            raise RunDirError(f"{path}: `{key}` must be a non-empty string")
    flags = raw.get("flags") or ()
    profile = raw.get("profile") if isinstance(raw.get("profile"), dict) else {}
    time_share = raw.get("time_share", profile.get("time_share"))
    return TargetInfo(
        file=raw["file"],
        line=int(raw.get("line") or 0),
        qualname=raw["qualname"],
        kind=raw["kind"],
        entry=str(raw.get("entry") or ""),
        root=raw.get("root"),
        flags=tuple(f["flag"] if isinstance(f, dict) else str(f) for f in flags),
        time_share=float(time_share) if time_share is not None else None,
        time_kind=raw.get("time_kind", profile.get("time_kind")),
        adapter=str(raw.get("adapter") or "auto"),
        module=str(raw.get("module") or ""),
    )


def verdict_from_json(data: dict[str, Any], where: Path) -> Verdict:
    """Rebuilds a Verdict from `Verdict.to_json()` with the one reader (`Verdict.from_json`)."""
    try:
        return Verdict.from_json(data)
    except VerdictFormatError as exc:
        raise RunDirError(
            f"{where}: the verdict does not match kbot's format ({exc}); "
            "re-run `kbot optimize` with this kbot version"
        ) from None
