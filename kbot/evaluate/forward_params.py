"""How a call's arguments reach a followed function's parameters: positional and keyword
kinds, `*xs` / `**kw` spreading their element kind over every parameter they may fill,
defaults keeping the kind of what they hold (`lambda t=x: ...`), number annotations, and
function values passed in (a lambda handed to a helper is followed where the helper calls it).
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from kbot.evaluate.forward_kinds import Callable, Kind

if TYPE_CHECKING:
    from kbot.evaluate.forward_walk import Walker


def bind_parameters(
    walker: Walker,
    fn: ast.FunctionDef | ast.Lambda,
    is_method: bool,
    arg_kinds: tuple[Kind, ...] | None,
    keyword_kinds: dict[str, Kind],
    default_kind: Kind,
    star_kind: Kind | None,
    callable_args: dict[int | str, Callable],
) -> None:
    """Sets `walker.env` (and `walker.local_fns`) for each parameter of `fn`: the caller's
    kind, else a spread `*`/`**` element, else the default's kind, else `default_kind`; a number
    annotation counts only where nothing says what is passed (`default_kind` UNKNOWN): at an
    entry point the judge calls, `x: float` on a tensor is the candidate's word, not a fact.
    `self` of a method is skipped."""
    keyword_kinds = keyword_kinds or {}
    callable_args = callable_args or {}
    args = fn.args.posonlyargs + fn.args.args
    defaults = fn.args.defaults
    first_default = len(args) - len(defaults)
    default_kinds = [walker.expr(d) for d in defaults]  # `lambda t=x: ...` keeps x's kind
    kw_default_kinds = [walker.expr(d) if d is not None else None for d in fn.args.kw_defaults]
    for index, arg in enumerate(args):
        if is_method and index == 0:
            continue
        position = index - int(is_method)
        if arg_kinds is not None and position < len(arg_kinds):
            kind = arg_kinds[position]
        elif arg.arg in keyword_kinds:
            kind = keyword_kinds[arg.arg]
        elif star_kind is not None:
            kind = star_kind  # f(*parts), f(**table): any parameter may be an element
        elif index >= first_default:
            kind = default_kinds[index - first_default]
        elif default_kind == Kind.UNKNOWN and _annotation_is_number(arg.annotation):
            kind = Kind.SCALAR
        else:
            kind = default_kind
        walker.env[arg.arg] = kind
        passed = callable_args.get(position, callable_args.get(arg.arg))
        if passed is not None:
            walker.local_fns[arg.arg] = passed
            walker.env[arg.arg] = Kind.FUNCTION
    for arg, kw_default in zip(fn.args.kwonlyargs, kw_default_kinds):
        if arg.arg in keyword_kinds:
            walker.env[arg.arg] = keyword_kinds[arg.arg]
        elif star_kind is not None:
            walker.env[arg.arg] = star_kind
        elif kw_default is not None:
            walker.env[arg.arg] = kw_default
        else:
            number = default_kind == Kind.UNKNOWN and _annotation_is_number(arg.annotation)
            walker.env[arg.arg] = Kind.SCALAR if number else default_kind
        if arg.arg in callable_args:
            walker.local_fns[arg.arg] = callable_args[arg.arg]
            walker.env[arg.arg] = Kind.FUNCTION
    for extra in (fn.args.vararg, fn.args.kwarg):
        if extra is not None:
            walker.env[extra.arg] = Kind.TENSORS


def _annotation_is_number(annotation: ast.AST | None) -> bool:
    return isinstance(annotation, ast.Name) and annotation.id in ("int", "float", "bool", "str")
