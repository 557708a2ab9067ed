"""What the parent, the judge and a candidate's process share about child processes: killing a
whole process group, saying how a process ended, pointing a child's fds 1 and 2 at a capture
file while the protocol keeps private duplicates, and the one-line form of an exception."""

from __future__ import annotations

import os
import signal
import subprocess
import traceback
from typing import BinaryIO


def kill_group(process: subprocess.Popen) -> None:
    """SIGKILLs the process's whole group (what a candidate left running dies with it), reaps
    it and closes the pipes to it."""
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        pass
    for pipe in (process.stdin, process.stdout):
        if pipe is not None:
            try:
                pipe.close()
            except OSError:
                pass


def how_it_ended(code: int | None, shell_convention: bool = False) -> str:
    """`was killed by SIGSEGV`, `exited with status 3`. `shell_convention`: a status above 128
    is 128 + a signal (what `unshare --fork` passes on for a child it waited for)."""
    signal_number = -code if code is not None and code < 0 else None
    if shell_convention and code is not None and code > 128:
        signal_number = code - 128
    if signal_number is None:
        return f"exited with status {code}"
    try:
        return f"was killed by {signal.Signals(signal_number).name}"
    except ValueError:
        return f"was killed by signal {signal_number}"


def redirect_output(capture: str | os.PathLike) -> tuple[BinaryIO, BinaryIO]:
    """Points fds 1 and 2 at `capture` and fd 0 at /dev/null; returns private duplicates of the
    original stdin and stdout for the protocol, so nothing a candidate prints reaches it."""
    proto_in = os.fdopen(os.dup(0), "rb")
    proto_out = os.fdopen(os.dup(1), "wb", buffering=0)
    capture_fd = os.open(capture, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    os.dup2(capture_fd, 1)
    os.dup2(capture_fd, 2)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    return proto_in, proto_out


def short(exc: BaseException) -> str:
    """`TypeError: ... (file.py:12)`: the exception and where in user code it was raised."""
    frames = traceback.extract_tb(exc.__traceback__)
    where = ""
    for frame in reversed(frames):
        if "kbot/evaluate" not in frame.filename and "kbot/problem" not in frame.filename:
            where = f" ({frame.filename.rsplit('/', 1)[-1]}:{frame.lineno})"
            break
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {(text[0] if text else '')[:300]}{where}"
