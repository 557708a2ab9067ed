"""An optimize job's first step: find its target among the problems this runner extracted, and
name the cache that carries the search store from one workflow run to the next.

Each optimize job extracts the problems again on its own runner (a static scan, seconds)
rather than downloading the scan job's: a problem file imports the target from the checkout
it was written in, and that path differs from runner to runner.

The store cache key is `kbot-store-v1-<gpu>-<op>-<reference sha256>-<run>`: a key is written
once, so each run saves under its own `<run>` and restores the newest entry of the same GPU
model, op and reference (the problem file's hash, which the store keys its verdicts by: a
different reference could reuse none of them).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kbot.errors import UsageError

CACHE_PREFIX = "kbot-store-v1"


@dataclass(frozen=True)
class PreparedTarget:
    op: str
    target: str  # "file.py::Qualname"
    problem: Path
    target_json: Path
    reference_sha256: str
    gpu_model: str  # "nvidia-h200", or "cpu"
    cache_key: str
    cache_restore_key: str  # the prefix the newest earlier entry is found by
    artifact: str  # the name the run directory is uploaded under


def wanted_op(target: str) -> str:
    """The op an optimize job is for: a matrix entry as JSON (`toJSON(matrix)`) or a bare name."""
    text = target.strip()
    if text.startswith("{"):
        try:
            entry = json.loads(text)
        except ValueError as exc:
            raise UsageError(f"--target is not valid JSON ({exc})") from None
        name = entry.get("op") or entry.get("name") if isinstance(entry, dict) else None
        if not isinstance(name, str) or not name:
            raise UsageError('--target must be a matrix entry with an "op", like {"op": "rmsnorm"}')
        return name
    if not re.fullmatch(r"[A-Za-z0-9_.-]+", text):
        raise UsageError(f"--target {text!r}: give a matrix entry (JSON) or an op name")
    return text


def prepare_target(
    scan_data: dict[str, Any],
    target: str,
    gpu_model: str,
    run_key: str,
    artifact_prefix: str = "kbot-run-",
) -> PreparedTarget:
    op = wanted_op(target)
    problems = {p.get("name"): p for p in scan_data.get("problems") or []}
    problem = problems.get(op)
    if problem is None:
        known = ", ".join(sorted(str(n) for n in problems)) or "none"
        raise UsageError(
            f"target {op!r} is not among the ops this runner's scan found ({known}); "
            "scan and optimize must run on the same commit and configuration"
        )
    if problem.get("status") != "emitted" or not problem.get("path"):
        raise UsageError(f"target {op!r} was not extracted here: {problem.get('message')}")
    path = Path(problem["path"])
    reference = hashlib.sha256(path.read_bytes()).hexdigest()
    gpu = cache_segment(gpu_model) or "cpu"
    restore = f"{CACHE_PREFIX}-{gpu}-{cache_segment(op)}-{reference[:16]}-"
    return PreparedTarget(
        op=op,
        target=str(problem.get("target") or ""),
        problem=path,
        target_json=Path(problem.get("target_json") or path.with_suffix(".target.json")),
        reference_sha256=reference,
        gpu_model=gpu,
        cache_key=restore + (cache_segment(run_key) or "local"),
        cache_restore_key=restore,
        artifact=f"{artifact_prefix}{op}",
    )


def cache_segment(text: str) -> str:
    """Lower case letters, digits, dots, underscores and dashes: safe in a cache key (no commas)
    and an artifact name."""
    return re.sub(r"[^a-z0-9._]+", "-", text.lower()).strip("-")


def detect_gpu_model() -> str:
    """The first GPU's model as nvidia-smi names it, or "cpu" where there is none or the
    runner hides its GPUs from CUDA (CUDA_VISIBLE_DEVICES empty or -1): kbot then runs on
    the CPU, and the store it saves holds CPU verdicts."""
    smi = shutil.which("nvidia-smi")
    if smi is None or os.environ.get("CUDA_VISIBLE_DEVICES", "x").strip() in ("", "-1"):
        return "cpu"
    try:
        done = subprocess.run(
            [smi, "--query-gpu=name", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=30,
        )
    except (OSError, subprocess.TimeoutExpired):
        return "cpu"
    names = [line.strip() for line in done.stdout.splitlines() if line.strip()]
    return names[0] if done.returncode == 0 and names else "cpu"
