"""Proposers that are slow to answer run beside the evaluation, so the GPU is not idle while
they work.

A proposer that sets `overlaps_evaluation = True` is not asked in line: the `llm` proposer (its
call is a network round trip of seconds to minutes) and, on a GPU, the `inductor` proposer (its
child process compiles and autotunes the problem, its autotuning holding the GPU's measurement
lock, kbot.evaluate.gpu_lock). The loop hands a generation's asks (`Ask`: the proposer, the
parents, the island) to a background thread per proposer, which asks them one after another
while the loop evaluates the other proposers' candidates; each answer is taken back on the
loop's thread as soon as it is ready (`take_ready`), recorded there (the loop stays the only
writer of the store) and its candidates join the generation's queue. A model with requests in
flight for one ask (`llm.concurrency`) keeps that many going at once.

The threads only call `propose`; budgets left are counted from what the run had spent when the
generation started plus what the generation's answered asks spent, so a generation never asks
for more than its run may pay. Past the time budget or on a stop request the loop stops waiting
(`cancel`): an ask in flight is told through `context.cancelled` (the inductor proposer then
kills its child), finishes in its thread and is dropped with the run.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
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
        self._tokens, self._usd = 0, 0.0  # what this generation's answered asks spent
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
        """No further ask is started; the ones in flight are told (`context.cancelled`) and end
        in their threads."""
        self._cancelled.set()

    def _run(self) -> None:
        """One thread per proposer, each asking its own asks in order: a slow proposer (the
        inductor proposer compiling the problem) holds up no other's answers."""
        by_proposer: dict[int, list[Ask]] = {}
        for ask in self._asks:
            by_proposer.setdefault(id(ask.proposer), []).append(ask)
        threads = [
            threading.Thread(target=self._ask_in_turn, args=(asks,), daemon=True,
                             name=f"kbot-asks-{asks[0].proposer.name}")
            for asks in by_proposer.values()
        ]  # fmt: skip
        try:
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
        finally:
            self._done.set()
            self._arrived.set()

    def _ask_in_turn(self, asks: list[Ask]) -> None:
        for ask in asks:
            if self._cancelled.is_set():
                break
            with self._lock:  # budgets left count what every thread's earlier asks spent
                tokens, usd = self._tokens, self._usd
            try:
                context = replace(self._context_for(ask, tokens, usd), cancelled=self._cancelled)
                outcome = ask.proposer.propose(context)
            except Exception as exc:  # a proposer bug costs its proposals, never the run
                answered = Answered(ask, None, f"{type(exc).__name__}: {exc}")
            else:
                answered = Answered(ask, outcome)
            with self._lock:
                if answered.outcome is not None:
                    self._tokens += answered.outcome.tokens_used
                    self._usd += answered.outcome.usd_spent
                self._ready.append(answered)
                self._arrived.set()
