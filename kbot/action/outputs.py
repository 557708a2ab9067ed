"""Writing a step's outputs (`$GITHUB_OUTPUT`) and its job summary (`$GITHUB_STEP_SUMMARY`).

Every value is written in GitHub's multi-line form (`name<<DELIMITER`, the value, `DELIMITER`)
with a delimiter the value cannot contain, so a newline inside an error message or a PR title
can never end the value early and inject another output.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Mapping
from pathlib import Path

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")


def format_outputs(values: Mapping[str, str]) -> str:
    lines = []
    for name, value in values.items():
        if not _NAME.fullmatch(name):
            raise ValueError(f"output name {name!r} is not a valid GitHub output name")
        delimiter = f"KBOT_EOF_{secrets.token_hex(8)}"
        while delimiter in value:  # pragma: no cover - 64 random bits
            delimiter = f"KBOT_EOF_{secrets.token_hex(8)}"
        lines += [f"{name}<<{delimiter}", value, delimiter]
    return "\n".join(lines) + "\n" if lines else ""


def parse_outputs(text: str) -> dict[str, str]:
    """Reads a GITHUB_OUTPUT file as the runner does: `name=value` and `name<<DELIM` blocks."""
    values: dict[str, str] = {}
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        if "<<" in line and ("=" not in line or line.index("<<") < line.index("=")):
            name, delimiter = line.split("<<", 1)
            end = lines.index(delimiter, i + 1)
            values[name] = "\n".join(lines[i + 1 : end])
            i = end + 1
            continue
        if "=" in line:
            name, value = line.split("=", 1)
            values[name] = value
        i += 1
    return values


def write_outputs(path: str | Path | None, values: Mapping[str, str]) -> None:
    """Appends to GITHUB_OUTPUT (outside Actions, `path` is None and nothing is written)."""
    if path:
        with open(path, "a", encoding="utf-8") as handle:
            handle.write(format_outputs(values))


def append_summary(path: str | Path | None, markdown: str) -> None:
    if path:
        with open(path, "a", encoding="utf-8") as handle:
            handle.write(markdown.rstrip("\n") + "\n")
