"""Finding `templates/` at run time, in a source checkout, an editable install or a wheel."""

from __future__ import annotations

import sys
from functools import lru_cache
from pathlib import Path

from kbot.errors import KbotError


@lru_cache(maxsize=1)
def templates_dir() -> Path:
    candidates = [
        Path(__file__).resolve().parent.parent / "templates",  # source checkout / editable
        Path(sys.prefix) / "share" / "kbot" / "templates",  # wheel's data files
    ]
    for candidate in candidates:
        if candidate.is_dir():
            return candidate
    raise KbotError(
        "kbot's templates/ folder was not found next to the package or under "
        f"{candidates[1]}; reinstall kbot"
    )
