"""Resolving names in a candidate's AST to dotted module paths (`Aliases`), the imports a
candidate may make and the low-precision dtype names. What the rules forbid is in `forbidden`;
the rules live in `static.py`, `module_rules.py` and `forward_path.py`."""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

# Modules a candidate may import (and their submodules, minus what `forbidden` rejects). The
# candidate convention is `torch`, `triton`, `triton.language`; the small stdlib helpers are
# for constants and type hints.
ALLOWED_IMPORTS = (
    "torch",
    "triton",
    "math",
    "typing",
    "functools",
    "itertools",
    "operator",
    "dataclasses",
    "enum",
    "__future__",
)

LOW_PRECISION_DTYPES = frozenset(
    {
        "float16",
        "half",
        "bfloat16",
        "float8e4nv",
        "float8e5",
        "float8e4b15",
        "float8e4b8",
        "float8e5b16",
        "float8_e4m3fn",
        "float8_e5m2",
        "float8_e4m3fnuz",
        "float8_e5m2fnuz",
    }
)
LOW_PRECISION_METHODS = frozenset({"half", "bfloat16"})


@dataclass
class Aliases:
    """Local names bound to modules or imported objects: `F` -> `torch.nn.functional`."""

    names: dict[str, str] = field(default_factory=dict)

    @classmethod
    def of(cls, tree: ast.AST) -> Aliases:
        aliases = cls()
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.asname:
                        aliases.names[alias.asname] = alias.name
                    else:
                        root = alias.name.split(".")[0]
                        aliases.names[root] = root
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                for alias in node.names:
                    aliases.names[alias.asname or alias.name] = f"{node.module}.{alias.name}"
        # `cuda = torch.cuda` makes `cuda` an alias too; two passes reach chains of two.
        for _ in range(2):
            for node in ast.walk(tree):
                if isinstance(node, ast.Assign) and len(node.targets) == 1:
                    target = node.targets[0]
                    if isinstance(target, ast.Name) and target.id not in aliases.names:
                        dotted = aliases.qualname(node.value)
                        if dotted is not None:
                            aliases.names[target.id] = dotted
        return aliases

    def qualname(self, node: ast.AST) -> str | None:
        """`F.silu` -> `torch.nn.functional.silu`; None when not rooted at an import alias."""
        parts: list[str] = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if isinstance(node, ast.Call) and _is_getattr_literal(node):
            inner = self.qualname(node.args[0])
            if inner is None:
                return None
            return ".".join([inner, node.args[1].value, *reversed(parts)])
        if not isinstance(node, ast.Name) or node.id not in self.names:
            return None
        return ".".join([self.names[node.id], *reversed(parts)])


def _is_getattr_literal(node: ast.Call) -> bool:
    return (
        isinstance(node.func, ast.Name)
        and node.func.id == "getattr"
        and len(node.args) >= 2
        and isinstance(node.args[1], ast.Constant)
        and isinstance(node.args[1].value, str)
    )


def is_getattr_literal(node: ast.Call) -> bool:
    return _is_getattr_literal(node)


# Triton's host helpers a module may name once at its top (`next_power_of_2 =
# triton.next_power_of_2`, as unsloth writes it): plain integer functions, computing nothing.
_HELPER_FUNCTIONS = frozenset({"triton.cdiv", "triton.next_power_of_2"})


def helper_aliases(tree: ast.Module, aliases: Aliases) -> set[int]:
    """ids of the values of top-level `name = triton.cdiv` / `triton.next_power_of_2`
    assignments whose name the module binds nowhere else: `Aliases` then resolves each use
    of the name to the helper, which a second binding (flow-insensitive) would make a lie."""
    bindings: dict[str, int] = {}
    for node in ast.walk(tree):
        for name in _binds(node):
            bindings[name] = bindings.get(name, 0) + 1
    found = set()
    for node in tree.body:
        if (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
            and bindings.get(node.targets[0].id) == 1
            and aliases.qualname(node.value) in _HELPER_FUNCTIONS
        ):
            found.add(id(node.value))
    return found


def _binds(node: ast.AST) -> list[str]:
    """The names `node` binds or declares, in any scope."""
    if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
        return [node.id]
    if isinstance(node, ast.arg):
        return [node.arg]
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [node.name]
    if isinstance(node, ast.alias):
        return [node.asname or node.name.split(".")[0]]
    if isinstance(node, (ast.Global, ast.Nonlocal)):
        return list(node.names)
    if isinstance(node, ast.ExceptHandler) and node.name:
        return [node.name]
    if isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name:
        return [node.name]
    if isinstance(node, ast.MatchMapping) and node.rest:
        return [node.rest]
    return []


def parent_map(tree: ast.AST) -> dict[int, ast.AST]:
    """Each node's parent, by the child's id (the static rules that judge a node by its use)."""
    return {id(child): node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
