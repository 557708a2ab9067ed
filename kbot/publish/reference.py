"""The problem file rearranged for the files a PR adds to the target repository (the parity
test and the benchmark script carry the reference), and Python literals written the way black
writes them."""

from __future__ import annotations

import ast
import builtins
import re
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from kbot.publish.adapters.source import AdapterError

# Imports the templates write themselves.
_OWN_IMPORTS = {"import os", "import pytest", "import argparse", "import triton", "import torch"}
# The problem's import set-up (kbot/scan/render.py): a PR's test imports its own checkout.
_SETUP_HELPERS = {"_import_root", "_forget_other_checkouts"}


@dataclass(frozen=True)
class Reference:
    """The problem file rearranged for a test module in the target repository."""

    imports: tuple[str, ...]  # third-party imports, e.g. "from torch import nn"
    package_imports: tuple[str, ...]  # imports from the target's own package
    body: str  # Model, get_inputs, get_init_inputs and what they use


def split_reference(source: str, package: str) -> Reference:
    """Splits the problem into imports and code, leaving out what only made sense in kbot's run
    directory: the docstring, `sys.path` set-up, `CASES`/`KBOT` (the test writes its own), and
    imports the templates write or the code does not use."""
    tree = ast.parse(source)
    lines = source.splitlines(keepends=True)
    imports: list[ast.stmt] = []
    skip: set[int] = set()
    for index, node in enumerate(tree.body):
        segment = "".join(lines[node.lineno - 1 : node.end_lineno])
        dropped = (
            "sys.path" in segment
            or any(_assigns(node, name) for name in ("_ROOT", "CASES", "KBOT"))
            or (isinstance(node, ast.FunctionDef) and node.name in _SETUP_HELPERS)
            or _calls(node) in _SETUP_HELPERS
            or (index == 0 and _is_docstring(node))
        )
        if dropped or isinstance(node, (ast.Import, ast.ImportFrom)):
            skip.update(range(node.lineno - 1, node.end_lineno or node.lineno))
        if not dropped and isinstance(node, (ast.Import, ast.ImportFrom)):
            imports.append(node)
    body = "".join(line for i, line in enumerate(lines) if i not in skip)
    body = re.sub(r"\n{3,}", "\n\n\n", body.strip("\n")) + "\n"
    used = {n.id for n in ast.walk(ast.parse(body)) if isinstance(n, ast.Name)}
    third, first = [], []
    # what the PR's file binds besides the body: the templates' own imports and those kept here
    bound = {line.split()[-1] for line in _OWN_IMPORTS}
    for node in imports:
        if isinstance(node, ast.ImportFrom) and node.module == "__future__":
            continue
        names = [(a.asname or a.name).split(".")[0] for a in node.names]
        if not any(name in used for name in names):
            continue
        text = re.sub(r"\s*#.*$", "", "".join(lines[node.lineno - 1 : node.end_lineno]).strip())
        if text in _OWN_IMPORTS:
            continue
        module = node.module if isinstance(node, ast.ImportFrom) else node.names[0].name
        (first if (module or "").split(".")[0] == package else third).append(text)
        bound.update(names)
    return Reference(tuple(third), tuple(first), without_unbound_annotations(body, bound))


