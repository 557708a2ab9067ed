"""Every autotune config of a candidate runs in the correctness trials, on a CPU and a GPU.

`@triton.autotune` picks the config its timer finds fastest for each key, and only that one
runs. A config that is wrong (a block too small for the row, a missing mask) then passes the
judge whenever another config is faster at the sizes judged, and ships to GPUs, sizes and
Triton versions where the wrong one wins (round seven's `control_autotune_second_config`, on a
GPU until this module). While the judge runs the correctness trials (`in_turn()`, one per
call), each autotuner runs one config for the whole call, a config it has not run yet first,
so the trials run each config on the judge's inputs: a wrong one is a mismatch like any other.
Within a call an autotuner keeps its config, as a user's cached choice does (a kernel launched
twice in one forward telling the turns apart was round eight's c16), and a call in turn is a
cache hit as a user's later calls are: `reset_to_zero`/`restore_value`, which Triton runs only
while it benchmarks, do not run (a kernel whose output only `reset_to_zero` zeroed was right
in the trials and wrong from a user's second call, round eight's c02). `unrun()` says how many
configs have not run yet: the judge calls again until none is left (kbot.evaluate.jobs). A
config that does not build on this GPU (out of shared memory or registers, a compile-time
assertion: the errors Triton's own autotuner skips) is skipped, as the autotuner would never
pick it.

The judge names each trial's input distribution (`in_turn(kind)`), and a config runs first
where it has not met that kind yet; `unrun(kind)` counts the configs that have not, and the
judge adds trials of the kinds its off-centre inputs come in until none is left (round
fourteen's c05: config 2 of 4, wrong on rows 256x off centre, never met an outliers trial
under the fixed turn order).

Outside the trials (the timing, the timed graph's recheck on fresh inputs) the autotuner tunes
as written, from an empty cache, and the config it picks is the one timed and rechecked. On a
CPU the interpreter has no timer ("0 active drivers"): there the turns are always on.
"""

from __future__ import annotations

import contextlib
import weakref
from dataclasses import dataclass, field

_STATE = {"on": False, "always": False, "installed": False, "call": 0, "kind": ""}
_ERRORS: list[tuple[type[BaseException], ...]] = [()]  # what a config that does not build raises


@dataclass
class _Turns:
    """One autotuner's turns: this call's config (call number, position), the positions that
    ran, the positions that do not build here."""

    choice: tuple[int, int] | None = None
    ran: set[int] = field(default_factory=set)
    broken: set[int] = field(default_factory=set)
    met: dict[str, set[int]] = field(default_factory=dict)  # input kind -> positions run on it


_TURNS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # autotuner -> _Turns


def _turns(autotuner) -> _Turns:
    return _TURNS.setdefault(autotuner, _Turns())


def install(always: bool = False) -> None:
    """Wraps the autotuner's run and timer once; `always` (a CPU) keeps the turns on."""
    _STATE["always"] = _STATE["always"] or always
    if _STATE["installed"]:
        return
    from triton.runtime import autotuner

    _ERRORS[0] = _build_errors()
    autotuner.Autotuner._bench = _ranked_by_turn(autotuner.Autotuner._bench)
    autotuner.Autotuner.run = _taking_turns(autotuner.Autotuner.run)
    _STATE["installed"] = True


@contextlib.contextmanager
def in_turn(kind: str = ""):
    """One call of the correctness trials, on inputs of `kind` (a distribution's name): each
    autotuner runs its config of this call."""
    before = _STATE["on"], _STATE["kind"]
    _STATE["on"], _STATE["kind"] = True, str(kind)
    try:
        yield
    finally:
        _STATE["on"], _STATE["kind"] = before
        _STATE["call"] += 1


def unrun(kind: str = "") -> int:
    """Configs of the live autotuners that have not run in turn yet, or not on inputs of
    `kind` (those that do not build here aside)."""
    return sum(
        len(
            set(range(len(tuner.configs)))
            - (turns.met.get(kind, set()) if kind else turns.ran)
            - turns.broken
        )
        for tuner, turns in list(_TURNS.items())
    )


def _turning() -> bool:
    return _STATE["on"] or _STATE["always"]


def _position(autotuner, config) -> int:
    return next((i for i, c in enumerate(autotuner.configs) if c is config), 0)


def _chosen(autotuner) -> int:
    """This call's config of `autotuner`: kept through the call; else the first one not run
    yet, else the first not run on this call's kind of inputs, else the one whose turn it is;
    never one that does not build here."""
    call, turns = _STATE["call"], _turns(autotuner)
    if turns.choice is not None and turns.choice[0] == call:
        return turns.choice[1]
    count = len(autotuner.configs)
    usable = [p for p in range(count) if p not in turns.broken] or list(range(count))
    met = turns.met.get(_STATE["kind"], set())
    fresh = [p for p in usable if p not in turns.ran]
    unmet = [p for p in usable if p not in met]
    position = (fresh or unmet or [usable[call % len(usable)]])[0]
    turns.choice = (call, position)
    return position


def _ranked_by_turn(bench):
    """The autotuner's timer: in turn, this call's config "takes" 0 and the others more, so it
    is chosen; otherwise Triton's timer."""

    def ranked(self, *args, config, **meta):
        if not _turning():
            return bench(self, *args, config=config, **meta)
        position = _position(self, config)
        return [0.0 if position == _chosen(self) else float(1 + position)] * 3

    ranked.kbot_turns = True
    return ranked


def _no_hook(*args, **kwargs) -> None:
    """The autotuner's own pre-hook in turn: a cache hit runs none."""


def _build_errors() -> tuple[type[BaseException], ...]:
    """What Triton's autotuner skips a config for: it does not build on this device."""
    errors: list[type[BaseException]] = []
    try:
        from triton.runtime.errors import OutOfResources

        errors.append(OutOfResources)
    except ImportError:
        pass
    for module, name in (
        ("triton.compiler.errors", "CompileTimeAssertionFailure"),
        ("triton.runtime.errors", "PTXASError"),
    ):
        with contextlib.suppress(ImportError, AttributeError):
            errors.append(getattr(__import__(module, fromlist=[name]), name))
    return tuple(errors)


def _taking_turns(run):
    """Autotuner.run: in turn, this call's config as a cache hit would run it (no benchmark
    and no `reset_to_zero`/`restore_value`), from an empty cache kept empty (so the timing
    tunes afresh) and without the disk cache."""

    def turning(self, *args, **kwargs):
        if not _turning() or len(getattr(self, "configs", ())) < 2:
            return run(self, *args, **kwargs)
        errors = _ERRORS[0]
        cache = self.cache if isinstance(getattr(self, "cache", None), dict) else {}
        disk = getattr(self, "cache_results", False)
        own_hook = self.__dict__.get("pre_hook")
        self.cache_results = False
        self.pre_hook = _no_hook
        try:
            for _ in range(len(self.configs)):
                cache.clear()
                position = _chosen(self)
                try:
                    result = run(self, *args, **kwargs)
                except errors:
                    turns = _turns(self)
                    turns.broken.add(position)
                    turns.choice = None
                    if len(turns.broken) >= len(self.configs):
                        raise
                    continue
                turns = _turns(self)
                turns.ran.add(position)
                turns.met.setdefault(_STATE["kind"], set()).add(position)
                return result
            raise RuntimeError("no autotune config builds on this device")
        finally:
            cache.clear()
            self.cache_results = disk
            if own_hook is None:
                self.__dict__.pop("pre_hook", None)
            else:
                self.pre_hook = own_hook

    turning.kbot_turns = True
    return turning
