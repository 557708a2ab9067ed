"""Composing per-size winners into one candidate file that dispatches by size (and a kernel
compiled for the problem's own sizes with a generic one for the others: kbot.search.fallback).

Each winner's module body (kernels, helpers, constants, launcher; not its docstring, imports
or ModelNew) is copied with comments intact and every name it defines suffixed by its variant
tag (`_rmsnorm_kernel` -> `_rmsnorm_kernel_v1`, `BLOCK_SIZE` -> `BLOCK_SIZE_V1`), so the
winners cannot collide. A launcher under the op's own name picks a variant by the size key
(kbot.search.dispatch) and `ModelNew` (the overall winner's, its forward pointed at that
launcher) calls it: the result follows the candidate file convention of docs/architecture.md
and goes through the evaluator like any candidate.
"""

from __future__ import annotations

import ast
import re
import textwrap
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from kbot.search.dispatch import SizeKey, SizeRange, range_condition


class CompositionError(Exception):
    """The winners cannot be composed into one module; the message says why."""


@dataclass(frozen=True)
class Variant:
    tag: str  # "v1", "v2", ... in order of the sizes served
    sha256: str
    proposer: str
    source: str


@dataclass(frozen=True)
class Served:
    """A specialised variant, the condition under which it runs (as in compose_fallback_source)
    and what the module's docstring says it serves."""

    variant: Variant
    condition: Callable[[list[str], dict[str, str]], str]
    sizes: str


@dataclass(frozen=True)
class _Parsed:
    tree: ast.Module
    model_new: ast.ClassDef
    forward: ast.FunctionDef
    call: ast.Call  # forward's `return <launcher>(...)`
    launcher: str


def compose_source(
    op_title: str,
    variants: Sequence[Variant],
    ranges: Sequence[SizeRange],
    key: SizeKey,
    model_from: Variant,
    rule: str,
) -> str:
    """The composed candidate. `ranges` are keyed by the serving variant's sha256; the
    ModelNew class is `model_from`'s."""

    def branches(
        params: list[str], attributes: dict[str, str], calls: dict[str, str]
    ) -> tuple[str, list[str]]:
        lines, low = [f"    size = {key.expression(params)}"], None
        for index, size_range in enumerate(ranges):
            call = calls[str(size_range.key)]
            measured = ", ".join(size_range.labels)
            if index + 1 == len(ranges):
                lines.append(f"    return {call}  # measured: {measured}")
            else:
                lines.append(
                    f"    if {range_condition('size', low, size_range.upto)}:  # measured: {measured}"
                )
                lines.append(f"        return {call}")
            low = size_range.upto
        return f"Size: {key.expression(params)}. {rule}", lines

    served = {
        v.sha256: "; ".join(", ".join(r.labels) for r in ranges if r.key == v.sha256)
        for v in variants
    }
    return _assemble(op_title, variants, model_from, served, rule, branches)


def compose_fallback_source(
    op_title: str,
    specialised: Variant,
    generic: Variant,
    condition: Callable[[list[str], dict[str, str]], str],
    rule: str,
    parts: str = "accepted candidates",
) -> str:
    """`specialised` (a kernel compiled for the problem's own sizes) where `condition` holds,
    `generic` everywhere else; ModelNew is the specialised candidate's, else the generic one's.
    `condition(params, attributes)` is a Python expression over the launcher's parameters
    (forward's, then `attributes`: launcher name -> `self.<attr>`). `parts` names what the two
    are in the module's docstring."""
    served = Served(specialised, condition, "the sizes it was compiled for")
    return compose_specialised_source(op_title, [served], generic, rule, parts)


