"""The judge's side of the autotune turns (kbot.evaluate.autotune_turns runs in the
candidate's process): trials added, over the cases in turn, until every config of the
candidate's autotuners has run, and has met each of MET_KINDS."""

from __future__ import annotations

from collections.abc import Callable

from kbot.evaluate.correctness import CandidateCrashed
from kbot.evaluate.remote import CandidateFailed, CandidateProcess
from kbot.evaluate.verdict import Reason

# Calls the trials add for each kind until every autotune config has run on it.
MAX_EXTRA_TRIALS = 32

# The input kinds every autotune config must meet: the off-centre rows and the grid's ties and
# exact halves are where one config's arithmetic parts from another's (round fourteen's c05).
MET_KINDS = ("outliers", "grid")


def every_config(
    host: CandidateProcess, deadline, step: Callable, trial: Callable
) -> Reason | None:
    """One more trial at a time while an autotune config has not run in the trials, then
    while one has not met each of MET_KINDS: a config the trials never ran on such inputs is
    a config nobody checked there. `trial(extra, kind)`. The refusal, where configs stay
    unrun after MAX_EXTRA_TRIALS added calls."""
    for kind in ("", *MET_KINDS):
        on = f" on {kind} inputs" if kind else ""
        unrun = _unrun(host, deadline, kind)
        if unrun:
            step(f"correctness trials for {unrun} autotune configs not run{on} yet")
        extra = 0
        while unrun:
            if extra == MAX_EXTRA_TRIALS:
                return Reason(
                    "autotune-configs",
                    f"{unrun} autotune configs never ran{on} in the correctness trials, "
                    f"after {MAX_EXTRA_TRIALS} calls added for them; give fewer configs",
                )
            trial(extra, kind)
            extra += 1
            unrun = _unrun(host, deadline, kind)
    return None


def _unrun(host: CandidateProcess, deadline, kind: str = "") -> int:
    try:
        return int(host.request("turns", deadline.left(), kind=kind).get("unrun", 0))
    except CandidateFailed as failed:
        raise CandidateCrashed(failed.reason, failed.fatal) from None
