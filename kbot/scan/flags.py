"""Semantics a problem must reproduce exactly: randomness, mutation of inputs, aliasing.

Read from the reference's AST. Aliases are tracked through simple assignments (`x = x.view(...)`
keeps `x` an alias of the input; `x = x * 2` does not), which is what serving-engine ops do.

A dtype conversion (`x = x.float()`, `x.to(torch.float32)`) is the op's own temporary: serving
ops upcast low-precision activations, and writing into the upcast copy (`x.mul_(...)`) is not a
mutation of the input. (Given a float32 input, `.float()` is the input itself; the evaluator
compares outputs and never relies on what the reference writes into its inputs, so a kernel
that leaves them alone is still right.) A returned conversion may still be the input itself,
so RETURNS_VIEW counts conversions.
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
# Conversions that return the input itself when nothing needs converting: dtype conversions,
# which make a temporary whenever they convert, and contiguous(), which usually converts nothing.
_CONVERSIONS = {"to", "float", "half", "bfloat16", "double", "type_as", "type"}
_MAYBE_SAME = _CONVERSIONS | {"contiguous"}


def _params(func: FunctionNode) -> set[str]:
    args = func.args
    names = [a.arg for a in args.posonlyargs + args.args + args.kwonlyargs]
    if args.vararg:
        names.append(args.vararg.arg)
    return {n for n in names if n not in ("self", "cls")}


def _base_name(node: ast.AST, through_conversions: bool = False) -> str | None:
    """The variable a view chain starts from: `x` for `x[0].view(-1)`; for `x.float()` only
    `through_conversions`."""
    same = _MAYBE_SAME if through_conversions else _MAYBE_SAME - _CONVERSIONS
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
            and node.func.attr in _VIEW_METHODS | same
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
    aliases = set(inputs)  # variables that are (views of) an input
    maybe_same = set(inputs)  # ... or conversions of one, which may be the input itself
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
                _track_assignment(target, node.value, aliases, maybe_same, add)
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
                base = _base_name(value, through_conversions=True)
                if base in maybe_same:
                    add(
                        Flag.RETURNS_VIEW,
                        f"returns `{ast.unparse(value)}`, which may share storage with input `{base}`",
                        node.lineno,
                    )
    return tuple(notes)


def _op(node: ast.AugAssign) -> str:
    return {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/"}.get(type(node.op), "op")


def _track_assignment(
    target: ast.AST, value: ast.AST, aliases: set[str], maybe_same: set[str], add
) -> None:
    if isinstance(target, ast.Subscript):
        base = _base_name(target.value)
        if base in aliases:
            add(Flag.IN_PLACE, f"`{ast.unparse(target)} = ...` writes into an input", target.lineno)
        return
    # `a, b = x.chunk(2, -1)` makes both views of x; `a, b = f(x)` makes neither.
    names = [target] if isinstance(target, ast.Name) else getattr(target, "elts", [])
    is_alias = _base_name(value) in aliases
    is_maybe = _base_name(value, through_conversions=True) in maybe_same
    for element in names:
        if isinstance(element, ast.Name):
            (aliases.add if is_alias else aliases.discard)(element.id)
            (maybe_same.add if is_maybe else maybe_same.discard)(element.id)
