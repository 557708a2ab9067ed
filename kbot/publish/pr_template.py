"""The target repository's pull-request template, followed: when the repository has one
(`.github/pull_request_template.md` and the other places GitHub reads), the PR body keeps its
headings, order, comments and checklists, and kbot's sections are placed under the heading
that asks for them (motivation, modifications, benchmark, tests). A kbot section that no
heading asks for goes under a closing "Details" heading: nothing kbot would say is dropped."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

# Where GitHub looks for a single default template, in its order.
TEMPLATE_PATHS = (
    ".github/pull_request_template.md",
    ".github/PULL_REQUEST_TEMPLATE.md",
    "pull_request_template.md",
    "PULL_REQUEST_TEMPLATE.md",
    "docs/pull_request_template.md",
    "docs/PULL_REQUEST_TEMPLATE.md",
)
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")

# Template heading words -> the kbot sections that answer them, the specific asks first ("How
# has this been tested?" asks for tests, not for how it was changed). The lead (the title and
# "Why this op") answers a motivation or description heading.
_WANTS: tuple[tuple[tuple[str, ...], tuple[str, ...]], ...] = (
    (("test", "accuracy", "correct", "verif", "validat", "evaluation"),
     ("correctness evidence",)),
    (("benchmark", "performance", "speed", "result", "perf"),
     ("performance", "environment", "how to reproduce")),
    (("motivation", "description", "summary", "purpose", "why", "overview", "what", "about"),
     ("lead",)),
    (("modification", "change", "implementation", "how", "design", "approach", "detail"),
     ("which kernel serves which size", "files")),
)  # fmt: skip


@dataclass
class _Section:
    heading: str  # the heading line as written ("" for the text before the first one)
    title: str  # its words, lower case
    body: list[str]


def find_template(repo_root: Path) -> tuple[str, str] | None:
    """(relative path, text) of the repository's default PR template, or None."""
    for rel in TEMPLATE_PATHS:
        path = repo_root / rel
        if path.is_file():
            text = path.read_text(encoding="utf-8", errors="replace")
            if text.strip():
                return rel, text
    return None


def follow_template(template: str, body: str) -> str:
    """`body` (kbot's PR body) rearranged under `template`'s headings."""
    ours = _kbot_sections(body)
    placed: set[str] = set()
    out: list[str] = []
    for section in _split(template):
        out.extend([section.heading] if section.heading else [])
        answer = [] if _is_checklist(section) else _answers(section.title, ours, placed)
        if answer:
            out.extend(_comments(section.body))  # the template's guidance stays, unseen
            out.extend(["", *answer, ""])
        else:
            out.extend(section.body)
    rest = [name for name in ours if name not in placed]
    if rest:
        out.extend(["", "## Details", ""])
        for name in rest:
            out.extend(ours[name])
            out.append("")
    return "\n".join(out).strip() + "\n"


def _answers(title: str, ours: dict[str, list[str]], placed: set[str]) -> list[str]:
    if not title:
        return []
    for words, names in _WANTS:
        if any(word in title for word in words):
            lines: list[str] = []
            for name in names:
                if name in ours and name not in placed:
                    placed.add(name)
                    lines.extend([*ours[name], ""])
            return _trim(lines)
    return []


def _kbot_sections(body: str) -> dict[str, list[str]]:
    """kbot's body by section: "lead" (its title line and what precedes the first ###, the
    title demoted to bold so that it does not outrank the template's headings), then each
    `### Name` with its heading kept at level 3."""
    sections: dict[str, list[str]] = {"lead": []}
    current = "lead"
    for line in body.splitlines():
        match = _HEADING.match(line)
        if match and len(match.group(1)) == 3:
            current = match.group(2).strip().lower()
            sections[current] = [line]
        elif match and current == "lead":
            sections["lead"].append(f"**{match.group(2).strip()}**")
        else:
            sections[current].append(line)
    return {name: _trim(lines) for name, lines in sections.items() if _trim(lines)}


def _split(template: str) -> list[_Section]:
    sections = [_Section("", "", [])]
    in_comment = False
    for line in template.splitlines():
        match = None if in_comment else _HEADING.match(line)
        if match:
            sections.append(_Section(line, match.group(2).lower(), []))
        else:
            sections[-1].body.append(line)
        in_comment = (in_comment or "<!--" in line) and "-->" not in line
    return sections


def _is_checklist(section: _Section) -> bool:
    return "checklist" in section.title or any(
        re.match(r"^\s*[-*] \[[ xX]\]", line) for line in section.body
    )


def _comments(lines: list[str]) -> list[str]:
    """The lines of `lines` inside HTML comments (GitHub does not render them)."""
    kept: list[str] = []
    inside = False
    for line in lines:
        opens = "<!--" in line
        if inside or opens:
            kept.append(line)
            tail = line.rsplit("<!--", 1)[-1] if opens else line
            inside = "-->" not in tail
    return kept


def _trim(lines: list[str]) -> list[str]:
    start, end = 0, len(lines)
    while start < end and not lines[start].strip():
        start += 1
    while end > start and not lines[end - 1].strip():
        end -= 1
    return lines[start:end]