def compose_specialised_source(
    op_title: str,
    specialised: Sequence[Served],
    generic: Variant,
    rule: str,
    parts: str = "accepted candidates",
) -> str:
    """Each of `specialised` where its condition holds, tried in order, `generic` everywhere
    else; ModelNew is the first specialised variant's, else the generic one's."""

    def branches(
        params: list[str], attributes: dict[str, str], calls: dict[str, str]
    ) -> tuple[str, list[str]]:
        lines = []
        for each in specialised:
            lines.append(f"    if {each.condition(params, attributes)}:")
            lines.append(f"        return {calls[each.variant.sha256]}")
        return rule, [*lines, f"    return {calls[generic.sha256]}"]

    served = {each.variant.sha256: each.sizes for each in specialised}
    served[generic.sha256] = "every other size"
    variants = [*(each.variant for each in specialised), generic]
    if len({v.sha256 for v in variants}) != len(variants):
        raise CompositionError("a variant appears twice: compose each candidate once")
    try:
        return _assemble(op_title, variants, variants[0], served, rule, branches, parts)
    except CompositionError:  # its ModelNew lacks an attribute another one passes
        return _assemble(op_title, variants, generic, served, rule, branches, parts)


def _assemble(
    op_title: str,
    variants: Sequence[Variant],
    model_from: Variant,
    served: dict[str, str],
    rule: str,
    branches: Callable[[list[str], dict[str, str], dict[str, str]], tuple[str, list[str]]],
    parts: str = "accepted candidates",
) -> str:
    """The module: each variant's renamed body, a launcher under the op's own name whose body
    `branches(params, attributes, calls by sha256)` writes (the docstring's size line and
    the body's lines), and `model_from`'s ModelNew calling it."""
    parsed = {v.sha256: _parse(v) for v in variants}
    model = parsed[model_from.sha256]
    params = [a.arg for a in model.forward.args.args[1:]]
    attributes = _attributes([parsed[v.sha256] for v in variants], params)
    missing = [a for a in attributes.values() if a not in _self_names(model.model_new)]
    if missing:
        raise CompositionError(
            f"ModelNew of {model_from.sha256[:12]} does not set self.{missing[0]}, "
            "which another winner's forward passes"
        )
    launcher_args = params + [name for name in attributes if name not in params]
    imports: dict[str, None] = {}
    bodies = []
    for variant in variants:
        p = parsed[variant.sha256]
        for node in p.tree.body:
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                imports.setdefault(ast.unparse(node), None)
        bodies.append(
            f"# --- {variant.tag}: candidate {variant.sha256[:12]} ({variant.proposer}), "
            f"serves {served[variant.sha256]}\n\n\n" + _renamed_body(variant, p)
        )
    calls = {v.sha256: _variant_call(parsed[v.sha256], v.tag, params, attributes) for v in variants}
    described, lines = branches(params, attributes, calls)
    comment = "".join(f"    # {line}\n" for line in textwrap.wrap(rule, 84))
    launcher = (
        f"def {model.launcher}({', '.join(launcher_args)}):\n{comment}" + "\n".join(lines) + "\n"
    )
    notes = "\n".join(
        f"{v.tag}: candidate {v.sha256[:12]} ({v.proposer}) serves {served[v.sha256]}"
        for v in variants
    )
    docstring = (
        f'"""Per-size dispatch for `{op_title}`: {len(variants)} {parts} composed '
        f"by kbot.\n\n{notes}\n" + textwrap.fill(described, 92) + '\n"""\n'
    )
    model_source = _model_new_source(model, model_from.source, launcher_args, attributes)
    sections = [docstring, "\n".join(imports) + "\n", *bodies, launcher, model_source]
    return "\n\n\n".join(s.strip("\n") for s in sections) + "\n"


def _parse(variant: Variant) -> _Parsed:
    try:
        tree = ast.parse(variant.source)
    except SyntaxError as exc:
        raise CompositionError(f"{variant.sha256[:12]} does not parse: {exc.msg}") from None
    model = next(
        (n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "ModelNew"), None
    )
    forward = next(
        (
            n
            for n in (model.body if model else [])
            if isinstance(n, ast.FunctionDef) and n.name == "forward"
        ),
        None,
    )
    last = forward.body[-1] if forward is not None else None
    if (
        model is None
        or forward is None
        or not isinstance(last, ast.Return)
        or not isinstance(last.value, ast.Call)
        or not isinstance(last.value.func, ast.Name)
    ):
        raise CompositionError(
            f"{variant.sha256[:12]}: ModelNew.forward is not a single `return <op>(...)`"
        )
    return _Parsed(tree, model, forward, last.value, last.value.func.id)


