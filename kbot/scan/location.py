"""Where an op imports from: the folder to put on sys.path and the dotted module name, also
relative to the repository's root (what a problem file records, kbot/scan/render.py; the
publisher imports the kernel it writes beside the op from the same folder).

The folder is the one the repository's own files import the op's module from, when any do
(`from nanovllm.layers.layernorm import RMSNorm`: the root; `import model` in a folder of
scripts: that folder). Otherwise it is the folder above the outermost package holding the
file, where a folder without `__init__.py` inside a package belongs to that package (a PEP 420
portion: nano-vllm's `nanovllm/layers/`); a file in no package is imported from its folder."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

# `from a.b import c, d` / `import a.b`: the dotted module, and the names after `import`
_IMPORT = re.compile(
    r"^[ \t]*(?:from[ \t]+([\w.]+)[ \t]+import[ \t]+\(?([\w, \t]*)|import[ \t]+([\w.]+))", re.M
)
# vendored or generated trees, and hidden ones (.git, .venv, kbot's own .kbot work folder)
_SKIPPED_DIRS = frozenset(
    {"node_modules", "build", "dist", "third_party", "3rdparty", "venv", "site-packages"}
)
Imports = Mapping[str, list[str]]  # dotted name -> the files (relative, POSIX) importing it


@dataclass(frozen=True)
class ImportLocation:
    sys_path: Path  # folder to put on sys.path
    module: str  # dotted module name from there
    # The same, from the repository's root (POSIX paths; import_dir "" is the root itself):
    # what a problem file records, so that it imports the op on any machine's checkout.
    file: str = ""
    import_dir: str = ""


def imported_names(root: Path) -> dict[str, list[str]]:
    """Every dotted name the .py files under `root` import absolutely (`a.b` and, for `from a
    import b`, `a.b` too), with the files that import it."""
    names: dict[str, list[str]] = {}
    for path in root.rglob("*.py"):
        relative = path.relative_to(root).as_posix()
        folders = relative.split("/")[:-1]
        if _SKIPPED_DIRS.intersection(folders) or any(f.startswith(".") for f in folders):
            continue
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        for found in _IMPORT.finditer(text):
            dotted = found.group(1) or found.group(3)
            members = (n.strip().split(" ")[0] for n in (found.group(2) or "").split(","))
            for name in (dotted, *(f"{dotted}.{m}" for m in members if m.isidentifier())):
                names.setdefault(name, []).append(relative)
    return names


def import_location(root: Path, file: str, imports: Imports | None = None) -> ImportLocation:
    """The module name of `file` (relative to `root`) and the folder it is imported from.
    `imports` is `imported_names(root)`, computed once by a caller locating many files."""
    path = (root / file).resolve()
    resolved = root.resolve()
    folder = _imported_from(resolved, path, imported_names(root) if imports is None else imports)
    if folder is None:
        folder = _package_root(resolved, path.parent)
    inside = path.relative_to(folder).with_suffix("").parts
    parts = list(inside[:-1] if inside[-1] == "__init__" else inside)
    try:
        relative = path.relative_to(resolved).as_posix()
        import_dir = folder.relative_to(resolved).as_posix()
    except ValueError:  # the package starts above the scanned folder: only this machine's path
        relative, import_dir = "", ""
    return ImportLocation(
        folder, ".".join(parts), relative, "" if import_dir == "." else import_dir
    )


def _imported_from(root: Path, path: Path, imports: Imports) -> Path | None:
    """The folder the repository's files import `path` from, None when none imports it. An
    import counts only from a file inside the folder it implies (a `utils` imported elsewhere
    is another `utils`); the most common reading wins."""
    try:
        module = path.relative_to(root).with_suffix("").parts
    except ValueError:
        return None
    if module[-1] == "__init__":
        module = module[:-1]
    counts: dict[int, int] = {}  # how many leading parts of `module` the folder keeps -> votes
    for start in range(len(module)):
        folder = "/".join(module[:start])
        importers = imports.get(".".join(module[start:]), ())
        votes = sum(1 for f in importers if not folder or f.startswith(f"{folder}/"))
        if votes:
            counts[start] = votes
    if not counts:
        return None
    start = max(counts, key=lambda s: (counts[s], -s))
    return root.joinpath(*module[:start])


def _package_root(root: Path, folder: Path) -> Path:
    """The folder above the outermost package holding `folder`: up through packages and,
    inside the scanned root, through folders without `__init__.py` that a package above holds."""
    top = None  # the outermost package folder seen
    current = folder
    while current != current.parent and current.name.isidentifier():
        if (current / "__init__.py").is_file():
            top = current
        elif not current.is_relative_to(root):
            break  # above the scanned root only packages carry on
        current = current.parent
    return folder if top is None else top.parent
