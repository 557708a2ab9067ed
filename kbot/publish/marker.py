"""The hidden marker in a kbot PR body, `<!-- kbot:{json} -->`: how kbot finds its own PRs
again and knows what each one carries, whatever the branch or title became."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from kbot import __version__

_MARKER = re.compile(r"<!--\s*kbot:(\{.*?\})\s*-->", re.DOTALL)


@dataclass(frozen=True)
class Marker:
    op: str
    kernel_sha256: str
    base_sha: str
    kbot_version: str = __version__

    def to_json(self) -> dict[str, Any]:
        return {
            "op": self.op,
            "kernel_sha256": self.kernel_sha256,
            "base_sha": self.base_sha,
            "kbot_version": self.kbot_version,
        }

    def comment(self) -> str:
        return f"<!-- kbot:{json.dumps(self.to_json(), sort_keys=True, separators=(',', ':'))} -->"


def find_marker(body: str | None) -> Marker | None:
    """The marker of a PR body, or None for a PR kbot did not open (or a mangled marker)."""
    match = _MARKER.search(body or "")
    if match is None:
        return None
    try:
        raw = json.loads(match.group(1))
        return Marker(
            op=str(raw["op"]),
            kernel_sha256=str(raw["kernel_sha256"]),
            base_sha=str(raw["base_sha"]),
            kbot_version=str(raw.get("kbot_version", "")),
        )
    except (ValueError, KeyError, TypeError):
        return None
