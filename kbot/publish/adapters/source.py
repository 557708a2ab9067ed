"""Line-level edits of Python source that keep the rest of the file byte for byte.

Adapters locate classes and functions with `ast`, then insert or replace whole lines, so the
diff a maintainer reviews is only the lines kbot adds, indented like their neighbours.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from kbot.errors import KbotError


class AdapterError(KbotError):
    """The target cannot be patched by the chosen adapter; the message names another to try."""


@dataclass(frozen=True)
class Param:
    name: str
    default: str | None  # source text of the default, None when required


def parse(source: str, path: str) -> ast.Module:
    try:
        return ast.parse(source, filename=path)
    except SyntaxError as exc:
        raise AdapterError(f"{path}:{exc.lineno}: syntax error: {exc.msg}") from None


def find_class(tree: ast.Module, name: str, path: str) -> ast.ClassDef:
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == name:
            return node
    raise AdapterError(f"{path}: no top-level class {name}; re-run `kbot scan` on this checkout")


def find_function(
    scope: ast.Module | ast.ClassDef, name: str, path: str, required: bool = True
) -> ast.FunctionDef | None:
    for node in scope.body:
        if isinstance(node, ast.FunctionDef) and node.name == name:
            return node
    if required:
        where = f"class {scope.name}" if isinstance(scope, ast.ClassDef) else "module level"
        raise AdapterError(f"{path}: no function {name} at {where}; re-run `kbot scan`")
    return None


def params(function: ast.FunctionDef) -> tuple[Param, ...]:
    """Positional parameters without `self`, with their defaults' source text."""
    args = function.args.posonlyargs + function.args.args
    defaults: list[ast.expr | None] = [None] * (len(args) - len(function.args.defaults))
    defaults += list(function.args.defaults)
    return tuple(
        Param(a.arg, None if d is None else ast.unparse(d))
        for a, d in zip(args, defaults)
        if a.arg not in ("self", "cls")
    )


def indent_of(line: str) -> str:
    return line[: len(line) - len(line.lstrip())]


def body_start(function: ast.FunctionDef) -> int:
    """0-based index of the first body line after the docstring."""
    body = function.body
    first = body[0]
    if (
        len(body) > 1
        and isinstance(first, ast.Expr)
        and isinstance(first.value, ast.Constant)
        and isinstance(first.value.value, str)
    ):
        first = body[1]
    return _first_line(first) - 1


def _first_line(node: ast.stmt) -> int:
    decorators = getattr(node, "decorator_list", [])
    return min([node.lineno] + [d.lineno for d in decorators])


def node_end(node: ast.stmt) -> int:
    """0-based index of the line after the node."""
    return node.end_lineno or node.lineno


def insert(lines: list[str], index: int, new: list[str]) -> list[str]:
    return lines[:index] + new + lines[index:]


def block(text: str, indent: str) -> list[str]:
    """Indents a dedented multi-line snippet; blank lines stay empty."""
    return [(indent + line if line.strip() else "") + "\n" for line in text.splitlines()]


def has_import(tree: ast.Module, module: str, name: str | None = None) -> bool:
    for node in tree.body:
        if isinstance(node, ast.Import) and name is None:
            if any(a.name == module and a.asname is None for a in node.names):
                return True
        if isinstance(node, ast.ImportFrom) and node.module == module and name is not None:
            if any((a.asname or a.name) == name for a in node.names):
                return True
    return False


def add_import(source: str, tree: ast.Module, statement: str) -> str:
    """Adds a top-level import after the last top-level import (or after the docstring)."""
    lines = source.splitlines(keepends=True)
    imports = [n for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))]
    if imports:
        index = node_end(imports[-1])
        # A `from x import (...)` ending the block is already counted by end_lineno.
        return "".join(insert(lines, index, [statement + "\n"]))
    first = tree.body[0] if tree.body else None
    is_doc = (
        isinstance(first, ast.Expr)
        and isinstance(first.value, ast.Constant)
        and isinstance(first.value.value, str)
    )
    index = node_end(first) if is_doc and first is not None else 0
    return "".join(insert(lines, index, ["\n", statement + "\n"] if index else [statement + "\n"]))


def ensure_torch_import(source: str, path: str) -> str:
    tree = parse(source, path)
    if has_import(tree, "torch"):
        return source
    return add_import(source, tree, "import torch")
