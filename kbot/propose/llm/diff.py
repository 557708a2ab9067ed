"""SEARCH/REPLACE edits, applied exactly or not at all.

A reply in diff mode carries one or more blocks

    <<<<<<< SEARCH
    lines copied verbatim from the parent
    =======
    the lines that replace them
    >>>>>>> REPLACE

Each SEARCH text must occur exactly once in the parent as it stands after the blocks before it
(whitespace included); otherwise the whole edit is rejected with the block that failed, so a
model's misremembered line never silently lands somewhere else.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_BLOCK = re.compile(
    r"^<{5,9} ?SEARCH[^\n]*\n(?P<search>.*?)^={5,9}[ \t]*\n(?P<replace>.*?)^>{5,9} ?REPLACE[^\n]*$",
    re.S | re.M,
)


@dataclass(frozen=True)
class Edit:
    search: str
    replace: str


@dataclass(frozen=True)
class Applied:
    """The edited source, or why the edit was refused (`source` None)."""

    source: str | None
    message: str = ""


def find_edits(text: str) -> tuple[Edit, ...]:
    return tuple(Edit(m.group("search"), m.group("replace")) for m in _BLOCK.finditer(text))


def has_markers(text: str) -> bool:
    return bool(re.search(r"^<{5,9} ?SEARCH", text, re.M))


def apply_edits(parent: str, edits: tuple[Edit, ...]) -> Applied:
    if not edits:
        return Applied(None, "no complete SEARCH/REPLACE block")
    source = parent
    for number, edit in enumerate(edits, 1):
        if not edit.search.strip():
            return Applied(None, f"block {number}: empty SEARCH text")
        count = source.count(edit.search)
        if count != 1:
            first = edit.search.strip().splitlines()[0][:80]
            where = "not found" if count == 0 else f"found {count} times"
            return Applied(None, f"block {number}: SEARCH text {where} in the parent: {first!r}")
        source = source.replace(edit.search, edit.replace, 1)
    if source == parent:
        return Applied(None, "the edits leave the parent unchanged")
    return Applied(source)
