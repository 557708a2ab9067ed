"""Candidates' processes started ahead of their candidates.

A candidate's process spends most of its start-up (the interpreter, torch, Triton, a CUDA
context, a warm-up kernel; about 5 s on an H200 host) before it knows its candidate, so the
judge starts the next ones while it checks the current one. Each process still serves exactly
one candidate and is closed after it: starting it early changes when it starts, not what it
has seen. No process starts while anything is timed: `settle` waits for those under way
before the judge measures, so a start-up never competes with a measurement.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import torch

from kbot.evaluate.confine import Sandbox
from kbot.evaluate.remote import CandidateProcess, HostError

# Started at once while a job's candidates are checked: the machine's cores do the start-ups
# in parallel; a CPU-only machine (the interpreter, often two cores) starts one ahead.
AHEAD_ON_GPU = 3
AHEAD_ON_CPU = 1


class HostPool:
    def __init__(self, workdir: Path, device: torch.device, sandbox: Sandbox) -> None:
        self.workdir = workdir
        self.device = device
        self.sandbox = sandbox
        self._waiting: list[CandidateProcess] = []

    @property
    def ahead_limit(self) -> int:
        return AHEAD_ON_GPU if self.device.type == "cuda" else AHEAD_ON_CPU

    def take(self) -> CandidateProcess:
        """A ready process for the next candidate: the oldest one started ahead, or a new one.
        HostError if it could not start (the evaluator's failure, not the candidate's)."""
        host = self._waiting.pop(0) if self._waiting else self._launch()
        try:
            host.wait_ready()
        except HostError:
            host.close()
            raise
        return host

    def ahead(self, count: int) -> None:
        """Has `count` processes (at most `ahead_limit`) started for candidates to come."""
        while len(self._waiting) < min(count, self.ahead_limit):
            try:
                self._waiting.append(self._launch())
            except HostError:  # the machine refused a process now: `take` starts one later
                return

    def settle(self) -> None:
        """Waits until every process started ahead is ready (or gone), so that none is busy
        starting while the judge times."""
        for host in list(self._waiting):
            try:
                host.wait_ready()
            except HostError:
                host.close()
                self._waiting.remove(host)

    def close(self) -> None:
        for host in self._waiting:
            host.close()
        self._waiting = []

    def _launch(self) -> CandidateProcess:
        folder = self.workdir / f"candidate-{uuid.uuid4().hex[:12]}"
        host = CandidateProcess(folder, self.device, self.sandbox)
        try:
            host.launch()
        except OSError as exc:
            host.close()
            raise HostError(f"the candidate's process could not be started: {exc}") from None
        return host
