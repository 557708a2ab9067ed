"""Forbidden names wherever the candidate mentions them: every attribute chain (whatever its
root: `torch.os`, `f().sys`, `triton.runtime.jit.knobs.os`), imported names, builtins that are
interpreter hooks, attribute names reached with getattr, hook keywords, special-method names
held in strings, and `triton.*` beyond the API a candidate uses (`triton-api`). The tables
are in `forbidden` and `allowed`."""

from __future__ import annotations

import ast
import functools
import importlib
import types

from kbot.evaluate.allowed import IMPLICIT_DUNDERS, TRITON_API, TRITON_DTYPES
from kbot.evaluate.forbidden import FORBIDDEN_DUNDERS, attribute_hit, forbidden
from kbot.evaluate.module_rules import kernel_names
from kbot.evaluate.names import ALLOWED_IMPORTS, Aliases, helper_aliases, is_getattr_literal
from kbot.evaluate.verdict import Reason


def triton_import_ok(module: str) -> bool:
    return (
        module in TRITON_API or module == "triton.language" or module.startswith("triton.language.")
    )


def _triton_allowed(dotted: str, in_kernel: bool) -> bool:
    """Whether a `triton.*` name may appear: the TRITON_API anywhere, all of triton.language
    inside kernels, its dtypes and constexpr elsewhere."""
    if dotted in TRITON_API:
        return True
    if dotted.startswith("triton.language."):
        return in_kernel or dotted[len("triton.language.") :] in TRITON_DTYPES
    return False


def triton_message(dotted: str) -> str:
    return (
        f"`{dotted}` is outside the triton API a candidate uses: triton.jit, triton.autotune, "
        "triton.heuristics, triton.Config, triton.cdiv, triton.next_power_of_2, and "
        "triton.language (its dtypes and constexpr outside kernels)"
    )


def _kernel_nodes(tree: ast.Module, aliases: Aliases) -> set[int]:
    """ids of every node inside a @triton.jit function (signature and body)."""
    kernels = kernel_names(tree, aliases)
    inside: set[int] = set()
    for fn in tree.body:
        if isinstance(fn, ast.FunctionDef) and fn.name in kernels:
            for part in [fn.args, *fn.body]:
                inside.update(id(n) for n in ast.walk(part))
    return inside


