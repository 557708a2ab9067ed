"""Finding `templates/` at run time (a source checkout, an editable install or a wheel), and the
one strict Jinja setup every rendered text uses: a missing value is an error, never a blank."""

from __future__ import annotations

import sys
from functools import lru_cache
from pathlib import Path
from typing import Any

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


def strict_environment() -> Any:
    """A Jinja environment over templates/ with StrictUndefined; callers add their filters."""
    import jinja2

    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(templates_dir())),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
        autoescape=False,  # Python and Markdown, not HTML
    )
