"""The judge's handle on one candidate's process (kbot.evaluate.candidate_host).

A fresh process per candidate, in its own process group and, where the machine allows, in the
namespaces of kbot.evaluate.confine; nothing of one candidate survives into the next. Requests
go out as JSON lines with tensors in payload files; every wait has a deadline, after which the
whole group is killed (`timeout`); an exit or a signal is a `crash` with the last line the
process printed. What it prints is read back bounded.
"""

from __future__ import annotations

import itertools
import json
import os
import re
import secrets
import selectors
import shutil
import subprocess
import sys
import time
import weakref
from pathlib import Path
from typing import Any

import torch

from kbot.evaluate import confine, wire
from kbot.evaluate.confine import Sandbox
from kbot.evaluate.processes import how_it_ended, kill_group
from kbot.evaluate.verdict import Reason

OUTPUT_LIMIT_CHARS = 4000
STARTUP_TIMEOUT_S = 180.0
DEFAULT_MAX_REPLY_BYTES = 1 << 30
_MAX_LINE_BYTES = 16 << 20


class CandidateLost(Exception):
    """The candidate's process timed out, crashed or broke the protocol; it is gone."""

    def __init__(self, reason: Reason) -> None:
        super().__init__(reason.message)
        self.reason = reason


class CandidateFailed(Exception):
    """The candidate's process answered with a failure (a rule and a message)."""

    def __init__(self, reason: Reason, fatal: bool) -> None:
        super().__init__(reason.message)
        self.reason = reason
        self.fatal = fatal


class HostError(RuntimeError):
    """The candidate's process could not be started: the evaluator's failure, not the candidate's."""


