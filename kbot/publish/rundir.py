"""Reading an optimize run directory (docs/architecture.md) into typed records for publishing.

A run directory holds `problem.py`, `best_candidate.py`, `kernel.py`, `report.json` and, when
the problem came from a scan, `target.json`. Nothing here runs the files it reads.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kbot.errors import KbotError, ProblemError
from kbot.evaluate.verdict import (
    CaseCorrectness,
    CaseResult,
    CaseTiming,
    Reason,
    Stage,
    Stat,
    Verdict,
)
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
    )


def verdict_from_json(data: dict[str, Any], where: Path) -> Verdict:
    """Rebuilds a Verdict from `Verdict.to_json()` (timing "not timed (no GPU)" -> None)."""
    try:
        cases = tuple(_case(c) for c in data.get("cases", ()))
        return Verdict(
            accepted=bool(data["accepted"]),
            stage=Stage(data["stage"]),
            reasons=tuple(
                Reason(r["rule"], r["message"], r.get("line")) for r in data.get("reasons", ())
            ),
            device=str(data.get("device", "cpu")),
            cases=cases,
            seeds=int(data.get("seeds", 0)),
            wall_s=float(data.get("wall_s", 0.0)),
            worker_output=str(data.get("worker_output", "")),
            versions={str(k): str(v) for k, v in (data.get("versions") or {}).items()},
            **_optional_fields(data),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise RunDirError(
            f"{where}: the verdict does not match kbot's format ({type(exc).__name__}: {exc}); "
            "re-run `kbot optimize` with this kbot version"
        ) from None


def _optional_fields(data: dict[str, Any]) -> dict[str, Any]:
    """Verdict fields newer than this reader's required set (e.g. `base_seed`), when present."""
    known = {f.name for f in dataclasses.fields(Verdict)}
    return {k: data[k] for k in ("base_seed",) if k in known and data.get(k) is not None}


def _stat(raw: dict[str, Any] | None) -> Stat | None:
    if raw is None:
        return None
    return Stat(float(raw["median_us"]), float(raw["iqr_us"]), int(raw["runs"]))


def _case(raw: dict[str, Any]) -> CaseResult:
    correctness = raw.get("correctness")
    timing = raw.get("timing")
    return CaseResult(
        case=dict(raw.get("case") or {}),
        correctness=None
        if correctness is None
        else CaseCorrectness(
            case=dict(correctness.get("case") or raw.get("case") or {}),
            trials=int(correctness["trials"]),
            distributions=tuple(correctness.get("distributions", ())),
            max_abs_error=float(correctness["max_abs_error"]),
            max_rel_norm_error=float(correctness["max_rel_norm_error"]),
            atol=float(correctness["atol"]),
            rtol=float(correctness["rtol"]),
            passed=bool(correctness["passed"]),
            float32_reference_trials=int(correctness.get("float32_reference_trials", 0)),
        ),
        timing=None if not isinstance(timing, dict) else _timing(timing),
    )


def _timing(raw: dict[str, Any]) -> CaseTiming:
    return CaseTiming(
        candidate_graph=_stat(raw["candidate_graph"]),
        candidate_plain=_stat(raw["candidate_plain"]),
        eager_graph=_stat(raw["eager_graph"]),
        eager_plain=_stat(raw["eager_plain"]),
        compile_graph=_stat(raw.get("compile_graph")),
        compile_plain=_stat(raw.get("compile_plain")),
        compile_max_autotune_graph=_stat(raw.get("compile_max_autotune_graph")),
        bytes_moved=int(raw.get("bytes_moved", 0)),
        flops=int(raw.get("flops", 0)),
        roofline_fraction=float(raw.get("roofline_fraction", 0.0)),
        speedup_vs_eager=float(raw["speedup_vs_eager"]),
        speedup_vs_compile=None
        if raw.get("speedup_vs_compile") is None
        else float(raw["speedup_vs_compile"]),
    )
