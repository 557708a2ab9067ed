"""Evaluations the search can abandon. A wall-time budget bounds the whole run, the evaluation
in flight included, and a stop request (SIGINT, SIGTERM) ends that evaluation at once, so a
stopped run still writes its report: the evaluator call runs in a thread while the main thread
watches the deadline and the stop flag; when either trips, the evaluator is closed (its workers
and their process groups are killed) and the call's verdict, if it comes, is dropped."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from kbot.problem import ProblemSpec
    from kbot.search.budget import StopRequest

T = TypeVar("T")

POLL_S = 0.05
# How long an abandoned call may take to return once its evaluator is closed (the worker gets a
# polite shutdown of up to 5 s, then is killed); past it the thread is left to die with the run.
STOP_GRACE_S = 10.0


class Abandoned(Exception):
    """The call was given up: `why` is "time" (the budget's deadline) or "stop" (a signal)."""

    def __init__(self, why: str) -> None:
        super().__init__(why)
        self.why = why


def call_bounded(
    call: Callable[[], T],
    deadline: float | None,
    stopped: Callable[[], bool],
    cancel: Callable[[], Any] | None,
    clock: Callable[[], float] = time.monotonic,
    grace_s: float = STOP_GRACE_S,
) -> T:
    """`call()`, unless `clock()` passes `deadline` or `stopped()` turns true first: then
    `cancel()`, wait up to `grace_s` for the call to return, and raise Abandoned. Exceptions of
    `call` propagate."""
    result: list[T] = []
    error: list[BaseException] = []
    done = threading.Event()

    def target() -> None:
        try:
            result.append(call())
        except BaseException as exc:  # handed to the caller's thread below
            error.append(exc)
        finally:
            done.set()

    thread = threading.Thread(target=target, name="kbot-evaluation", daemon=True)
    thread.start()
    while not done.wait(POLL_S):
        why = "stop" if stopped() else None
        if why is None and deadline is not None and clock() >= deadline:
            why = "time"
        if why is None or done.is_set():
            continue
        if cancel is not None:
            cancel()
        done.wait(grace_s)
        raise Abandoned(why)
    if error:
        raise error[0]
    return result[0]


def prepare_evaluator(evaluator: Any, problem: ProblemSpec, stop: StopRequest) -> str:
    """The evaluator's one-time costs for this problem (its workers, the reference, on a GPU
    the torch.compile baselines of every case), paid before the search's clock starts so that a
    time budget buys evaluations of candidates. A note for the report."""
    prepare = getattr(evaluator, "prepare", None)
    if prepare is None:
        return ""
    started = time.monotonic()
    try:
        failure = call_bounded(
            lambda: prepare(problem), None, lambda: stop.requested,
            getattr(evaluator, "abort", None) or getattr(evaluator, "close", None),
        )  # fmt: skip
    except Abandoned:
        return "evaluator preparation stopped"
    spent = time.monotonic() - started
    if failure:
        return f"evaluator preparation failed after {spent:.0f} s: {failure}"
    return f"evaluator started and baselines built in {spent:.0f} s, before the time budget's clock"