def without_unbound_annotations(body: str, bound: set[str]) -> str:
    """`body` without the argument and return annotations of its functions that name something
    neither the body nor `bound` binds. A problem file postpones its annotations (`from
    __future__ import annotations`) and kbot's scan copies no import for them; the PR's files
    evaluate them when the function is defined (lightllm's `-> Tuple[...]` without its typing
    import: NameError in the drafted parity test, H100, 2026-12-06). A default keeps its
    value (`n: Opt = None` becomes `n=None`)."""
    tree = ast.parse(body)
    known = bound | top_level_names(body) | set(dir(builtins))
    starts = [0]
    for line in body.splitlines(keepends=True):
        starts.append(starts[-1] + len(line))

    def at(line: int, col: int) -> int:  # ast columns count UTF-8 bytes
        text = body[starts[line - 1] : starts[line]]
        return starts[line - 1] + len(text.encode()[:col].decode(errors="ignore"))

    def unbound(annotation: ast.expr) -> bool:
        return any(isinstance(n, ast.Name) and n.id not in known for n in ast.walk(annotation))

    cuts: list[tuple[int, int, str]] = []
    for node in ast.walk(tree):
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        a = node.args
        for arg in [*a.posonlyargs, *a.args, a.vararg, *a.kwonlyargs, a.kwarg]:
            if arg is None or arg.annotation is None or not unbound(arg.annotation):
                continue
            start = at(arg.lineno, arg.col_offset) + len(arg.arg)
            end = at(arg.annotation.end_lineno, arg.annotation.end_col_offset)
            default = re.match(r"\s*=\s*", body[end:])
            cuts.append((start, end + default.end(), "=") if default else (start, end, ""))
        if node.returns is not None and unbound(node.returns):
            arrow = body.rindex("->", 0, at(node.returns.lineno, node.returns.col_offset))
            start = len(body[:arrow].rstrip())
            cuts.append((start, at(node.returns.end_lineno, node.returns.end_col_offset), ""))
    for start, end, text in sorted(cuts, reverse=True):
        body = body[:start] + text + body[end:]
    return body


def reimport(source: str, old: str, new: str) -> str:
    """`source` with its top-level imports of module `old` importing `new` instead (`from old
    import X` and `import old as m`; `import old` alone binds the name `old` and is kept)."""
    if not old or old == new:
        return source
    lines = source.splitlines(keepends=True)
    for node in ast.parse(source).body:
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module == old:
            pattern = rf"(\bfrom\s+){re.escape(old)}(\s+import\b)"
        elif isinstance(node, ast.Import) and any(a.name == old and a.asname for a in node.names):
            pattern = rf"(\bimport\s+(?:[\w.]+\s+as\s+\w+\s*,\s*)*){re.escape(old)}(\s+as\b)"
        else:
            continue
        index = node.lineno - 1
        lines[index] = re.sub(pattern, rf"\g<1>{new}\g<2>", lines[index], count=1)
    return "".join(lines)


def import_sections(lines: Iterable[str], package: str) -> list[list[str]]:
    """Import lines as isort's default profile (and ruff's `I` rules) order them: the standard
    library, third-party packages, then the target's own `package`; in each, `import x` lines
    before `from x import y` lines, each sorted by module; duplicates dropped. So the PR's
    files pass the target's import-order check as written."""
    sections: list[list[str]] = [[], [], []]
    for line in dict.fromkeys(lines):
        root = line.split()[1].split(".")[0]
        index = 2 if root == package else 0 if root in sys.stdlib_module_names else 1
        sections[index].append(line)

    def order(line: str) -> tuple[bool, str, str]:
        return line.startswith("from "), line.split()[1].lower(), line

    return [sorted(section, key=order) for section in sections if section]


def _calls(node: ast.stmt) -> str:
    """The name a statement that is only a call calls, else ""."""
    if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
        return getattr(node.value.func, "id", "")
    return ""


def _is_docstring(node: ast.stmt) -> bool:
    return (
        isinstance(node, ast.Expr)
        and isinstance(node.value, ast.Constant)
        and isinstance(node.value.value, str)
    )


def check_names(rendered: str, body: str, path: str, rebinds: tuple[str, ...] = ()) -> None:
    """Refuses a file in which the reference's code and the template's own code bind the same
    top-level name (a problem's `_reference` once met the parity test's helper of that name,
    and the test called the wrong one). `rebinds` are names the template rebinds on purpose."""
    template = rendered.replace(body, "\n", 1) if body.strip() else rendered
    bound = top_level_names(template) | imported_names(template)
    clash = (top_level_names(body) & bound) - set(rebinds)
    if clash:
        raise AdapterError(
            f"{path}: the problem's reference binds {', '.join(sorted(clash))}, which kbot's "
            "template for this file defines too; rename it in the problem file"
        )


def top_level_names(source: str) -> set[str]:
    """The names a module's own definitions and assignments bind (not its imports)."""
    names: set[str] = set()
    for node in ast.parse(source).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name))
    return names


def imported_names(source: str) -> set[str]:
    """The names a module's top-level imports bind (a copied function of the kernel's name once
    shadowed the kernel's import, and the PR's parity test compared the original with itself)."""
    names: set[str] = set()
    for node in ast.parse(source).body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
    return names