def check(tree: ast.Module, aliases: Aliases) -> list[Reason]:
    """Forbidden modules, builtins, dunders and hooks wherever they are mentioned: every
    attribute chain once (its outermost node), whatever its root."""
    reasons: list[Reason] = []
    in_kernel = _kernel_nodes(tree, aliases)
    bound = _bound_names(tree)
    main_guards = _main_guards(tree)
    called = {id(n.func) for n in ast.walk(tree) if isinstance(n, ast.Call)}
    # Where a module or a torch/triton function may stand: called, as a decorator, or as the
    # object of a getattr with a literal name (an attribute access written another way).
    direct = called | {
        id(d)
        for n in ast.walk(tree)
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
        for d in n.decorator_list
    }
    direct |= {
        id(n.args[0]) for n in ast.walk(tree) if isinstance(n, ast.Call) and is_getattr_literal(n)
    }
    direct |= helper_aliases(tree, aliases)
    inner: set[int] = set()
    for node in ast.walk(tree):  # breadth first: a chain's outermost node comes first
        if isinstance(node, ast.Attribute):
            if id(node) in inner:
                continue
            chain = [node.attr]
            value = node.value
            while isinstance(value, ast.Attribute):
                inner.add(id(value))
                chain.append(value.attr)
                value = value.value
            if isinstance(value, ast.Name) and value.id in aliases.names:
                inner.add(id(value))  # judged with the chain; other roots are judged alone
            reasons += _chain_reasons(node, chain, aliases, id(node) in in_kernel)
            if id(node) not in direct:
                reasons += _as_value(node, aliases.qualname(node))
        elif (
            isinstance(node, ast.Name)
            and node.id in _MODULE_IDENTITY
            and not isinstance(node.ctx, ast.Load)
        ):
            reasons.append(
                Reason(
                    "rebinding",
                    f"`{node.id}` is assigned: the module's identity decides what runs at import "
                    "(`if __name__ == '__main__':`); leave it as Python sets it",
                    node.lineno,
                )
            )
        elif (
            isinstance(node, ast.Name)
            and isinstance(node.ctx, ast.Load)
            and node.id in _MODULE_NAME_READS
            and id(node) not in main_guards
        ):
            reasons.append(
                Reason(
                    "introspection",
                    f"reads `{node.id}`: the module's name says where it was imported from, "
                    "which only a judge-detecting candidate needs (`if __name__ == "
                    "'__main__':` stays allowed)",
                    node.lineno,
                )
            )
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            if id(node) in inner:
                continue
            if node.id in aliases.names:
                dotted = aliases.names[node.id]
                hit = forbidden(dotted)
                if hit is not None:
                    reasons.append(Reason(hit[0], f"uses `{dotted}`: {hit[1]}", node.lineno))
                elif id(node) not in direct and _as_value(node, dotted):
                    reasons += _as_value(node, dotted)
                elif dotted.startswith("triton") and not _triton_allowed(
                    dotted, id(node) in in_kernel
                ):
                    reasons.append(Reason("triton-api", triton_message(dotted), node.lineno))
            elif node.id in _BUILTIN_HOOKS and (node.id != "input" or node.id not in bound):
                hit = forbidden(node.id)
                if hit is not None:
                    reasons.append(Reason(hit[0], f"uses `{node.id}`: {hit[1]}", node.lineno))
            elif node.id in FORBIDDEN_DUNDERS or node.id in _MODULE_DUNDERS:
                reasons.append(
                    Reason(
                        "introspection",
                        f"`{node.id}` reaches the module's loader or namespace",
                        node.lineno,
                    )
                )
            elif node.id in ("getattr", "hasattr") and id(node) not in called:
                reasons.append(
                    Reason(
                        "dynamic-import",
                        f"`{node.id}` passed as a value is an attribute access with a computed "
                        "name; write the attribute",
                        node.lineno,
                    )
                )
        elif isinstance(node, ast.Call):
            reasons += _call_reasons(node)
            reasons += _class_factory_reasons(node, aliases)
        elif isinstance(node, ast.MatchClass):
            reasons.append(
                Reason(
                    "dynamic-import",
                    "a `case Class(...)` pattern reads attributes by the names the class lists "
                    "(`__match_args__`); compare the values themselves",
                    node.lineno,
                )
            )
        elif isinstance(node, ast.keyword) and node.arg and "hook" in node.arg.lower():
            reasons.append(
                Reason(
                    "hooks",
                    f"`{node.arg}=`: hooks run code at times the static checks cannot see",
                    getattr(node, "lineno", None),
                )
            )
        elif isinstance(node, ast.Constant) and node.value in _SPECIAL_NAMES:
            reasons.append(
                Reason(
                    "introspection",
                    f"the string {node.value!r} names a special attribute; use no attribute "
                    "names as data",
                    node.lineno,
                )
            )
        elif isinstance(node, (ast.AsyncFunctionDef, ast.Await, ast.AsyncFor, ast.AsyncWith)):
            reasons.append(
                Reason("threads", "async code runs outside the timed stream", node.lineno)
            )
    return reasons


def _as_value(node: ast.expr, dotted: str | None) -> list[Reason]:
    """A module, or a torch/triton function, used as a value (stored, passed, put in a
    container, bound to another name): the checks follow calls written as calls, and such a
    value would be called where they cannot see it (`tt, ff = torch, F`, `map(F.silu, ...)`,
    `def f(x, act=torch.sigmoid)`)."""
    target = _resolve(dotted) if dotted else None
    if target is None:
        return []
    if isinstance(target, types.ModuleType):
        what = f"the module `{dotted}`"
    elif (
        callable(target)
        and not isinstance(target, type)
        and dotted.split(".")[0] in ("torch", "triton")
    ):
        what = f"the function `{dotted}`"
    else:
        return []
    return [
        Reason(
            "module-as-value",
            f"{what} is used as a value; call it or use its attributes where they are needed",
            node.lineno,
        )
    ]


@functools.lru_cache(maxsize=4096)
def _resolve(dotted: str) -> object | None:
    """The object a dotted name of an allowed import names, or None (not importable, or not
    resolvable without running more than imports and attribute lookups)."""
    parts = dotted.split(".")
    if parts[0] not in ALLOWED_IMPORTS:
        return None
    for cut in range(len(parts), 0, -1):
        try:
            target = importlib.import_module(".".join(parts[:cut]))
        except Exception:  # noqa: BLE001 - not a module at this length
            continue
        for attr in parts[cut:]:
            target = getattr(target, attr, None)
            if target is None:
                return None
        return target
    return None


