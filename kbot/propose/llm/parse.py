"""Reading a candidate out of a model's reply: fences, prose, several blocks, partial answers,
refusals and empty replies each end as a typed `Parsed`, never an exception.

Which code is taken: the fenced blocks (```python, ``` or ~~~; an unclosed last fence runs to
the end) that define `class ModelNew`, the last of them when there are several (models revise
as they go); without fences, the longest stretch of lines that parses and defines `ModelNew`.
"""

from __future__ import annotations

import ast
import enum
import re
from dataclasses import dataclass

from kbot.propose.llm.diff import apply_edits, find_edits, has_markers


class ParseStatus(str, enum.Enum):
    OK = "ok"
    EMPTY = "empty"  # nothing but whitespace
    REFUSAL = "refusal"  # no code, and the prose declines
    NO_CODE = "no_code"  # prose without any code
    NO_MODEL_NEW = "no_model_new"  # code, but no `class ModelNew`
    TRUNCATED = "truncated"  # cut off (finish_reason "length" or an unclosed fence) and unparsable
    SYNTAX = "syntax"  # code defining ModelNew that does not parse
    DIFF_REJECTED = "diff_rejected"  # SEARCH/REPLACE blocks that do not apply exactly
    UNCHANGED = "unchanged"  # the parent itself came back


@dataclass(frozen=True)
class Parsed:
    status: ParseStatus
    source: str | None = None
    message: str = ""
    blocks: int = 0  # code blocks found in the reply

    @property
    def ok(self) -> bool:
        return self.status is ParseStatus.OK


_FENCE = re.compile(
    r"^[ \t]*(```|~~~)[ \t]*([\w+-]*)[^\n]*\n(.*?)(?:^[ \t]*\1[ \t]*$|\Z)", re.S | re.M
)
_REFUSAL = re.compile(
    r"\b(I can(no|')t|I am (not able|unable)|I'm (not able|unable|sorry)|I won't|cannot help|"
    r"can't help|unable to (help|assist|comply)|as an AI)\b",
    re.I,
)
_MODEL_NEW = re.compile(r"^class\s+ModelNew\b", re.M)


def parse_reply(text: str, finish_reason: str | None = None, parent: str | None = None) -> Parsed:
    """The candidate in `text`; with `parent`, SEARCH/REPLACE blocks are applied to it first."""
    if not text or not text.strip():
        return Parsed(ParseStatus.EMPTY, message="the model returned an empty reply")
    if parent is not None and has_markers(text):
        applied = apply_edits(parent, find_edits(text))
        if applied.source is None:
            return Parsed(ParseStatus.DIFF_REJECTED, message=applied.message)
        return _checked(applied.source, finish_reason, parent, blocks=1)
    blocks = _fenced_blocks(text)
    if blocks:
        with_model = [b for b in blocks if _MODEL_NEW.search(b)]
        if not with_model:
            return Parsed(
                ParseStatus.NO_MODEL_NEW,
                message=f"{len(blocks)} code block(s), none defines `class ModelNew`",
                blocks=len(blocks),
            )
        parsing = [b for b in with_model if _parses(b)]
        source = (parsing or with_model)[-1]
        return _checked(source, finish_reason, parent, blocks=len(blocks))
    if _MODEL_NEW.search(text):
        stretch = _code_stretch(text)
        return _checked(stretch or text.strip() + "\n", finish_reason, parent, blocks=0)
    if _REFUSAL.search(text):
        return Parsed(ParseStatus.REFUSAL, message="the model declined: " + _head(text))
    return Parsed(ParseStatus.NO_CODE, message="no code in the reply: " + _head(text))


def _checked(source: str, finish_reason: str | None, parent: str | None, blocks: int) -> Parsed:
    source = source.rstrip() + "\n"
    try:
        tree = ast.parse(source)
    except SyntaxError as exc:
        status = ParseStatus.TRUNCATED if finish_reason == "length" else ParseStatus.SYNTAX
        why = "cut off at the token limit" if status is ParseStatus.TRUNCATED else "does not parse"
        return Parsed(
            status, message=f"the code {why}: line {exc.lineno}: {exc.msg}", blocks=blocks
        )
    if not any(isinstance(n, ast.ClassDef) and n.name == "ModelNew" for n in tree.body):
        return Parsed(
            ParseStatus.NO_MODEL_NEW, message="no top-level `class ModelNew`", blocks=blocks
        )
    if parent is not None and source.strip() == parent.strip():
        return Parsed(ParseStatus.UNCHANGED, message="the reply repeats the parent", blocks=blocks)
    return Parsed(ParseStatus.OK, source=source, blocks=blocks)


def _fenced_blocks(text: str) -> list[str]:
    blocks = []
    for match in _FENCE.finditer(text):
        language = match.group(2).lower()
        if language and language not in ("python", "py", "python3"):
            continue
        blocks.append(match.group(3))
    return blocks


def _parses(source: str) -> bool:
    try:
        ast.parse(source)
    except SyntaxError:
        return False
    return True


def _code_stretch(text: str) -> str | None:
    """The longest run of lines around `class ModelNew` that parses: prose trimmed both ends."""
    lines = text.splitlines()
    anchor = next(i for i, line in enumerate(lines) if _MODEL_NEW.match(line))
    starts = [i for i in range(anchor + 1) if _starts_code(lines[i])] or [anchor]
    for start in starts:  # earliest start first: keep the imports and kernels
        for end in range(len(lines), anchor, -1):
            chunk = "\n".join(lines[start:end])
            if _parses(chunk):
                return chunk + "\n"
    return None


def _starts_code(line: str) -> bool:
    return bool(re.match(r"(import |from |@|def |class |\"\"\"|#|[A-Z_][A-Z0-9_]* = )", line))


def _head(text: str) -> str:
    return " ".join(text.split())[:200]
