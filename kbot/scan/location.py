"""Where an op imports from: the folder to put on sys.path and the dotted module name, also
relative to the repository's root (what a problem file records, kbot/scan/render.py)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class ImportLocation:
    sys_path: Path  # folder to put on sys.path
    module: str  # dotted module name from there
    # The same, from the repository's root (POSIX paths; import_dir "" is the root itself):
    # what a problem file records, so that it imports the op on any machine's checkout.
    file: str = ""
    import_dir: str = ""


def import_location(root: Path, file: str) -> ImportLocation:
    """The module name of `file`: up through folders that are packages (have __init__.py)."""
    path = (root / file).resolve()
    parts = [path.stem] if path.stem != "__init__" else []
    folder = path.parent
    while (folder / "__init__.py").is_file() and folder != folder.parent:
        parts.insert(0, folder.name)
        folder = folder.parent
    resolved = root.resolve()
    try:
        relative = path.relative_to(resolved).as_posix()
        import_dir = folder.relative_to(resolved).as_posix()
    except ValueError:  # the package starts above the scanned folder: only this machine's path
        relative, import_dir = "", ""
    return ImportLocation(
        folder, ".".join(parts), relative, "" if import_dir == "." else import_dir
    )