def _chain_reasons(node: ast.Attribute, chain: list[str], aliases: Aliases, in_kernel: bool):
    dotted = aliases.qualname(node)
    hit = forbidden(dotted) if dotted is not None else None
    if hit is None:
        for attr in reversed(chain):  # from the root outwards: the first forbidden step
            hit = attribute_hit(attr)
            if hit is not None:
                break
    shown = dotted or ast.unparse(node)
    if hit is not None:
        return [Reason(hit[0], f"uses `{shown}`: {hit[1]}", node.lineno)]
    if (
        dotted is not None
        and dotted.startswith("triton")
        and not _triton_allowed(dotted, in_kernel)
    ):
        return [Reason("triton-api", triton_message(dotted), node.lineno)]
    return []


def _call_reasons(node: ast.Call) -> list[Reason]:
    func = node.func
    if not isinstance(func, ast.Name):
        return []
    if func.id in ("getattr", "hasattr", "setattr", "delattr"):
        if not is_getattr_literal(node) and len(node.args) >= 2:
            return [
                Reason(
                    "dynamic-import",
                    f"{func.id} with a computed name hides what is used; write the attribute",
                    node.lineno,
                )
            ]
        if len(node.args) >= 2 and isinstance(node.args[1], ast.Constant):
            hit = attribute_hit(str(node.args[1].value))
            if hit is not None:
                return [
                    Reason(hit[0], f"{func.id}(..., {node.args[1].value!r}): {hit[1]}", node.lineno)
                ]
    if func.id == "type" and len(node.args) == 3:
        return [
            Reason(
                "dynamic-import",
                "type(name, bases, dict) builds a class at run time; define it with `class`",
                node.lineno,
            )
        ]
    return []


# Functions that make a class from names given as values: with a computed name, a field
# of the class is an attribute set or read by a name no rule sees.
_CLASS_FACTORIES = frozenset(
    {"typing.NamedTuple", "collections.namedtuple", "typing.TypedDict", "enum.Enum",
     "enum.IntEnum", "dataclasses.make_dataclass", "types.new_class"}
)  # fmt: skip


def _class_factory_reasons(node: ast.Call, aliases: Aliases) -> list[Reason]:
    dotted = aliases.qualname(node.func)
    if dotted not in _CLASS_FACTORIES:
        return []
    if dotted not in ("dataclasses.make_dataclass", "types.new_class") and all(
        _literal(a) for a in [*node.args, *(k.value for k in node.keywords)]
    ):
        return []
    return [
        Reason(
            "dynamic-import",
            f"`{dotted}(...)` makes a class from computed names; define it with `class`",
            node.lineno,
        )
    ]


def _literal(node: ast.AST) -> bool:
    try:
        ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        # `[("x", int)]`: names literal, types plain names
        if isinstance(node, (ast.List, ast.Tuple)):
            return all(_literal_field(e) for e in node.elts)
        return False
    return True


def _literal_field(node: ast.AST) -> bool:
    if isinstance(node, (ast.Tuple, ast.List)) and len(node.elts) == 2:
        name, kind = node.elts
        return isinstance(name, ast.Constant) and isinstance(kind, (ast.Name, ast.Attribute))
    return _literal(node)


def _bound_names(tree: ast.AST) -> set[str]:
    """Every name the candidate binds itself (parameters, assignments, defs, imports): `input`
    bound so (`def forward(self, input)`) is the candidate's, not the builtin."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.arg):
            names.add(node.arg)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
    return names


# Builtins that are hooks into the interpreter; a plain `Name` of these is forbidden.
_BUILTIN_HOOKS = frozenset(
    "open input exec eval compile __import__ globals locals vars dir breakpoint setattr "
    "delattr __builtins__ __file__".split()
)
# Module globals that reach the import machinery (`__loader__.get_data(path)` reads files).
_MODULE_DUNDERS = frozenset({"__loader__", "__spec__", "__cached__", "__builtins__"})
# Module globals naming where the module was imported from; read only in `if __name__ ==
# "__main__":`.
_MODULE_NAME_READS = frozenset({"__name__", "__package__", "__qualname__", "__module__"})


def _main_guards(tree: ast.AST) -> set[int]:
    """The `__name__` of each `__name__ == "__main__"` comparison."""
    return {
        id(node.left)
        for node in ast.walk(tree)
        if isinstance(node, ast.Compare)
        and isinstance(node.left, ast.Name)
        and node.left.id == "__name__"
        and len(node.comparators) == 1
        and isinstance(node.comparators[0], ast.Constant)
        and node.comparators[0].value == "__main__"
    }


_MODULE_IDENTITY = frozenset(
    {"__name__", "__file__", "__package__", "__path__", "__qualname__", "__module__"}
)
# Special attribute names that a string may not hold (getattr/dict tricks build them).
_SPECIAL_NAMES = FORBIDDEN_DUNDERS | IMPLICIT_DUNDERS | {"__exit__", "__enter__"}
