"""The scanner: find the ops of a repository worth a kernel, rank them, extract problems.

    from kbot.scan import ScanOptions, scan
    result = scan(Path("examples/tinyserve"), ScanOptions(compile_decorators=("safe_torch_compile",)))
    result.targets                      # ranked Findings that are not skipped
    from kbot.scan.extract import emit_problems
    emitted = emit_problems(result, Path(".kbot/problems"))

Static discovery never imports the target; profiling runs the user's command in a child
process (`python -m kbot.scan.profile_child`). Importing this package does not import torch.
"""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path

from kbot.errors import UsageError
from kbot.scan.findings import (
    FileSkip,
    Finding,
    Flag,
    Kind,
    ScanOptions,
    ScanResult,
    Status,
    TargetHint,
)
from kbot.scan.rank import rank
from kbot.scan.static import scan_static

__all__ = [
    "FileSkip",
    "Finding",
    "Flag",
    "Kind",
    "ScanOptions",
    "ScanResult",
    "Status",
    "TargetHint",
    "scan",
]


def scan(
    path: Path, options: ScanOptions | None = None, config_root: Path | None = None
) -> ScanResult:
    """Static discovery of `path`, then (when asked) profiling; returns ranked findings.

    `config_root` is the folder `.kbot.yml` target paths are relative to (default: `path`).
    Raises UsageError for a missing path, ConfigError for a target that does not exist.
    """
    options = options or ScanOptions()
    path = Path(path)
    if not path.exists():
        raise UsageError(f"path {path} does not exist; give a folder or .py file to scan")
    started = time.perf_counter()
    root = path if path.is_dir() else path.parent
    findings, skips, files = scan_static(path, options, config_root)
    time_kind = total_us = None
    if options.profile_command or options.profile_function:
        from kbot.scan.profile import apply_profile, functions_to_wrap, run_profile

        run = run_profile(root.resolve(), options, functions_to_wrap(findings))
        findings = apply_profile(findings, run, root.resolve(), options)
        time_kind, total_us = run.time_kind, run.total_us
    ranked = _unique_names(rank(findings))
    if options.top is not None:
        targets = [f for f in ranked if f.status == Status.TARGET][: options.top]
        ranked = targets + [f for f in ranked if f.status != Status.TARGET]
    return ScanResult(
        root=root.resolve(),
        findings=tuple(ranked),
        file_skips=tuple(skips),
        files_scanned=files,
        scan_time_s=time.perf_counter() - started,
        profile_time_kind=time_kind,
        profile_total_us=total_us,
    )


def _unique_names(findings: list[Finding]) -> list[Finding]:
    """Names become file names and matrix entries: two `RMSNorm`s in different files get the
    file's stem as a prefix, then a number."""
    taken: set[str] = set()
    out = []
    for finding in findings:
        name = finding.name
        if name in taken:
            name = f"{Path(finding.file).stem}_{name}"
        base, number = name, 2
        while name in taken:
            name, number = f"{base}_{number}", number + 1
        taken.add(name)
        out.append(replace(finding, unique_name=name))
    return out
