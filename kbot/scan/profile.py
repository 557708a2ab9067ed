"""Profiling discovery: run the user's command or function under kbot's profiler in a child
process (kbot.scan.profile_child), then attach the measured time, input signatures and
constructor state to the static findings, adding the hot modules no pattern matched."""

from __future__ import annotations

import json
import os
import re
import shlex
import signal
import subprocess
import sys
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from kbot.errors import KbotError
from kbot.scan.findings import (
    CLASS_ENTRIES,
    Finding,
    InputMeta,
    Kind,
    ProfileStats,
    ScanOptions,
)
from kbot.scan.rank import amdahl_speedup
from kbot.scan.static import profiled_finding

# A module below this share of the run is not worth a finding of its own.
MIN_SHARE_FOR_NEW_FINDING = 0.01


class ProfileError(KbotError):
    """The profiled command could not be run or failed; the message says how."""


@dataclass(frozen=True)
class ProfiledOp:
    file: str
    qualname: str
    what: str  # "module" or "function"
    calls: int
    self_time_us: float
    signatures: tuple[tuple[InputMeta, ...], ...]
    init_state: dict[str, Any]
    param_shapes: dict[str, tuple[int, ...]]
    param_dtypes: dict[str, str]


@dataclass(frozen=True)
class ProfileRun:
    time_kind: str  # "device" or "cpu"
    total_us: float
    ops: tuple[ProfiledOp, ...]


def child_argv(options: ScanOptions) -> list[str]:
    """The profiler child's trailing arguments for --profile / --profile-module."""
    if options.profile_function:
        module, sep, fn = options.profile_function.partition(":")
        if not sep or not module or not fn:
            raise ProfileError(
                f"--profile-module {options.profile_function!r} must look like pkg.module:function"
            )
        return ["--function", options.profile_function]
    try:
        words = shlex.split(options.profile_command or "")
    except ValueError as exc:
        raise ProfileError(f"--profile {options.profile_command!r}: {exc}") from None
    if not words or not Path(words[0]).name.startswith("python") or len(words) < 2:
        raise ProfileError(
            f"--profile {options.profile_command!r} must run Python: "
            '"python SCRIPT.py ARGS", "python -m MODULE ARGS" or "python -c CODE"'
        )
    return ["--", *words[1:]]


def run_profile(
    root: Path, options: ScanOptions, functions: dict[str, list[str]] | None = None
) -> ProfileRun:
    """Runs the child with the user's working directory and environment; raises ProfileError
    when the program fails or exceeds `options.profile_timeout_s`."""
    trailing = child_argv(options)
    with tempfile.TemporaryDirectory(prefix="kbot-profile-") as tmp:
        out = Path(tmp) / "profile.json"
        argv = [
            sys.executable,
            "-m",
            "kbot.scan.profile_child",
            "--root",
            str(root),
            "--out",
            str(out),
            "--functions",
            json.dumps(functions or {}),
            *trailing,
        ]
        env = dict(os.environ)
        kbot_dir = str(Path(__file__).resolve().parents[2])
        env["PYTHONPATH"] = os.pathsep.join(p for p in (kbot_dir, env.get("PYTHONPATH")) if p)
        process = subprocess.Popen(
            argv,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            start_new_session=True,
        )
        try:
            stdout, stderr = process.communicate(timeout=options.profile_timeout_s)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.communicate()
            raise ProfileError(
                f"the profiled program ran over {options.profile_timeout_s:.0f} s; profile a shorter run"
            ) from None
        if not out.is_file():
            raise ProfileError(
                f"the profiled program failed (exit {process.returncode}){_stderr_tail(stderr)}"
            )
        data = json.loads(out.read_text())
    if data["exit_code"] != 0:
        raise ProfileError(f"the profiled program {data['error']}{_stderr_tail(stderr)}")
    return _parse(data)


# The last lines of the program's stderr shown when it fails: its traceback's end or its own
# message, without scrolling the command line away.
STDERR_TAIL_LINES = 20

# torch.profiler's own log lines (kineto's, glog-style), not the program's:
# `STAGE:2024-05-01 12:00:00 1234:1234 ActivityProfilerController.cpp:314] Completed Stage`
_PROFILER_LOG = re.compile(r"^[A-Z]+:\d{4}-\d\d-\d\d \d\d:\d\d:\d\d \d+:\d+ \w+\.cpp:\d+\]")


def _stderr_tail(stderr: str) -> str:
    """`; the last lines of its stderr:` and up to STDERR_TAIL_LINES of them, indented."""
    lines = [
        line.rstrip()
        for line in stderr.splitlines()
        if line.strip() and not _PROFILER_LOG.match(line)
    ]
    if not lines:
        return "; it wrote nothing to stderr"
    tail = lines[-STDERR_TAIL_LINES:]
    lead = "its stderr" if len(tail) == len(lines) else f"the last {len(tail)} lines of its stderr"
    return f"; {lead}:\n" + "\n".join(f"  {line}" for line in tail)


def _parse(data: dict[str, Any]) -> ProfileRun:
    ops = []
    for op in data["ops"]:
        signatures = tuple(
            tuple(
                InputMeta(
                    m["name"],
                    tuple(m["shape"]) if m["shape"] is not None else None,
                    m["dtype"],
                    tuple(m["stride"]) if m["stride"] is not None else None,
                    m["value"],
                )
                for m in signature
            )
            for signature in op["signatures"]
        )
        ops.append(
            ProfiledOp(
                op["file"],
                op["qualname"],
                op["what"],
                op["calls"],
                op["self_us"],
                signatures,
                op["init_state"],
                {k: tuple(v) for k, v in op["param_shapes"].items()},
                op["param_dtypes"],
            )
        )
    return ProfileRun(data["time_kind"], data["total_us"], tuple(ops))


def stats_for(op: ProfiledOp, run: ProfileRun) -> ProfileStats:
    share = op.self_time_us / run.total_us if run.total_us > 0 else 0.0
    return ProfileStats(
        calls=op.calls,
        self_time_us=op.self_time_us,
        time_share=share,
        time_kind=run.time_kind,
        e2e_speedup_if_3x=amdahl_speedup(share),
        inputs_seen=op.signatures,
        init_state=op.init_state,
        param_shapes=op.param_shapes,
        param_dtypes=op.param_dtypes,
    )


def functions_to_wrap(findings: list[Finding]) -> dict[str, list[str]]:
    """Top-level functions found statically (compiled, marked, configured), by file."""
    out: dict[str, list[str]] = {}
    for finding in findings:
        if not finding.entry and "." not in finding.qualname:
            out.setdefault(finding.file, []).append(finding.qualname)
    return out


def apply_profile(
    findings: list[Finding], run: ProfileRun, root: Path, options: ScanOptions
) -> list[Finding]:
    by_key = {(op.file, op.qualname): op for op in run.ops}
    out = []
    matched = set()
    for finding in findings:
        op = by_key.get(finding.key)
        if finding.entry and finding.entry not in CLASS_ENTRIES:
            # A module's range times its forward: another method's inputs are not forward's.
            op = None
        if op is not None:
            matched.add(finding.key)
            finding = replace(finding, profile=stats_for(op, run))
        out.append(finding)
    for key, op in by_key.items():
        if key in matched or op.what != "module":
            continue
        stats = stats_for(op, run)
        if stats.time_share < MIN_SHARE_FOR_NEW_FINDING:
            continue
        finding = profiled_finding(root, op.file, op.qualname, options)
        if finding is not None:
            out.append(replace(finding, profile=stats, kind=Kind.PROFILED))
    return out
