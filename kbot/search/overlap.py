"""Proposers that wait on a model run beside the evaluation, so the GPU is not idle while the
model thinks.

A proposer that sets `overlaps_evaluation = True` (the `llm` proposer: its call is a network
round trip of seconds to minutes) is not asked in line. The loop hands a generation's asks to
it (`Ask`: the proposer, the parents, the island) to one background thread, which asks them one
after another while the loop evaluates the other proposers' candidates; each answer is taken
back on the loop's thread as soon as it is ready (`take_ready`), recorded there (the loop stays
the only writer of the store) and its candidates join the generation's queue. A model with
requests in flight for one ask (`llm.concurrency`) keeps that many going at once.

The thread only calls `propose`; budgets left are counted from what the run had spent when the
generation started plus what this thread's earlier asks spent, so a generation never asks for
more than its run may pay. Past the time budget or on a stop request the loop stops waiting
(`cancel`): an ask in flight finishes in its thread and is dropped with the run.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from kbot.propose.base import ProposeContext, ProposeOutcome, Proposer

POLL_S = 0.05


def overlaps_evaluation(proposer: Proposer) -> bool:
    return bool(getattr(proposer, "overlaps_evaluation", False))


@dataclass(frozen=True)
class Ask:
    """One call the loop would have made in line: `parents` are archive entries (empty for a
    seed), `island` where its candidates go."""

    proposer: Proposer
    parents: tuple[Any, ...]
    island: int
    max_proposals: int


@dataclass(frozen=True)
class Answered:
    ask: Ask
    outcome: ProposeOutcome | None  # None when the call raised
    error: str = ""


# (ask, tokens and USD this thread's earlier asks spent) -> the ask's context
ContextFor = Callable[[Ask, int, float], ProposeContext]


class BackgroundAsks:
    def __init__(self, asks: Sequence[Ask], context_for: ContextFor) -> None:
        self._asks = list(asks)
        self._context_for = context_for
        self._lock = threading.Lock()
        self._ready: list[Answered] = []
        self._arrived = threading.Event()
        self._done = threading.Event()
        self._cancelled = threading.Event()
        self._thread = threading.Thread(target=self._run, name="kbot-model-asks", daemon=True)

    @property
    def proposer_names(self) -> list[str]:
        return list(dict.fromkeys(ask.proposer.name for ask in self._asks))

    def start(self) -> BackgroundAsks:
        self._thread.start()
        return self

    @property
    def finished(self) -> bool:
        """Every ask was answered (or the thread was cancelled) and none waits to be taken."""
        with self._lock:
            return self._done.is_set() and not self._ready

    def take_ready(self) -> list[Answered]:
        with self._lock:
            ready, self._ready = self._ready, []
            self._arrived.clear()
        return ready

    def wait_next(
        self,
        deadline: float | None,
        stopped: Callable[[], bool],
        clock: Callable[[], float] = time.monotonic,
    ) -> str | None:
        """Waits until an answer is ready or every ask is done; "time" past `deadline`, "stop"
        on a stop request (the caller then cancels)."""
        while not self._arrived.is_set() and not self._done.is_set():
            if stopped():
                return "stop"
            if deadline is not None and clock() >= deadline:
                return "time"
            self._arrived.wait(POLL_S)
        return None

    def cancel(self) -> None:
        """No further ask is started; the one in flight ends in its thread."""
        self._cancelled.set()

    def _run(self) -> None:
        tokens, usd = 0, 0.0
        try:
            for ask in self._asks:
                if self._cancelled.is_set():
                    break
                try:
                    outcome = ask.proposer.propose(self._context_for(ask, tokens, usd))
                except Exception as exc:  # a proposer bug costs its proposals, never the run
                    answered = Answered(ask, None, f"{type(exc).__name__}: {exc}")
                else:
                    tokens += outcome.tokens_used
                    usd += outcome.usd_spent
                    answered = Answered(ask, outcome)
                with self._lock:
                    self._ready.append(answered)
                    self._arrived.set()
        finally:
            self._done.set()
            self._arrived.set()