def _attributes(parsed: list[_Parsed], params: list[str]) -> dict[str, str]:
    """launcher parameter name -> the `self.<attr>` each winner's call passes (in order)."""
    found: dict[str, str] = {}
    for p in parsed:
        for node in ast.walk(p.call):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id == "self"
            ):
                name = node.attr if node.attr not in params else f"self_{node.attr}"
                found.setdefault(name, node.attr)
    return found


def _self_names(model: ast.ClassDef) -> set[str]:
    """Attributes ModelNew sets: `self.x = ...`, register_buffer/register_parameter names."""
    names = set()
    for node in ast.walk(model):
        if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            if isinstance(node.value, ast.Name) and node.value.id == "self":
                names.add(node.attr)
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in ("register_buffer", "register_parameter")
            and node.args
            and isinstance(node.args[0], ast.Constant)
        ):
            names.add(str(node.args[0].value))
    return names


def _variant_call(p: _Parsed, tag: str, params: list[str], attributes: dict[str, str]) -> str:
    """The winner's own forward call, renamed: its launcher suffixed, its forward parameters
    by position to the composed launcher's, `self.<attr>` to the launcher parameter."""
    own = [a.arg for a in p.forward.args.args[1:]]
    by_position = dict(zip(own, params))
    by_attr = {attr: name for name, attr in attributes.items()}

    class Rewrite(ast.NodeTransformer):
        def visit_Attribute(self, node: ast.Attribute) -> ast.AST:
            if isinstance(node.value, ast.Name) and node.value.id == "self":
                return ast.Name(by_attr[node.attr], ast.Load())
            return self.generic_visit(node)

        def visit_Name(self, node: ast.Name) -> ast.AST:
            return ast.Name(by_position.get(node.id, node.id), node.ctx)

    call = Rewrite().visit(ast.parse(ast.unparse(p.call), mode="eval")).body
    call.func = ast.Name(_suffixed(p.launcher, tag), ast.Load())
    return ast.unparse(call)


def _model_new_source(
    p: _Parsed, source: str, launcher_args: list[str], attributes: dict[str, str]
) -> str:
    """The overall winner's ModelNew, as written, with forward calling the composed launcher."""
    params = {a.arg for a in p.forward.args.args[1:]}
    args = [a if a in params else f"self.{attributes[a]}" for a in launcher_args]
    lines = source.splitlines()
    start = min([d.lineno for d in p.model_new.decorator_list] + [p.model_new.lineno]) - 1
    returned = p.forward.body[-1]
    indent = lines[returned.lineno - 1][: returned.col_offset]
    call = f"{indent}return {p.launcher}({', '.join(args)})"
    before = lines[start : returned.lineno - 1]
    after = lines[(returned.end_lineno or returned.lineno) : p.model_new.end_lineno]
    return "\n".join([*before, call, *after]) + "\n"


def _suffixed(name: str, tag: str) -> str:
    return f"{name}_{tag.upper()}" if name.isupper() else f"{name}_{tag}"


def _defined_names(tree: ast.Module) -> set[str]:
    names = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            if node.name != "ModelNew":
                names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                names.update(n.id for n in ast.walk(target) if isinstance(n, ast.Name))
    return names


