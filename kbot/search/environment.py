"""What a cached verdict depends on besides the two sources: the device a run evaluates on,
kbot's evaluator code, torch and Triton, and the evaluation options that change a verdict."""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path

import kbot
from kbot import __version__
from kbot.errors import UsageError
from kbot.evaluate.options import EvalOptions


def resolve_device(device: str, gpus: Sequence[int] = ()) -> tuple[str, str]:
    """("cpu" | "cuda", a name for reports and the cache key: "cpu" or the GPU's name)."""
    import torch

    has_cuda = torch.cuda.is_available()
    if device == "cuda" and not has_cuda:
        raise UsageError("--device cuda: no CUDA GPU is visible; use --device cpu or auto")
    if device == "cpu" or not has_cuda:
        return "cpu", "cpu"
    return "cuda", torch.cuda.get_device_name(gpus[0] if gpus else None)


# EvalOptions fields that change a verdict: trials, what is timed and against what, the time
# limits (a timeout is a cached rejection), the sandbox (its audit hooks reject). Not `gpus`
# (the device name is in the key) nor `allow_unsandboxed`.
VERDICT_OPTIONS = (
    "seeds",
    "time",
    "compile_baselines",
    "timeout_s",
    "baseline_timeout_s",
    "timing_budget_s",
    "sandbox",
)


def environment_key(device_name: str, eval_options: EvalOptions) -> str:
    """What a cached verdict depends on besides the two sources: the device, kbot's version and
    the digest of its evaluator code (verdicts of other evaluator code are not reused), torch
    and Triton, and the evaluation options that change a verdict. The same options give the
    same key, so a resumed run reuses its verdicts."""
    versions = [f"kbot={__version__}+{evaluator_code_digest()}"]
    for package in ("torch", "triton"):
        try:
            versions.append(f"{package}={metadata.version(package)}")
        except metadata.PackageNotFoundError:
            versions.append(f"{package}=absent")
    settings = [f"{name}={getattr(eval_options, name)}" for name in VERDICT_OPTIONS]
    return "|".join([device_name, *versions, *settings])


@functools.lru_cache(maxsize=1)
def evaluator_code_digest() -> str:
    """sha256 (12 hex digits) of the code that reaches a verdict: kbot/evaluate and
    kbot/problem. Edits during development change it as a release does."""
    root = Path(kbot.__file__).parent
    digest = hashlib.sha256()
    for folder in ("evaluate", "problem"):
        for path in sorted((root / folder).glob("*.py")):
            digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:12]
