"""What the repository's own calls pass: an argument that no model configuration sizes (a
sequence axis, a flag, a mode) is read from the calls of the op in the scanned tree when every
one of them passes the same literal (lingua calls `apply_rotary_emb(xq, xk, 1, freq_cis)`:
`seq_dim=1`). Never guessed: calls that pass different values, or a variable, leave the
argument unknown, and the skip says which values were seen.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from kbot.scan.findings import Finding
from kbot.scan.walk import FileSkip, python_files, read_source

_UNSET = object()


@dataclass(frozen=True)
class CallLiteral:
    """One argument as the repository's calls pass it: `value` when every call that passes it
    passes that literal (`varies` False), else the values seen (a variable as its source)."""

    param: str
    value: Any
    where: tuple[str, ...]  # "file:line" of each call that passes it
    varies: bool = False
    seen: tuple[str, ...] = ()  # what the calls pass, when they differ

    def because(self) -> str:
        calls = (
            f"{len(self.where)} calls in the repository pass"
            if len(self.where) > 1
            else ("the repository's one call passes")
        )
        return f"{calls} {self.value!r}: {', '.join(self.where[:3])}"


def with_call_literals(
    findings: list[Finding], root: Path, exclude: tuple[str, ...] = ()
) -> list[Finding]:
    """`findings` with `call_literals` set for each function target whose required arguments
    include one that is not a tensor by its annotation: what the tree's calls of it pass."""
    wanted = {f.qualname: f for f in findings if _wants_calls(f)}
    if not wanted:
        return findings
    pattern = re.compile(r"\b(" + "|".join(map(re.escape, wanted)) + r")\s*\(")
    calls: dict[str, list[tuple[ast.Call, str]]] = {name: [] for name in wanted}
    for rel, path in python_files(root, exclude):
        source = read_source(rel, path)
        if isinstance(source, FileSkip) or not pattern.search(source):
            continue
        try:
            tree = ast.parse(source)
        except (SyntaxError, ValueError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and _called_name(node.func) in wanted:
                calls[_called_name(node.func)].append((node, f"{rel}:{node.lineno}"))
    return [
        replace(f, call_literals=_literals(f, calls[f.qualname])) if f.qualname in wanted else f
        for f in findings
    ]


def _wants_calls(finding: Finding) -> bool:
    """A plain function (methods are called through objects the scan cannot follow) with a
    required argument not annotated as a tensor."""
    if finding.entry or "." in finding.qualname:
        return False
    return any(
        p.default is None and "tensor" not in (p.annotation or "").lower() for p in finding.params
    )


def _called_name(func: ast.expr) -> str:
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return ""


def _literals(finding: Finding, calls: list[tuple[ast.Call, str]]) -> tuple[CallLiteral, ...]:
    names = [p.name for p in finding.params]
    passed: dict[str, list[tuple[Any, str, str]]] = {}  # param -> (value, text, where)
    for call, where in calls:
        if not _fits(call, finding):
            continue  # another function of that name, or arguments that cannot be told apart
        given = list(zip(names, call.args)) + [(k.arg, k.value) for k in call.keywords]
        for name, node in given:
            if name in names:
                passed.setdefault(name, []).append((_literal(node), ast.unparse(node), where))
    found = []
    for name, values in passed.items():
        literals = {repr(v) for v, _, _ in values if v is not _UNSET}
        where = tuple(w for _, _, w in values)
        if len(literals) == 1 and all(v is not _UNSET for v, _, _ in values):
            found.append(CallLiteral(name, values[0][0], where))
        else:
            seen = tuple(dict.fromkeys(text for _, text, _ in values))
            found.append(CallLiteral(name, None, where, varies=True, seen=seen))
    return tuple(found)


def _fits(call: ast.Call, finding: Finding) -> bool:
    """Whether `call` can be a call of the finding's function: no *args or **kwargs in it,
    every argument it passes one the function names, every required one passed
    (`torch.ops.engine.softcap(out, logits, cap)` is not `softcap(x, cap)`). The scan's
    parameters leave out a function's own *args and **kwargs, so a call that fills them is
    not counted either."""
    if any(isinstance(a, ast.Starred) for a in call.args) or any(
        k.arg is None for k in call.keywords
    ):
        return False
    params = finding.params
    keywords = {k.arg for k in call.keywords}
    if len(call.args) > len(params) or not keywords <= {p.name for p in params}:
        return False
    given = {p.name for p in params[: len(call.args)]} | keywords
    return all(p.name in given for p in params if p.default is None)


def _literal(node: ast.expr) -> Any:
    """An int, float, bool, str or None written in the call; _UNSET for anything else."""
    try:
        value = ast.literal_eval(node)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return _UNSET
    return value if value is None or isinstance(value, (bool, int, float, str)) else _UNSET


def call_literal(finding: Finding, name: str) -> CallLiteral | None:
    return next((c for c in finding.call_literals if c.param == name), None)
