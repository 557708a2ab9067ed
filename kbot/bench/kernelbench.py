"""Finding problems in a user's KernelBench checkout (ScalingIntelligence/KernelBench).

The layout is `KernelBench/level<L>/<N>_<Name>.py`; `--root` may name the checkout or its
`KernelBench/` folder. Files are read where they are: kbot never copies them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from kbot.errors import UsageError

_FILE = re.compile(r"^(\d+)_(.+)\.py$")


@dataclass(frozen=True)
class ProblemRef:
    level: int
    number: int
    name: str  # the file's stem, e.g. "40_LayerNorm"
    path: Path

    @property
    def key(self) -> str:
        """`L1/40`: how reports and the results log name a problem."""
        return f"L{self.level}/{self.number}"


def parse_levels(text: str) -> tuple[int, ...]:
    try:
        levels = tuple(sorted({int(part) for part in text.split(",") if part.strip()}))
    except ValueError:
        raise UsageError(f"--level {text!r}: write levels like 1 or 1,2") from None
    if not levels or any(level < 1 for level in levels):
        raise UsageError(f"--level {text!r}: write levels like 1 or 1,2")
    return levels


def parse_ids(text: str | None) -> frozenset[int] | None:
    """`1-100`, `3,7,40-47` -> problem numbers; None (every problem) for None or `all`."""
    if text is None or text.strip() == "all":
        return None
    numbers: set[int] = set()
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        match = re.fullmatch(r"(\d+)(?:-(\d+))?", part)
        if not match:
            raise UsageError(f"--problems {text!r}: write numbers and ranges like 1-20,40,47")
        low = int(match.group(1))
        high = int(match.group(2) or low)
        if high < low:
            raise UsageError(f"--problems: range {part} runs backwards")
        numbers.update(range(low, high + 1))
    return frozenset(numbers)


def suite_dir(root: Path) -> Path:
    """The folder holding `level1/`, `level2/` ...: `root/KernelBench` or `root` itself."""
    for candidate in (root / "KernelBench", root):
        if any(candidate.glob("level[0-9]*")):
            return candidate
    raise UsageError(
        f"--root {root}: no KernelBench/level1/ ... folders there; pass the path of a "
        "checkout of https://github.com/ScalingIntelligence/KernelBench"
    )


def find_problems(
    root: Path, levels: tuple[int, ...], numbers: frozenset[int] | None
) -> list[ProblemRef]:
    """The chosen problems, by level then number."""
    root = Path(root)
    if not root.is_dir():
        raise UsageError(f"--root {root} is not a folder")
    base = suite_dir(root)
    found: list[ProblemRef] = []
    for level in levels:
        folder = base / f"level{level}"
        if not folder.is_dir():
            raise UsageError(f"--level {level}: {folder} does not exist")
        for path in sorted(folder.glob("*.py")):
            match = _FILE.match(path.name)
            if not match:
                continue
            number = int(match.group(1))
            if numbers is None or number in numbers:
                found.append(ProblemRef(level, number, path.stem, path.resolve()))
    found.sort(key=lambda p: (p.level, p.number))
    if not found:
        raise UsageError(f"no problem of level(s) {levels} matches --problems under {base}")
    return found
