"""Constructor values for a decoy ModelNew, built in the candidate's process before the ones the
judge checks (kbot.evaluate.host_session): each float the constructor takes, given or defaulted
(a rotary base, an eps, a scale), doubled. A model builds its layers from several values (Gemma
3's local and global rotary bases), so whatever a constructor keeps in its module must be keyed
by all of them: a table cached by (head_dim, max_positions) without the base gave every layer
the first base's table, and with every instance built alike the judge never saw it (red-team
round fourteen's c06)."""

from __future__ import annotations

import inspect
import math
from typing import Any

_POSITIONAL = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)


def decoy_arguments(cls: type, init: list) -> tuple[list, dict[str, Any]] | None:
    """(args, kwargs) like `init` with every float doubled, the floats among the defaults of
    the parameters `init` leaves out passed doubled by name; None where no float is taken."""
    args = [_other(value) for value in init]
    changed = any(_is_float(value) for value in init)
    kwargs: dict[str, Any] = {}
    try:
        parameters = list(inspect.signature(cls.__init__).parameters.values())[1:]  # self
    except (TypeError, ValueError):
        parameters = []
    left = [p for p in parameters if p.kind in _POSITIONAL][len(init) :]
    if any(p.kind == inspect.Parameter.VAR_POSITIONAL for p in parameters):
        left = []  # `init` may fill them through *args
    left += [p for p in parameters if p.kind == inspect.Parameter.KEYWORD_ONLY]
    for parameter in left:
        if _is_float(parameter.default):
            kwargs[parameter.name] = _other(parameter.default)
    if not changed and not kwargs:
        return None
    return args, kwargs


def _is_float(value: object) -> bool:
    return type(value) is float and math.isfinite(value) and value != 0.0


def _other(value: object) -> object:
    return value * 2.0 if _is_float(value) else value