class CandidateProcess:
    def __init__(self, folder: Path, device: torch.device, sandbox: Sandbox) -> None:
        self.folder = folder
        self.device = device
        self.sandbox = sandbox
        self.refused: list[str] = []
        # The most bytes a reply's tensors may occupy: the judge sets it from what it sent and
        # expects back, so a candidate cannot make it read (and allocate) without bound.
        self.max_reply_bytes = DEFAULT_MAX_REPLY_BYTES
        self._process: subprocess.Popen | None = None
        self._buffer = b""
        self._names = itertools.count()
        self._launched_at = 0.0
        self._ready = False
        self.startup: dict[str, float] = {}
        for sub in ("exchange", "home", "tmp", "triton-cache", "source"):
            (folder / sub).mkdir(parents=True, exist_ok=True)
        # Opened now, before the candidate's process exists: every payload file the judge
        # writes or reads is named in this folder, whatever the process later puts in its
        # place or in it (wire.Outbox, wire.open_payload).
        self._exchange_fd = os.open(
            folder / "exchange", os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
        )
        self._close_exchange = weakref.finalize(self, os.close, self._exchange_fd)

    # --- life ----------------------------------------------------------------------------

    def start(self) -> None:
        """Starts the process and waits until it is ready for its candidate."""
        self.launch()
        self.wait_ready()

    def launch(self) -> None:
        """Starts the process without waiting for it: it imports torch and Triton, warms up
        and then waits for its candidate (kbot.evaluate.host_pool starts the next ones while
        the judge checks the current one)."""
        package_dir = Path(__file__).resolve().parents[1]
        package_root = str(package_dir.parent)
        env = confine.candidate_environment(dict(os.environ), self.folder, package_root)
        if self.device.type == "cpu":
            env["TRITON_INTERPRET"] = "1"
            env["CUDA_VISIBLE_DEVICES"] = ""
        else:
            env.pop("TRITON_INTERPRET", None)
            env["CUDA_VISIBLE_DEVICES"] = os.environ.get("CUDA_VISIBLE_DEVICES", "0").split(",")[0]
            libcuda = _libcuda_dir()
            if libcuda:
                env.setdefault("TRITON_LIBCUDA_PATH", libcuda)
        args = [
            "-m",
            "kbot.evaluate.candidate_host",
            "--folder",
            str(self.folder),
            "--device",
            self.device.type,
        ]
        if self.sandbox.confined:
            root = self.folder.parent / f"{self.folder.name}-root"
            root.mkdir(exist_ok=True)
            plan = confine.plan_for(self.folder, root, package_dir)
            args += ["--confine", plan.to_json()]
            argv = confine.command(args)
        else:
            argv = [sys.executable, *args]
        # If the judge dies (killed at a budget's end, say), its candidates die with it: they
        # run in sessions of their own, so the judge's process group does not reach them.
        setpriv = shutil.which("setpriv")
        if setpriv:
            argv = [setpriv, "--pdeathsig", "KILL", *argv]
        self._process = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=open(self.folder / "startup.txt", "wb"),
            cwd=self.folder,
            env=env,
            start_new_session=True,
        )
        self._launched_at = time.monotonic()

    @property
    def launched(self) -> bool:
        return self._process is not None

    def wait_ready(self) -> None:
        """Waits for the process's `ready`; HostError if it did not come within the start-up
        limit (counted from the launch)."""
        if self._ready:
            return
        try:
            ready = self._read(self._launched_at + STARTUP_TIMEOUT_S)
        except CandidateLost as lost:
            raise HostError(
                f"the candidate's process did not start: {lost.reason.message}"
            ) from None
        if ready.get("event") != "ready":
            self.kill()
            raise HostError(f"the candidate's process did not start: {ready.get('message', ready)}")
        self._ready = True
        # Seconds the process spent importing torch, warming up and in all before `ready`.
        startup = ready.get("startup")
        self.startup = dict(startup) if isinstance(startup, dict) else {}

    def kill(self) -> None:
        if self._process is not None:
            kill_group(self._process)
            self._process = None

    def close(self) -> None:
        self.kill()
        self._close_exchange()
        shutil.rmtree(self.folder, ignore_errors=True)
        shutil.rmtree(self.folder.parent / f"{self.folder.name}-root", ignore_errors=True)

    def output(self) -> str:
        """What the process printed, trimmed to its head and tail."""
        text = ""
        for name in ("startup.txt", "output.txt"):
            text += _read_own_file(self.folder / name, 1 << 20)
        if len(text) <= OUTPUT_LIMIT_CHARS:
            return text
        half = OUTPUT_LIMIT_CHARS // 2
        return f"{text[:half]}\n... [{len(text) - 2 * half} characters trimmed] ...\n{text[-half:]}"

    # --- requests ------------------------------------------------------------------------

    def request(self, op: str, timeout_s: float, **fields: Any) -> dict[str, Any]:
        """Sends one request; returns the reply's fields with its tensors decoded. Raises
        CandidateFailed for an answered failure, CandidateLost for a lost process."""
        # A name the process cannot predict (it could only make a planted one fail).
        name = f"request-{next(self._names)}-{secrets.token_hex(8)}.bin"
        outbox = wire.Outbox.at(self.folder / "exchange" / name, self._exchange_fd)
        message: dict[str, Any] = {"op": op}
        for key, value in fields.items():
            message[key] = wire.encode(value, outbox) if key in _TENSOR_FIELDS else value
        if outbox.chunks:
            try:
                message["payload"] = outbox.write()
            except OSError as exc:
                raise CandidateLost(
                    Reason("protocol", f"the request's payload could not be written ({exc})")
                ) from None
        started = time.monotonic()
        self._send(message)
        reply = self._read(started + timeout_s)
        if outbox.chunks:
            self._unlink(name)
        self.refused = [str(r) for r in reply.get("refused", [])][:20]
        if not reply.get("ok"):
            rule = str(reply.get("rule", "protocol"))
            fatal = bool(reply.get("fatal"))
            if fatal:
                self.kill()
            said = str(reply.get("message") or "").strip()[:500]
            said = said or f"the candidate's process reported a failure ({rule}) without saying why"
            raise CandidateFailed(Reason(rule, said), fatal)
        return self._decoded(reply)

    def _decoded(self, reply: dict[str, Any]) -> dict[str, Any]:
        payload = reply.get("payload")
        name = None if payload is None else self._reply_name(payload)
        fd, values = None, {}
        try:
            declared = sum(wire.declared_bytes(reply[k]) for k in _TENSOR_FIELDS & set(reply))
            if declared > self.max_reply_bytes:
                raise wire.WireError(
                    f"tensors of {declared} bytes where at most {self.max_reply_bytes} were due"
                )
            if name is not None:
                fd = wire.open_payload(self._exchange_fd, name, self.max_reply_bytes)
            for key in _TENSOR_FIELDS & set(reply):
                values[key] = wire.decode(reply[key], fd, self.device, readers=REPLY_READERS)
        except (wire.WireError, OSError) as exc:
            raise CandidateLost(Reason("protocol", f"an unreadable reply: {exc}")) from None
        except RuntimeError as exc:  # torch's, from a layout or a size the reply made up
            said = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:300]
            raise CandidateLost(Reason("protocol", f"an unreadable reply: {said}")) from None
        finally:
            if fd is not None:
                os.close(fd)
            if name is not None:
                self._unlink(name)
        return {**{k: v for k, v in reply.items() if k not in _TENSOR_FIELDS}, **values}

    def _reply_name(self, payload: Any) -> str:
        """The reply's payload file, by name in the exchange folder: the path the process
        sends must be that folder's, as the judge spells it, and the name its host writes."""
        path = Path(str(payload))
        if path.parent != self.folder / "exchange" or not _REPLY_NAME.fullmatch(path.name):
            raise CandidateLost(Reason("protocol", "a reply named a file outside its folder"))
        return path.name

    def _unlink(self, name: str) -> None:
        try:
            os.unlink(name, dir_fd=self._exchange_fd)
        except OSError:
            pass

    def _send(self, message: dict[str, Any]) -> None:
        assert self._process is not None and self._process.stdin is not None
        try:
            self._process.stdin.write((json.dumps(message) + "\n").encode())
            self._process.stdin.flush()
        except (BrokenPipeError, OSError):
            raise CandidateLost(self._crash_reason()) from None

    def _read(self, deadline: float) -> dict[str, Any]:
        if self._process is None or self._process.stdout is None:
            raise CandidateLost(Reason("crash", "the candidate's process is gone"))
        stream = self._process.stdout
        with selectors.DefaultSelector() as selector:
            selector.register(stream, selectors.EVENT_READ)
            while b"\n" not in self._buffer:
                # A reply already waiting is read even past the deadline: a process started
                # ahead may have been ready long before its candidate came (host_pool).
                remaining = max(deadline - time.monotonic(), 0.0)
                if not selector.select(timeout=remaining):
                    self.kill()
                    raise CandidateLost(
                        Reason("timeout", "timed out: killed the candidate's process group")
                    )
                chunk = os.read(stream.fileno(), 1 << 16)
                if not chunk:
                    raise CandidateLost(self._crash_reason())
                self._buffer += chunk
                if len(self._buffer) > _MAX_LINE_BYTES:
                    self.kill()
                    raise CandidateLost(
                        Reason("protocol", "the candidate's process flooded its reply")
                    )
        line, self._buffer = self._buffer.split(b"\n", 1)
        try:
            reply = json.loads(line)
        except json.JSONDecodeError:
            self.kill()
            raise CandidateLost(
                Reason("protocol", "the candidate's process sent garbage")
            ) from None
        if not isinstance(reply, dict):
            self.kill()
            raise CandidateLost(Reason("protocol", "the candidate's process sent garbage"))
        return reply

    def _crash_reason(self) -> Reason:
        code = None
        if self._process is not None:
            try:
                code = self._process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                code = None
        self.kill()
        how = how_it_ended(code, shell_convention=self.sandbox.confined)
        output = self.output()
        last = next((line.strip() for line in reversed(output.splitlines()) if line.strip()), "")
        said = f": {last[:300]}" if last else ""
        return Reason("crash", f"the candidate's process {how}{said}")


