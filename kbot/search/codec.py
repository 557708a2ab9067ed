"""Verdicts to and from the JSON kept in the store (`Verdict.to_json` is the wire format and
`Verdict.from_json` its one reader)."""

from __future__ import annotations

import json
from typing import Any

from kbot.evaluate.verdict import Verdict


def verdict_to_text(verdict: Verdict) -> str:
    # allow_nan keeps inf/nan error figures exact across a round trip
    return json.dumps(verdict.to_json(), allow_nan=True, sort_keys=True)


def verdict_from_text(text: str) -> Verdict:
    return verdict_from_json(json.loads(text))


def verdict_from_json(data: dict[str, Any]) -> Verdict:
    return Verdict.from_json(data)
