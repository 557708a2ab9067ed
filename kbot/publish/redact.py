"""Keeping secrets out of everything kbot prints or writes: logs, errors, PR bodies, files."""

from __future__ import annotations

import base64
from collections.abc import Iterable

MASK = "***"


def redact(text: str, secrets: Iterable[str | None]) -> str:
    """`text` with every secret (and the basic-auth form git would send) replaced by ***."""
    for secret in secrets:
        if not secret or len(secret) < 4:
            continue
        for form in (secret, base64.b64encode(f"x-access-token:{secret}".encode()).decode()):
            text = text.replace(form, MASK)
    return text
