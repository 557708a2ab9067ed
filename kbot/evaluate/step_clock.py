"""Where one correctness call's time goes inside the candidate's process: its steps, timed there
and sent back with the reply (kbot.evaluate.host_session); the judge reports the steps it knows
(kbot.evaluate.jobs) as that process's word."""

from __future__ import annotations

import time

import torch

# The steps of a call StepClock times, in their order (the judge reads these names only).
HOST_STEPS = ("inputs in", "placing", "poison", "forward", "checks", "outputs out")


class StepClock:
    """Seconds per step of one call by this process's clock (the GPU synchronised at each
    mark), sent back with the reply: the judge reports them as this process's word, beside
    the phases it timed itself (a 2 GiB case's call took seconds more than its tensors'
    crossings explain on the H100, 2026-12-06)."""

    def __init__(self, device: torch.device) -> None:
        self.device, self.since = device, time.perf_counter()
        self.steps: dict[str, float] = {}

    def mark(self, step: str) -> None:
        """The time since the last mark goes to `step`."""
        assert step in HOST_STEPS, step
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)
        now = time.perf_counter()
        self.steps[step] = self.steps.get(step, 0.0) + now - self.since
        self.since = now
