"""Rendering the publisher's Jinja templates (`templates/`), strictly: a missing value is an
error, never an empty string in a file a maintainer will read."""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any

import jinja2

from kbot.evaluate.verdict import NOT_MEASURED, measured
from kbot.templates_dir import strict_environment


@lru_cache(maxsize=1)
def environment() -> jinja2.Environment:
    env = strict_environment()
    env.filters["us"] = _microseconds
    env.filters["times"] = lambda v: f"{v:.2f}x" if measured(v) else NOT_MEASURED
    env.filters["percent"] = percent
    env.filters["compact_json"] = lambda v: json.dumps(v, sort_keys=True, separators=(",", ":"))
    env.filters["case_label"] = case_label
    env.filters["cell"] = table_cell
    env.filters["host_triple"] = host_triple
    return env


def render(template: str, **context: Any) -> str:
    try:
        return environment().get_template(template).render(**context)
    except jinja2.UndefinedError as exc:
        # A template bug or a caller that forgot a value: both are kbot's fault, not the user's.
        raise RuntimeError(f"template {template}: {exc.message}") from None


def table_cell(text: object) -> str:
    """One Markdown table cell: on one line, its pipes escaped."""
    return " ".join(str(text).split()).replace("|", "\\|")


def case_label(case: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in case.items()) or "default"


def percent(value: float | None) -> str:
    """A fraction as a percentage; a figure that was not measured (None, NaN) says so, never
    "0.0%" or "nan%"."""
    if not measured(value):
        return NOT_MEASURED
    return f"{100 * value:.1f}%" if 100 * value < 10 else f"{100 * value:.0f}%"


def host_triple(values: list[float | None] | None) -> str:
    """Host µs of eager / torch.compile / kbot as `24.0 / 41.0 / 23.4`; a path not measured
    is `–`, a verdict from before kbot measured any says so."""
    if not values or not any(measured(v) for v in values):
        return NOT_MEASURED
    return " / ".join(_microseconds(v) if measured(v) else "–" for v in values)


def _microseconds(value: float) -> str:
    return f"{value:.1f}" if value >= 10 else f"{value:.2f}"
