"""Names in the files a PR adds: the kernel's launcher, the patched op and the reference's copy
may share one name (a plain function target: lightllm's `rotate_half`), and the copy, bound
last, once shadowed both imports, so the PR's parity test compared the original with itself.
Each gets its own name here."""

from __future__ import annotations

import dataclasses
import re

from kbot.publish.adapters import EntryPoint

_FROM_IMPORT = re.compile(r"from (\S+) import (\w+)")


def own_names(
    launcher: str, entry: EntryPoint | None, taken: set[str]
) -> tuple[str, EntryPoint | None]:
    """The name the kernel's launcher is imported as and the entry with its import renamed,
    neither of them one of `taken` (the reference's top-level names) nor each other's:
    `triton_X` and `patched_X` where X is taken."""
    kernel_name = launcher
    if kernel_name in taken or (entry is not None and imported_name(entry) == kernel_name):
        kernel_name = free_name(f"triton_{launcher}", taken)
    if entry is not None:
        entry = _entry_named(entry, taken | {kernel_name})
    return kernel_name, entry


def imported_name(entry: EntryPoint) -> str | None:
    """The name the entry's import binds ("from m import X" binds X)."""
    match = _FROM_IMPORT.fullmatch(entry.import_line)
    return match.group(2) if match else None


def _entry_named(entry: EntryPoint, taken: set[str]) -> EntryPoint:
    """The entry, its import bound to a name none of `taken` uses: `patched_X` where the
    reference's copy (or the kernel's import) binds X."""
    name = imported_name(entry)
    if name is None or name not in taken:
        return entry
    alias = free_name(f"patched_{name}", taken)

    def renamed(text: str | None) -> str | None:
        return None if text is None else re.sub(rf"^{name}\b", alias, text)

    return dataclasses.replace(
        entry,
        import_line=f"{entry.import_line} as {alias}",
        construct=renamed(entry.construct),
        call=renamed(entry.call),
    )


def free_name(name: str, taken: set[str]) -> str:
    """`name`, or `name_2`, `name_3`, ... where it is taken."""
    free, count = name, 1
    while free in taken:
        count += 1
        free = f"{name}_{count}"
    return free
