"""A candidate timed in its own process, as the judge's `measure` interleaves it with the
baselines: samples requested batch by batch, the claimed time held against the judge's clock,
the timed graph refilled and replayed for the judge's recheck."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any

from kbot.evaluate.remote import CandidateFailed, CandidateLost
from kbot.evaluate.timing import to_stat
from kbot.evaluate.verdict import Reason


class RemoteLost(Exception):
    def __init__(self, index: int, reason: Reason) -> None:
        super().__init__(reason.message)
        self.index = index
        self.reason = reason


# The judge's own clock must see at least this share of the time a candidate's process claims
# for a batch of back-to-back replays: its claimed replays run L2-cold with a flush before each,
# so an honest claim is at least the back-to-back wall time; a patched timer claims less.
_CLOCK_AGREEMENT = 0.7
# Below this wall time per replay the judge's clock sees the host's launch cost, not the GPU's.
_CLOCK_FLOOR_US = 30.0
_CLOCK_BATCH_US = 20_000.0
_CLOCK_ATTEMPTS = 3


@dataclass
class RemoteImplementation:
    """A candidate timed in its own process: samples are requested per batch, as `measure`
    interleaves it with the baselines."""

    host: Any  # kbot.evaluate.remote.CandidateProcess
    index: int  # the candidate's position in the job
    calls_per_replay: int
    timeout_s: float
    name: str = "candidate"
    graph_us: list[float] = field(default_factory=list)
    plain_us: list[float] = field(default_factory=list)
    host_us: list[float] = field(default_factory=list)

    @classmethod
    def capture(cls, host, case_index: int, inputs: list, copies: int, timeout_s: float):
        """The candidate's timed graph, and the outputs of the call that placed the timing
        inputs (the baselines' own) in the case's buffers, for the judge to check."""
        placed = host.request("call", timeout_s, case=case_index, inputs=inputs, poison_bytes=[])
        host.request("capture", timeout_s, case=case_index, copies=copies)
        return cls(host, case_index, copies, timeout_s), tuple(placed["outputs"])

    def take(self, flush, n: int) -> None:
        try:
            reply = self.host.request("sample", self.timeout_s, n=n)
        except (CandidateFailed, CandidateLost) as exc:
            raise RemoteLost(self.index, exc.reason) from None
        graph, plain, host = reply.get("graph_us"), reply.get("plain_us"), reply.get("host_us")
        if not _samples(graph, n) or not _samples(plain, n) or not _samples(host, n):
            raise RemoteLost(
                self.index, Reason("timing", "the candidate's process sent malformed times")
            )
        self.graph_us += [float(v) for v in graph]
        self.plain_us += [float(v) for v in plain]
        self.host_us += [float(v) for v in host]

    def clock_check(self) -> Reason | None:
        """Replays the timed graph back to back and holds the claimed time against the judge's
        own clock over the batch. The clock can only over-read (a busy host delays launches and
        the judge's wake-up; the GPU time is never less than what a patched timer hides), so one
        batch that agrees clears the claim, and it is contradicted only when every one of
        _CLOCK_ATTEMPTS batches disagrees: a false `timing-integrity` under a loaded CPU cost a
        correct candidate on the H200."""
        claimed_us = to_stat(self.graph_us).median_us * self.calls_per_replay
        times = int(min(100_000, max(3, _CLOCK_BATCH_US // max(claimed_us, 1e-3))))
        seen: list[float] = []
        for _ in range(_CLOCK_ATTEMPTS):
            seen_us = self._seen_per_replay(times)
            if seen_us <= _CLOCK_FLOOR_US or claimed_us >= _CLOCK_AGREEMENT * seen_us:
                return None
            seen.append(seen_us)
        return Reason(
            "timing-integrity",
            f"the candidate's process reported {claimed_us:.2f} us per graph replay, but the "
            f"judge's clock saw at least {min(seen):.2f} us per replay over {times} replays "
            f"(every one of {len(seen)} batches)",
        )

    def _seen_per_replay(self, times: int) -> float:
        """Wall time per replay of one batch on the judge's clock, less one request's round trip."""
        started = time.perf_counter()
        self.host.request("ping", self.timeout_s)
        round_trip_s = time.perf_counter() - started
        started = time.perf_counter()
        self.host.request("replay", self.timeout_s, times=times)
        return max(0.0, (time.perf_counter() - started - round_trip_s) * 1e6 / times)

    def recheck(self, fresh: list, copy: int = 0) -> tuple:
        """The outputs of the graph's call on input copy `copy`, refilled with `fresh`."""
        reply = self.host.request("recheck", self.timeout_s, inputs=fresh, copy=copy)
        return tuple(reply["outputs"])

    def release(self) -> None:
        release(self.host, self.timeout_s)


def release(host, timeout_s: float) -> None:
    """The candidate's process drops its timed graph and gives its cached memory back to the
    card; a process that cannot answer has nothing left to give."""
    try:
        host.request("release", timeout_s)
    except (CandidateFailed, CandidateLost):
        pass


def _samples(values: Any, n: int) -> bool:
    return (
        isinstance(values, list)
        and len(values) == n
        and all(isinstance(v, (int, float)) and math.isfinite(v) and v > 0 for v in values)
    )
