"""Every autotune config of a candidate runs in the correctness trials, on a CPU and a GPU.

`@triton.autotune` picks the config its timer finds fastest for each key, and only that one
runs. A config that is wrong (a block too small for the row, a missing mask) then passes the
judge whenever another config is faster at the sizes judged, and ships to GPUs, sizes and
Triton versions where the wrong one wins (round seven's `control_autotune_second_config`, on a
GPU until this module). While the judge runs the correctness trials (`in_turn()`), an
autotuner forgets its choice at every call and takes its configs one after another, one per
call and per kernel, so the trials run each config on the judge's inputs: a wrong one is a
mismatch like any other. A config that does not build on this GPU (out of shared memory or
registers, a compile-time assertion: the errors Triton's own autotuner skips) is skipped for
the next one, as the autotuner would never pick it.

Outside the trials (the timing, the timed graph's recheck on fresh inputs) the autotuner tunes
as written, from an empty cache, and the config it picks is the one timed and rechecked. On a
CPU the interpreter has no timer ("0 active drivers"): there the turns are always on.
"""

from __future__ import annotations

import contextlib
import weakref

_STATE = {"on": False, "always": False, "installed": False}
_ERRORS: list[tuple[type[BaseException], ...]] = [()]  # what a config that does not build raises
# each autotuner's next turn, and the positions of its configs that do not build here
_TURNS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_BROKEN: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


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
def in_turn():
    """The correctness trials' calls: each autotuner takes its next config."""
    before = _STATE["on"]
    _STATE["on"] = True
    try:
        yield
    finally:
        _STATE["on"] = before


def _turning() -> bool:
    return _STATE["on"] or _STATE["always"]


def _position(autotuner, config) -> int:
    return next((i for i, c in enumerate(autotuner.configs) if c is config), 0)


def _ranked_by_turn(bench):
    """The autotuner's timer: in turn, the config whose turn it is "takes" 0, the next ones
    more, a config that does not build here never wins; otherwise Triton's timer."""

    def ranked(self, *args, config, **meta):
        if not _turning():
            return bench(self, *args, config=config, **meta)
        count = max(len(self.configs), 1)
        position = _position(self, config)
        if position in _BROKEN.get(self, ()):
            return [float("inf")] * 3
        return [float((position - _TURNS.get(self, 0)) % count)] * 3

    ranked.kbot_turns = True
    return ranked


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
    """Autotuner.run: in turn, from an empty cache (kept empty after the call, so the timing
    tunes afresh) and without the disk cache, then the turn moves on."""

    def turning(self, *args, **kwargs):
        if not _turning() or len(getattr(self, "configs", ())) < 2:
            return run(self, *args, **kwargs)
        errors = _ERRORS[0]
        cache = self.cache if isinstance(getattr(self, "cache", None), dict) else {}
        disk = getattr(self, "cache_results", False)
        self.cache_results = False
        try:
            for _ in range(len(self.configs)):
                cache.clear()
                try:
                    return run(self, *args, **kwargs)
                except errors:
                    broken = _BROKEN.setdefault(self, set())
                    broken.add(_position(self, getattr(self, "best_config", None)))
                    if len(broken) >= len(self.configs):
                        raise
            raise RuntimeError("no autotune config builds on this device")
        finally:
            cache.clear()
            self.cache_results = disk
            _TURNS[self] = _TURNS.get(self, 0) + 1

    turning.kbot_turns = True
    return turning
