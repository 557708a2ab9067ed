"""What a command returns, and how it is printed: text for people, a versioned JSON envelope for machines.

The envelope is what the GitHub Action consumes:

    {"kbot": "0.1.0", "schema": 1, "command": "eval", "exit_code": 0, "ok": true,
     "data": {...}, "error": null}
"""

from __future__ import annotations

import dataclasses
import enum
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kbot import __version__
from kbot.errors import ExitCode

ENVELOPE_SCHEMA = 1


@dataclass(frozen=True)
class CommandResult:
    """The outcome of one subcommand: an exit code, text for a terminal and data for `--json`."""

    exit_code: ExitCode
    text: str
    data: dict[str, Any] = field(default_factory=dict)
    # one line for stderr after the output, e.g. how to resume a run Ctrl-C stopped
    notice: str = ""


def to_jsonable(value: Any) -> Any:
    """Turns records (frozen dataclasses, enums, paths, tuples) into plain JSON values."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        if hasattr(value, "to_json"):
            return to_jsonable(value.to_json())
        return {f.name: to_jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, dict):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [to_jsonable(v) for v in value]
    if isinstance(value, float) and (value != value or value in (float("inf"), float("-inf"))):
        return None  # JSON has no NaN/inf; "not measured" is null
    return value


def envelope(
    command: str, exit_code: ExitCode, data: dict[str, Any] | None, error: str | None
) -> str:
    return json.dumps(
        {
            "kbot": __version__,
            "schema": ENVELOPE_SCHEMA,
            "command": command,
            "exit_code": int(exit_code),
            "ok": exit_code == ExitCode.OK,
            "data": to_jsonable(data or {}),
            "error": error,
        },
        indent=2,
        sort_keys=False,
    )