_TENSOR_FIELDS = frozenset({"init", "state", "inputs", "outputs", "inputs_after"})
# Threads that read a reply's large tensors (wire.PARALLEL_MIN_BYTES and up): a 2 GiB case's
# outputs and inputs come back every trial.
REPLY_READERS = 8


def _read_own_file(path: Path, limit: int) -> str:
    """The head of a file in the process's folder, where it can write (wire.open_regular: a
    link there once named `/proc/self/cwd/../x`, a file outside the sandbox for the judge);
    "" for anything but a regular file."""
    try:
        fd = wire.open_regular(path)
    except wire.WireError:
        return ""
    try:
        return os.read(fd, limit).decode("utf-8", "replace")
    except OSError:
        return ""
    finally:
        os.close(fd)


# The names kbot.evaluate.host_session gives its replies' payload files.
_REPLY_NAME = re.compile(r"reply-\d+\.bin")


def _libcuda_dir() -> str:
    """Where libcuda lives, found by the judge (Triton would run ldconfig for it, which the
    candidate's process may not)."""
    try:
        from triton.backends.nvidia.driver import libcuda_dirs

        dirs = libcuda_dirs()
        return dirs[0] if dirs else ""
    except Exception:  # an older Triton: the candidate's own lookup then has to find it
        return ""
