"""The parent's handle on one judge child: spawn `python -m kbot.evaluate.worker` in its own
process group with a scrubbed environment, send a job, wait with a hard deadline that follows
the judge's phases, kill the whole group on a timeout, report crashes, respawn on demand. The
judge itself starts a sandboxed process per candidate (kbot.evaluate.remote)."""

from __future__ import annotations

import json
import os
import selectors
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kbot.evaluate.credentials import scrub_environment
from kbot.evaluate.processes import how_it_ended, kill_group
from kbot.evaluate.protocol import PROTOCOL_VERSION, Job

OUTPUT_LIMIT_CHARS = 4000
STARTUP_TIMEOUT_S = 300.0
READ_POLL_S = 0.25  # how soon a read notices that another thread killed the worker
# A long search loads hundreds of candidate modules and kernels into one worker; a fresh one
# every so often bounds that growth.
JOBS_PER_WORKER = 500


@dataclass(frozen=True)
class WorkerReply:
    """What one job produced: the worker's result message, or a failure the parent observed."""

    result: dict[str, Any] | None
    failure: str | None  # "timeout" or "crash"
    message: str
    output: str
    wall_s: float
    phase: str = ""  # the stage the worker had announced when it was lost
    # where the job's time went: (phase, or "phase: step", seconds) in the order they came
    steps: tuple[tuple[str, float], ...] = ()


@dataclass
class WorkerInfo:
    device: str = ""  # "cpu" or "cuda"
    device_name: str = ""
    versions: dict[str, str] = field(default_factory=dict)
    # where the judge runs, as it sees it: visible_devices, and on a GPU current_device,
    # device_count, uuid and (where torch names it) pci_bus_id (kbot.evaluate.worker)
    placement: dict[str, str] = field(default_factory=dict)


class WorkerStartError(RuntimeError):
    pass