def _renamed_body(variant: Variant, p: _Parsed) -> str:
    """The winner's module minus docstring, imports and ModelNew, its names suffixed."""
    rename = {name: _suffixed(name, variant.tag) for name in _defined_names(p.tree)}
    lines = [line.encode() for line in variant.source.splitlines()]
    edits: list[tuple[int, int, str, str]] = []  # (0-based line, byte column, old, new)
    drop: set[int] = set()
    body = p.tree.body
    for index, node in enumerate(body):
        docstring = (
            index == 0
            and isinstance(node, ast.Expr)
            and isinstance(getattr(node, "value", None), ast.Constant)
        )
        if docstring or isinstance(node, (ast.Import, ast.ImportFrom)) or node is p.model_new:
            start = min([d.lineno for d in getattr(node, "decorator_list", [])] + [node.lineno])
            drop.update(range(start - 1, node.end_lineno or node.lineno))
            continue
        _collect(node, rename, frozenset(), edits, lines)
    for row, column, old, new in sorted(edits, reverse=True):
        line = lines[row]
        assert line[column : column + len(old)] == old.encode(), (row, column, old)
        lines[row] = line[:column] + new.encode() + line[column + len(old) :]
    kept: list[str] = []
    for row, raw in enumerate(lines):
        text = raw.decode()
        blank_run = len(kept) >= 2 and not kept[-1].strip() and not kept[-2].strip()
        if row in drop or (not text.strip() and (blank_run or not kept)):
            continue
        kept.append(text)
    return "\n".join(kept).strip("\n") + "\n"


_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)
_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


def _collect(
    node: ast.AST,
    rename: dict[str, str],
    local: frozenset[str],
    edits: list[tuple[int, int, str, str]],
    lines: list[bytes],
) -> None:
    """Edits renaming every reference to a module-level name under `node`; names bound
    locally (parameters, assignments, comprehension targets) shadow and stay."""
    if isinstance(node, ast.Name):
        if node.id in rename and node.id not in local:
            edits.append((node.lineno - 1, node.col_offset, node.id, rename[node.id]))
        return
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        if node.name in rename and node.name not in local:
            row = node.lineno - 1
            keyword = "class" if isinstance(node, ast.ClassDef) else "def"
            match = re.search(rf"\b{keyword}\s+({re.escape(node.name)})\b".encode(), lines[row])
            if match is None:
                raise CompositionError(f"could not find `{keyword} {node.name}` to rename it")
            edits.append((row, match.start(1), node.name, rename[node.name]))
        for outer in [*node.decorator_list, *getattr(node, "bases", [])]:
            _collect(outer, rename, local, edits, lines)
    if isinstance(node, _SCOPES):
        arguments = node.args
        for default in [*arguments.defaults, *(d for d in arguments.kw_defaults if d)]:
            _collect(default, rename, local, edits, lines)
        for arg in [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]:
            if arg.annotation is not None:
                _collect(arg.annotation, rename, local, edits, lines)
        inner = local | _bound_in(node)
        body = node.body if isinstance(node.body, list) else [node.body]
        for statement in body:
            _collect(statement, rename, inner, edits, lines)
        return
    if isinstance(node, ast.ClassDef):
        for statement in node.body:
            _collect(statement, rename, local, edits, lines)
        return
    if isinstance(node, _COMPREHENSIONS):
        inner = local | {
            n.id for g in node.generators for n in ast.walk(g.target) if isinstance(n, ast.Name)
        }
        for child in ast.iter_child_nodes(node):
            _collect(child, rename, inner, edits, lines)
        return
    for child in ast.iter_child_nodes(node):
        _collect(child, rename, local, edits, lines)


def _bound_in(function: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) -> frozenset[str]:
    """Names local to a function: its parameters and what its own body binds."""
    arguments = function.args
    names = {a.arg for a in [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]}
    names |= {a.arg for a in (arguments.vararg, arguments.kwarg) if a is not None}
    declared_global: set[str] = set()
    pending = list(function.body) if isinstance(function.body, list) else [function.body]
    while pending:
        node = pending.pop()
        if isinstance(node, ast.Global):
            declared_global.update(node.names)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            names.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
            continue  # a nested scope binds for itself
        if not isinstance(node, (ast.Lambda, *_COMPREHENSIONS)):
            pending.extend(ast.iter_child_nodes(node))
    return frozenset(names - declared_global)
