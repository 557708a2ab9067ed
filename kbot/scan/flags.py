"""Semantics a problem must reproduce exactly: randomness, mutation of inputs, aliasing.

Read from the reference's AST. Aliases are tracked through simple assignments (`x = x.view(...)`
keeps `x` an alias of the input; `x = x * 2` does not), which is what serving-engine ops do.
"""

from __future__ import annotations

import ast

from kbot.scan.facts import FunctionNode, dotted_name
from kbot.scan.findings import Flag, FlagNote

_RANDOM_CALLS = {
    "rand",
    "randn",
    "randint",
    "rand_like",
    "randn_like",
    "randint_like",
    "randperm",
    "multinomial",
    "bernoulli",
    "bernoulli_",
    "exponential_",
    "normal",
    "normal_",
    "uniform_",
    "random_",
    "geometric_",
    "cauchy_",
    "log_normal_",
    "poisson",
    "dropout",
    "dropout_",
    "Dropout",
    "alpha_dropout",
    "feature_alpha_dropout",
    "gumbel_softmax",
}

# Methods whose result shares storage with the tensor they are called on.
_VIEW_METHODS = {
    "view",
    "view_as",
    "reshape",
    "transpose",
    "permute",
    "unsqueeze",
    "squeeze",
    "flatten",
    "unflatten",
    "narrow",
    "select",
    "expand",
    "expand_as",
    "as_strided",
    "t",
    "T",
    "mT",
    "detach",
    "chunk",
    "split",
    "unbind",
    "diagonal",
    "movedim",
    "swapaxes",
    "real",
    "imag",
    "unfold",
}
# Conversions that return the input itself when nothing needs converting.
_MAYBE_SAME = {"to", "float", "half", "bfloat16", "contiguous", "type_as", "type"}


def _params(func: FunctionNode) -> set[str]:
    args = func.args
    names = [a.arg for a in args.posonlyargs + args.args + args.kwonlyargs]
    if args.vararg:
        names.append(args.vararg.arg)
    return {n for n in names if n not in ("self", "cls")}


def _base_name(node: ast.AST) -> str | None:
    """The variable a view chain starts from: `x` for `x[0].view(-1)`."""
    while True:
        if isinstance(node, ast.Name):
            return node.id
        if isinstance(node, ast.Subscript):
            node = node.value
        elif isinstance(node, ast.Attribute) and node.attr in _VIEW_METHODS:
            node = node.value
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in _VIEW_METHODS | _MAYBE_SAME
        ):
            node = node.func.value
        else:
            return None


def _statements_in_order(func: FunctionNode) -> list[ast.AST]:
    """Every node of the body, children before their parent (so `x = x.mul_(2)` sees the call
    while `x` is still the input), statements in order, nested defs left out."""
    out: list[ast.AST] = []

    def walk(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if not isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                walk(child)
        out.append(node)

    for stmt in func.body:
        walk(stmt)
    return out


def analyse_flags(func: FunctionNode) -> tuple[FlagNote, ...]:
    inputs = _params(func)
    aliases = set(inputs)
    notes: list[FlagNote] = []
    seen: set[tuple[Flag, str]] = set()

    def add(flag: Flag, reason: str, line: int) -> None:
        if (flag, reason) not in seen:
            seen.add((flag, reason))
            notes.append(FlagNote(flag, f"{reason} (line {line})", line))

    for node in _statements_in_order(func):
        if isinstance(node, ast.Call):
            name = dotted_name(node.func) or ""
            last = node.func.attr if isinstance(node.func, ast.Attribute) else name
            if last in _RANDOM_CALLS:
                add(Flag.STOCHASTIC, f"calls {last}", node.lineno)
            for keyword in node.keywords:
                if keyword.arg == "out":
                    base = _base_name(keyword.value)
                    if base in aliases:
                        add(Flag.IN_PLACE, f"writes into input `{base}` with out=", node.lineno)
            if (
                isinstance(node.func, ast.Attribute)
                and node.func.attr.endswith("_")
                and not node.func.attr.startswith("_")
            ):
                base = _base_name(node.func.value)
                if base in aliases:
                    add(
                        Flag.IN_PLACE,
                        f"`{base}.{node.func.attr}(...)` mutates an input",
                        node.lineno,
                    )
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                _track_assignment(target, node.value, aliases, add)
        elif isinstance(node, ast.AugAssign):
            base = _base_name(node.target)
            if base in aliases:
                add(
                    Flag.IN_PLACE,
                    f"`{ast.unparse(node.target)} {_op(node)}=` mutates an input",
                    node.lineno,
                )
        elif isinstance(node, ast.Return) and node.value is not None:
            values = node.value.elts if isinstance(node.value, ast.Tuple) else [node.value]
            for value in values:
                base = _base_name(value)
                if base in aliases:
                    add(
                        Flag.RETURNS_VIEW,
                        f"returns `{ast.unparse(value)}`, which may share storage with input `{base}`",
                        node.lineno,
                    )
    return tuple(notes)


def _op(node: ast.AugAssign) -> str:
    return {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/"}.get(type(node.op), "op")


def _track_assignment(target: ast.AST, value: ast.AST, aliases: set[str], add) -> None:
    if isinstance(target, ast.Subscript):
        base = _base_name(target.value)
        if base in aliases:
            add(Flag.IN_PLACE, f"`{ast.unparse(target)} = ...` writes into an input", target.lineno)
    elif isinstance(target, ast.Name):
        if _base_name(value) in aliases:
            aliases.add(target.id)
        else:
            aliases.discard(target.id)
    elif isinstance(target, ast.Tuple):
        # `a, b = x.chunk(2, -1)` makes both views of x; `a, b = f(x)` makes neither.
        source_alias = _base_name(value) in aliases
        for element in target.elts:
            if isinstance(element, ast.Name):
                (aliases.add if source_alias else aliases.discard)(element.id)