class WorkerProcess:
    """One worker child, started lazily and again after it dies."""

    def __init__(
        self, device: str = "auto", gpu: int | None = None, sandbox: str = "confined"
    ) -> None:
        self.device = device
        self.gpu = gpu
        self.sandbox = sandbox  # how the judge starts candidates' processes: confined | plain
        self.info = WorkerInfo()
        self._process: subprocess.Popen | None = None
        self._folder = Path(tempfile.mkdtemp(prefix="kbot-eval-"))
        self._capture = self._folder / "output.txt"
        self._buffer = b""
        self._eof = False
        self.spawned = 0
        self._jobs = 0
        # Set by kill() from any thread: a read under way (start's handshake, a job's reply)
        # gives up within READ_POLL_S instead of waiting out its deadline on a pipe kill()
        # closed under it (Evaluator.abort at a budget's end).
        self._killed = False
        # The phase of the job under way and when it began (what an abort interrupted).
        self.phase = ""
        self.phase_started = 0.0

    @property
    def pid(self) -> int | None:
        """The judge's process id while it runs (bench/multi_gpu.py kills one to show what a
        lost worker costs), else None."""
        process = self._process
        return process.pid if process is not None and process.poll() is None else None

    @property
    def alive(self) -> bool:
        process = self._process  # another thread may kill it meanwhile
        return process is not None and process.poll() is None

    def start(self) -> WorkerInfo:
        if self.alive:
            return self.info
        self._killed = False
        self._capture.write_bytes(b"")
        env = scrub_environment(dict(os.environ))
        package_root = str(Path(__file__).resolve().parents[2])
        env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH")) if p)
        env["PYTHONUNBUFFERED"] = "1"
        if self.gpu is not None:
            env["CUDA_VISIBLE_DEVICES"] = str(self.gpu)
        if self.device == "cpu":
            env["CUDA_VISIBLE_DEVICES"] = ""
        self._process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "kbot.evaluate.worker",
                "--capture",
                str(self._capture),
                "--device",
                self.device,
                "--sandbox",
                self.sandbox,
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            cwd=self._folder,
            env=env,
            start_new_session=True,
        )
        self._buffer = b""
        self.spawned += 1
        message = self._read(time.monotonic() + STARTUP_TIMEOUT_S)
        if message is None or message.get("event") != "ready":
            output = self._output()
            why = message.get("message") if message else "it exited or hung while starting"
            self.kill()
            raise WorkerStartError(
                f"the evaluator's worker did not start: {why}. {output[-500:]}".strip()
            )
        if message.get("protocol") != PROTOCOL_VERSION:
            self.kill()
            raise WorkerStartError("the worker speaks another protocol version; reinstall kbot")
        self.info = WorkerInfo(
            message["device"],
            message["device_name"],
            dict(message["versions"]),
            {str(k): str(v) for k, v in (message.get("placement") or {}).items()},
        )
        return self.info

    def run(self, job: Job) -> WorkerReply:
        """Sends `job`; returns the result, or a timeout/crash (after which the worker is gone)."""
        if self._jobs >= JOBS_PER_WORKER:
            self.close_worker()
        if not self.alive:
            self._jobs = 0
        self.start()
        self._jobs += 1
        process = self._process
        assert process is not None and process.stdin is not None
        self._capture.write_bytes(b"")  # the worker appends, so truncation starts a fresh log
        started = time.monotonic()
        deadline = started + job.candidate_timeout_s
        phase = "start"
        self.phase, self.phase_started = phase, started
        marks: list[tuple[str, float]] = [(phase, started)]  # each label from when it began
        try:
            process.stdin.write(job.to_line())
            process.stdin.flush()
        except (BrokenPipeError, OSError, ValueError):  # ValueError: closed by an abort
            return self._crashed(started, phase)
        while True:
            message = self._read(deadline)
            if message is None:
                if not self._eof:
                    self.kill()
                    return WorkerReply(
                        None,
                        "timeout",
                        f"timed out during {phase}: killed the worker's process group",
                        self._output(),
                        time.monotonic() - started,
                        phase,
                    )
                return self._crashed(started, phase)
            if message.get("event") == "phase":
                phase = str(message.get("name", "?"))
                self.phase, self.phase_started = phase, time.monotonic()
                marks.append((phase, self.phase_started))
                deadline = time.monotonic() + float(
                    message.get("timeout_s", job.candidate_timeout_s)
                )
                continue
            if message.get("event") == "step":  # within the phase; its deadline stands
                self.phase = f"{phase}: {message.get('name', '?')}"
                marks.append((self.phase, time.monotonic()))
                continue
            if message.get("event") == "result":
                self.phase = ""
                if message.get("restart"):
                    self._reap()
                ended = time.monotonic()
                return WorkerReply(message, None, "", self._output(), ended - started,
                                   steps=_durations(marks, ended))  # fmt: skip

    def _crashed(self, started: float, phase: str) -> WorkerReply:
        how = how_it_ended(self._reap())
        output = self._output()
        # The last line a dying process printed is usually its exception: say it in the reason,
        # which is what reports and rejection tables show.
        last = next((line.strip() for line in reversed(output.splitlines()) if line.strip()), "")
        said = f": {last[:300]}" if last else ""
        return WorkerReply(
            None,
            "crash",
            f"the worker {how} during {phase}{said}",
            output,
            time.monotonic() - started,
        )

    def _read(self, deadline: float) -> dict[str, Any] | None:
        """The next JSON line from the worker, or None at the deadline or on EOF."""
        assert self._process is not None and self._process.stdout is not None
        stream = self._process.stdout
        self._eof = False
        with selectors.DefaultSelector() as selector:
            selector.register(stream, selectors.EVENT_READ)
            while b"\n" not in self._buffer:
                remaining = deadline - time.monotonic()
                if remaining <= 0 or self._killed:
                    self._eof = self._killed
                    return None
                if not selector.select(timeout=min(remaining, READ_POLL_S)):
                    continue
                if self._killed:  # the pipe may be closed under us
                    self._eof = True
                    return None
                chunk = os.read(stream.fileno(), 1 << 16)
                if not chunk:
                    self._eof = True
                    return None
                self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        try:
            return json.loads(line)
        except json.JSONDecodeError:
            return {"event": "garbage"}

    def _output(self) -> str:
        try:
            text = self._capture.read_bytes().decode("utf-8", "replace")
        except OSError:
            return ""
        if len(text) <= OUTPUT_LIMIT_CHARS:
            return text
        half = OUTPUT_LIMIT_CHARS // 2
        return f"{text[:half]}\n... [{len(text) - 2 * half} characters trimmed] ...\n{text[-half:]}"

    def _reap(self) -> int | None:
        process = self._process
        if process is None:
            return None
        try:
            code = process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            code = None
        self.kill()  # also ends whatever the candidate left running in the group
        return code

    def kill(self) -> None:
        self._killed = True
        # taken first: the reading thread and Evaluator.abort's thread may both get here
        process, self._process = self._process, None
        if process is not None:
            kill_group(process)

    def close(self) -> None:
        self.close_worker()
        shutil.rmtree(self._folder, ignore_errors=True)

    def close_worker(self) -> None:
        """Ends the worker process (politely, then by force); the handle can start another."""
        if self.alive:
            assert self._process is not None and self._process.stdin is not None
            try:
                self._process.stdin.write(Job(kind="shutdown").to_line())
                self._process.stdin.flush()
                self._process.wait(timeout=5)
            except (OSError, subprocess.TimeoutExpired):
                pass
        self.kill()


def _durations(marks: list[tuple[str, float]], ended: float) -> tuple[tuple[str, float], ...]:
    """(label, seconds) from the times each label began, the last one running to `ended`."""
    ends = [t for _, t in marks[1:]] + [ended]
    return tuple((label, round(end - began, 3)) for (label, began), end in zip(marks, ends))
