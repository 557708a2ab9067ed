"""Finding and parsing the Python files under a root, without importing any of them.

A file that is not UTF-8 or does not parse is reported as a FileSkip and the walk goes on:
real trees carry Python 2 leftovers, templates and vendored oddities.
"""

from __future__ import annotations

import ast
import fnmatch
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from kbot.scan.findings import FileSkip

# Folders that never hold the project's own ops.
_PRUNED_DIRS = {"__pycache__", "node_modules", "site-packages", "build", "dist"}


@dataclass(frozen=True)
class ParsedFile:
    rel: str  # posix path relative to the scanned root
    path: Path
    source: str
    tree: ast.Module


def is_excluded(rel: str, patterns: tuple[str, ...]) -> bool:
    """`tests/**` excludes the folder and everything under it; `*_test.py` any such file."""
    for pattern in patterns:
        if fnmatch.fnmatchcase(rel, pattern):
            return True
        if pattern.endswith("/**") and (rel == pattern[:-3] or rel.startswith(pattern[:-2])):
            return True
    return False


def python_files(root: Path, exclude: tuple[str, ...] = ()) -> Iterator[tuple[str, Path]]:
    """Yields (relative posix path, path) for every .py file under root, sorted, pruned early."""
    if root.is_file():
        yield root.name, root
        return
    for dirpath, dirnames, filenames in os.walk(root):
        rel_dir = os.path.relpath(dirpath, root).replace(os.sep, "/")
        rel_dir = "" if rel_dir == "." else rel_dir + "/"
        dirnames[:] = sorted(
            d
            for d in dirnames
            if not d.startswith(".")
            and d not in _PRUNED_DIRS
            and not is_excluded(rel_dir + d, exclude)
        )
        for name in sorted(filenames):
            if name.endswith(".py"):
                rel = rel_dir + name
                if not is_excluded(rel, exclude):
                    yield rel, Path(dirpath) / name


# Text that any target needs somewhere in its file: a marker, a compile decorator, an op
# method. Parsing is ~95% of a scan; SGLang's 53 MB tree has ~15% of its files with these.
_TRIGGERS = re.compile(
    r"kbot|forward_native|forward_cuda|forward_triton|torch\.compile|_dynamo|(?<![.\w])compile\b|jit\.script"
    r"|Norm\b|Rotary|RoPE|AndMul|SwiGLU|GeGLU|QuickGELU|Softcap|apply_rotary|apply_rope"
    r"|rotate_half|rms_norm|rmsnorm|layer_norm|and_mul|softcap"
)


def read_source(rel: str, path: Path) -> str | FileSkip:
    try:
        data = path.read_bytes()
    except OSError as exc:
        return FileSkip(rel, f"cannot read: {exc.strerror}")
    try:
        # utf-8-sig: a byte-order mark is legal at the start of a Python file.
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        return FileSkip(rel, f"not UTF-8 text (byte {exc.start}); save it as UTF-8 to scan it")


def could_hold_target(rel: str, source: str, extra_names: tuple[str, ...] = ()) -> bool:
    """False only when no pattern can match the file, so it need not be parsed."""
    if "/backends/" in "/" + rel or _TRIGGERS.search(source):
        return True
    return any(name in source for name in extra_names)


def parse_file(rel: str, path: Path) -> ParsedFile | FileSkip:
    source = read_source(rel, path)
    if isinstance(source, FileSkip):
        return source
    return parse_source(rel, path, source)


def parse_source(rel: str, path: Path, source: str) -> ParsedFile | FileSkip:
    try:
        tree = ast.parse(source, filename=rel)
    except SyntaxError as exc:
        return FileSkip(rel, f"syntax error at line {exc.lineno}: {exc.msg}")
    except ValueError as exc:  # e.g. null bytes in the source
        return FileSkip(rel, f"cannot parse: {exc}")
    return ParsedFile(rel, path, source, tree)
