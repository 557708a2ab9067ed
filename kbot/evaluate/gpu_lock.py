"""One measurement on a GPU at a time, across processes.

The judge's timing (kbot.evaluate.timing_job) interleaves a candidate's samples with eager's and
torch.compile's; anything else that runs on the GPU meanwhile lands on some samples and not on
others, and a baseline slowed that way is a false "faster". Work that shares the GPU with a
search — the inductor proposer's capture compiling and autotuning the problem beside the
evaluations, a worker compiling its torch.compile baselines again after a restart — holds the
same lock around each of its own measurements, so no two measure at once.

The lock is an advisory `flock` on a file named after the GPU's UUID in the machine's temporary
folder: every process that sees the GPU (under any CUDA_VISIBLE_DEVICES numbering) names the
same file, and the kernel drops the lock with a process that dies holding it. Candidates never
see the file (their sandbox has a root of its own) and never take the lock.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import os
import re
import tempfile
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

LOCK_FOLDER = "kbot-gpu-locks"
# inductor's benchmarker methods that run kernels to time them (torch._inductor.runtime.benchmarking)
_BENCHMARK_METHODS = ("benchmark", "benchmark_gpu", "benchmark_gpu_with_cuda_graph")
_HOOKED = "_kbot_gpu_lock"


def lock_path(device: Any) -> Path:
    """The lock file of the CUDA device `device` (an index or a torch.device)."""
    import torch

    properties = torch.cuda.get_device_properties(device)
    identity = str(getattr(properties, "uuid", "") or "")
    if not identity:
        bus = [getattr(properties, f"pci_{part}_id", None) for part in ("domain", "bus", "device")]
        identity = "pci-" + "-".join(str(b) for b in bus) if None not in bus else properties.name
    name = re.sub(r"[^A-Za-z0-9_.-]", "_", identity)
    folder = Path(tempfile.gettempdir()) / LOCK_FOLDER
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    return folder / f"{name}.lock"


# Per process: lock file -> [descriptor, holders]. Taken once per process: inductor's
# `benchmark` calls its own `benchmark_gpu`, and a second flock from this process on another
# descriptor would wait on the first forever; a thread of the process that holds it (an
# autotuner's) goes on too, since what the lock keeps apart is processes.
_held: dict[Path, list[int]] = {}
_held_guard = threading.Lock()


@contextlib.contextmanager
def gpu_measurement(device: Any) -> Iterator[None]:
    """Holds the GPU's lock for the block (taken once per process); a no-op off CUDA."""
    import torch

    if torch.device(device).type != "cuda":
        yield
        return
    with held(lock_path(device)):
        yield


@contextlib.contextmanager
def held(path: Path) -> Iterator[None]:
    """An exclusive flock on `path` for the block, taken once per process."""
    with _held_guard:  # a thread that comes while this one waits for the flock waits too
        if path in _held:
            _held[path][1] += 1
        else:
            descriptor = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
            try:
                fcntl.flock(descriptor, fcntl.LOCK_EX)
            except BaseException:
                os.close(descriptor)
                raise
            _held[path] = [descriptor, 1]
    try:
        yield
    finally:
        with _held_guard:
            _held[path][1] -= 1
            if _held[path][1] == 0:
                os.close(_held.pop(path)[0])  # closing releases the lock


def _locked(method: Callable[..., Any], device: Any) -> Callable[..., Any]:
    @functools.wraps(method)
    def run_locked(*args: Any, **kwargs: Any) -> Any:
        with gpu_measurement(device):
            return method(*args, **kwargs)

    setattr(run_locked, _HOOKED, True)
    return run_locked


def _benchmarker() -> Any | None:
    """inductor's process-wide benchmarker, where this torch has one of the known shape."""
    try:
        from torch._inductor.runtime import benchmarking
    except ImportError:
        return None
    benchmarker = getattr(benchmarking, "benchmarker", None)
    if benchmarker is None or not all(
        callable(getattr(benchmarker, name, None)) for name in _BENCHMARK_METHODS[:2]
    ):
        return None
    return benchmarker


def inductor_benchmarks_lockable() -> bool:
    """Whether lock_inductor_benchmarks can hook this torch (checked without hooking)."""
    return _benchmarker() is not None


def lock_inductor_benchmarks(device: Any) -> bool:
    """Makes this process's inductor autotuning hold the GPU's lock while it times kernels.
    False where this torch has no benchmarker of the known shape: the caller must then not
    share the GPU with a measurement."""
    benchmarker = _benchmarker()
    if benchmarker is None:
        return False
    for name in _BENCHMARK_METHODS:
        method = getattr(benchmarker, name, None)
        if callable(method) and not getattr(method, _HOOKED, False):
            setattr(benchmarker, name, _locked(method, device))
    return True