def binds(source: str, name: str) -> bool:
    return any(_assigns(node, name) for node in ast.parse(source).body)


def _assigns(node: ast.stmt, name: str) -> bool:
    return isinstance(node, ast.Assign) and any(
        isinstance(t, ast.Name) and t.id == name for t in node.targets
    )


def py_literal(value: Any) -> str:
    """A Python literal written the way black writes it (double quotes)."""
    if isinstance(value, dict):
        return "{" + ", ".join(f"{py_literal(k)}: {py_literal(v)}" for k, v in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        inner = ", ".join(py_literal(v) for v in value)
        return (
            f"[{inner}]"
            if isinstance(value, list)
            else f"({inner}{',' if len(value) == 1 else ''})"
        )
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return repr(value)


@dataclass(frozen=True)
class SizedReference:
    """The reference body with swept sizes as keyword arguments of its input builders."""

    body: str
    inputs_keys: tuple[str, ...]  # size keywords get_inputs takes
    init_keys: tuple[str, ...]  # size keywords get_init_inputs takes


def size_keyword(size: int) -> str:
    return f"dim_{size}"


def parametrize_sizes(body: str, sizes: list[int]) -> SizedReference:
    """`get_inputs` and `get_init_inputs` take each swept size (report.json `sweep`, written in
    them as a literal or through a module constant) as a keyword with the run's value as its
    default, `dim_2048=2048`, so the parity test can build the reference at the sizes the
    sweep passed. A size some other code also reads (a module constant `Model` uses) is left
    alone: changing it in the builders alone would not change the op. The two functions are
    rewritten in place; the rest of the body keeps its text and comments."""
    tree = ast.parse(body)
    builders = {
        node.name: node
        for node in tree.body
        if isinstance(node, ast.FunctionDef) and node.name in ("get_inputs", "get_init_inputs")
    }
    constants = {
        target.id: node.value.value
        for node in tree.body
        if isinstance(node, ast.Assign)
        and isinstance(node.value, ast.Constant)
        and type(node.value.value) is int
        for target in node.targets
        if isinstance(target, ast.Name)
    }
    outside = {
        n.id
        for node in tree.body
        if node not in builders.values()
        for n in ast.walk(node)
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)
    }
    usable = [s for s in sizes if not any(v == s and n in outside for n, v in constants.items())]
    keys: dict[str, list[str]] = {"get_inputs": [], "get_init_inputs": []}
    lines = body.splitlines(keepends=True)
    for name, function in sorted(builders.items(), key=lambda i: -i[1].lineno):
        rewritten = _Sized(usable, constants).visit(ast.parse(ast.unparse(function)).body[0])
        found = [s for s in usable if size_keyword(s) in ast.unparse(rewritten)]
        if not found:
            continue
        args = rewritten.args
        for size in found:
            args.args.append(ast.arg(size_keyword(size)))
            args.defaults.append(ast.Constant(size))
        keys[name] = [size_keyword(s) for s in found]
        start = (function.decorator_list[0] if function.decorator_list else function).lineno
        text = ast.unparse(ast.fix_missing_locations(rewritten)) + "\n"
        lines[start - 1 : function.end_lineno] = [text]
    return SizedReference("".join(lines), tuple(keys["get_inputs"]), tuple(keys["get_init_inputs"]))


class _Sized(ast.NodeTransformer):
    """Each literal swept size, and each module constant holding one, -> its keyword."""

    def __init__(self, sizes: list[int], constants: dict[str, int]) -> None:
        self.sizes, self.constants = set(sizes), constants

    def visit_Constant(self, node: ast.Constant) -> ast.AST:
        if type(node.value) is int and node.value in self.sizes:
            return ast.copy_location(ast.Name(size_keyword(node.value), ast.Load()), node)
        return node

    def visit_Name(self, node: ast.Name) -> ast.AST:
        value = self.constants.get(node.id)
        if isinstance(node.ctx, ast.Load) and value in self.sizes:
            return ast.copy_location(ast.Name(size_keyword(value), ast.Load()), node)
        return node
