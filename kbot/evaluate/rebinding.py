"""The `rebinding` rule: a name the checks judged keeps meaning that code. A @triton.jit kernel,
a class, a function, an import or a method of ModelNew bound a second time (`_kernel =
Wrapper(_kernel)`, `self.forward = ...`, `ModelNew.forward = ...`, a parameter named like the
kernel, `global torch`) would run code the checks never read."""

from __future__ import annotations

import ast
import builtins

from kbot.evaluate.allowed import NN_MODULE_MACHINERY
from kbot.evaluate.verdict import Reason


def check(tree: ast.Module, kernels: set[str]) -> list[Reason]:
    reasons: list[Reason] = []
    bound = _duplicates(tree.body, "module level", kernels, reasons)
    imported = {name for _, kind, name, _ in _scope_bindings(tree.body) if kind == "import"}
    classes = [n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)]
    for cls in classes:
        _duplicates(cls.body, f"class {cls.name}", kernels, reasons)
    reasons += _self_stores(classes)
    reasons += _stores(tree, bound - imported, classes)
    for node in ast.walk(tree):
        if isinstance(node, (ast.Global, ast.Nonlocal)):
            for name in node.names:
                if name in bound:
                    reasons.append(
                        Reason(
                            "rebinding",
                            f"`{type(node).__name__.lower()} {name}` lets a function rebind "
                            f"`{name}`, which the checks judged as defined",
                            node.lineno,
                        )
                    )
    reasons += _shadowing(tree, kernels, imported)
    return reasons


def _self_stores(classes: list[ast.ClassDef]) -> list[Reason]:
    """`self.forward = ...`: an instance attribute hides the method the evaluator calls."""
    reasons = []
    for cls in classes:
        methods = [n for n in cls.body if isinstance(n, ast.FunctionDef)]
        own = {m.name for m in methods} | NN_MODULE_MACHINERY
        for method in methods:
            for node in ast.walk(method):
                target = _stored(node)
                if (
                    isinstance(target, ast.Attribute)
                    and isinstance(target.value, ast.Name)
                    and target.value.id == "self"
                    and target.attr in own
                ):
                    reasons.append(
                        Reason(
                            "rebinding",
                            f"assigns `self.{target.attr}`, replacing the method the evaluator "
                            "calls; give the attribute another name",
                            node.lineno,
                        )
                    )
    return reasons


def _stores(tree: ast.Module, defined: set[str], classes: list[ast.ClassDef]) -> list[Reason]:
    """Attributes stored on the candidate's own functions, classes and kernels
    (`ModelNew.forward = ...`, `_kernel.run = ...`) or on what a call returns
    (`type(self).forward = ...`, `functools.reduce(getattr, ..., torch).Event = ...`)."""
    methods = {n.name for cls in classes for n in cls.body if isinstance(n, ast.FunctionDef)}
    guarded = methods | NN_MODULE_MACHINERY
    reasons = []
    for node in ast.walk(tree):
        target = _stored(node)
        if target is None:
            continue
        root = target
        while isinstance(root, (ast.Attribute, ast.Subscript)):
            root = root.value
        if isinstance(root, ast.Name) and root.id in defined:
            message = (
                f"assigns `{ast.unparse(target)}`, changing `{root.id}` (defined in the "
                "candidate) after the checks read it"
            )
            reasons.append(Reason("rebinding", message, node.lineno))
        elif isinstance(root, ast.Call) and isinstance(target, ast.Attribute):
            if target.attr in guarded:
                message = f"assigns `{ast.unparse(target)}`, replacing a method at run time"
                reasons.append(Reason("rebinding", message, node.lineno))
            else:
                message = (
                    f"assigns `{ast.unparse(target)}`, an attribute of an object a call "
                    "returns (a module or class reached indirectly); assign nothing but "
                    "local names and attributes of self"
                )
                reasons.append(Reason("module-patching", message, node.lineno))
    return reasons


def _shadowing(tree: ast.Module, kernels: set[str], imported: set[str]) -> list[Reason]:
    """Names the checks resolve at module level, bound again where they would mean something
    else: a builtin redefined at module level, a kernel or an import bound inside a function
    (a parameter, a local, a loop or comprehension variable)."""
    reasons = []
    for stmt, _, name, _ in _scope_bindings(tree.body):
        if hasattr(builtins, name) and not name.startswith("__"):
            reasons.append(
                Reason(
                    "rebinding",
                    f"`{name}` at module level shadows the builtin of that name, which the "
                    "checks take it for; choose another name",
                    stmt.lineno,
                )
            )
    for fn in (n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.Lambda))):
        for name, line in local_bindings(fn):
            if name in kernels:
                what = "the @triton.jit kernel of that name; launch the kernel itself"
            elif name in imported:
                what = f"the imported `{name}` the checks resolve it to; choose another name"
            else:
                continue
            reasons.append(
                Reason("rebinding", f"binds `{name}` inside a function, shadowing {what}", line)
            )
    return reasons


def _duplicates(body: list[ast.stmt], where: str, kernels: set[str], reasons) -> set[str]:
    """Names bound more than once in one scope where one binding is a def, class or import;
    returns the names of the defs, classes and imports."""
    bindings: dict[str, list[tuple[str, int, str]]] = {}
    for stmt, kind, name, detail in _scope_bindings(body):
        bindings.setdefault(name, []).append((kind, stmt.lineno, detail))
    defined = set()
    for name, found in bindings.items():
        kinds = {kind for kind, _, _ in found}
        if kinds & {"def", "class", "import"}:
            defined.add(name)
        if len(found) < 2 or not kinds & {"def", "class", "import"}:
            continue
        if kinds == {"import"} and len({detail for _, _, detail in found}) == 1:
            continue
        lines = ", ".join(str(line) for _, line, _ in found)
        what = "the @triton.jit kernel" if name in kernels else "the name"
        reasons.append(
            Reason(
                "rebinding",
                f"{what} `{name}` is bound more than once in {where} (lines {lines}): the "
                "checks judge one binding, Python runs the last; bind it once",
                found[-1][1],
            )
        )
    return defined


def _scope_bindings(body: list[ast.stmt]):
    for stmt in body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield stmt, "def", stmt.name, ""
        elif isinstance(stmt, ast.ClassDef):
            yield stmt, "class", stmt.name, ""
        elif isinstance(stmt, (ast.Import, ast.ImportFrom)):
            for alias in stmt.names:
                bound = alias.asname or alias.name.split(".")[0]
                module = getattr(stmt, "module", None)
                target = alias.name if isinstance(stmt, ast.Import) else f"{module}.{alias.name}"
                # `import torch` and `import torch.nn` both bind the module `torch`.
                yield stmt, "import", bound, target if alias.asname else bound
        elif isinstance(stmt, ast.If):
            yield from _scope_bindings(stmt.body + stmt.orelse)
        else:
            targets: list[ast.AST] = []
            if isinstance(stmt, (ast.Assign, ast.Delete)):
                targets = list(stmt.targets)
            elif isinstance(stmt, ast.AugAssign) or (
                isinstance(stmt, ast.AnnAssign) and stmt.value is not None
            ):
                targets = [stmt.target]
            elif isinstance(stmt, (ast.For, ast.With)):
                targets = [stmt.target] if isinstance(stmt, ast.For) else []
                targets += [i.optional_vars for i in getattr(stmt, "items", []) if i.optional_vars]
            for target in targets:
                for sub in ast.walk(target):
                    if isinstance(sub, ast.Name) and isinstance(sub.ctx, (ast.Store, ast.Del)):
                        yield stmt, "assign", sub.id, ""
            # Names bound inside the statement in this same scope: an assignment expression
            # (`_ = (forward := other)` in a class body), a `match` capture.
            for name in _inner_bindings(stmt):
                yield stmt, "assign", name, ""


def _inner_bindings(stmt: ast.stmt):
    """Walrus targets and `match` captures anywhere in `stmt`, not inside a nested def, class
    or lambda (a walrus in a comprehension binds in the enclosing scope)."""
    pending: list[ast.AST] = [stmt]
    while pending:
        node = pending.pop()
        if isinstance(node, ast.NamedExpr) and isinstance(node.target, ast.Name):
            yield node.target.id
        elif isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name:
            yield node.name
        elif isinstance(node, ast.MatchMapping) and node.rest:
            yield node.rest
        for child in ast.iter_child_nodes(node):
            if not isinstance(
                child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)
            ):
                pending.append(child)


def local_bindings(fn: ast.FunctionDef | ast.Lambda):
    """(name, line) of every name a function binds locally: parameters, assignment, loop,
    with and comprehension targets, local defs and classes, imports."""
    args = fn.args
    for arg in args.posonlyargs + args.args + args.kwonlyargs + [args.vararg, args.kwarg]:
        if arg is not None:
            yield arg.arg, fn.lineno
    body = fn.body if isinstance(fn.body, list) else [fn.body]
    for top in body:
        for node in ast.walk(top):
            if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
                yield node.id, node.lineno
            elif isinstance(node, (ast.FunctionDef, ast.ClassDef)) and node is not fn:
                yield node.name, node.lineno
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                for alias in node.names:
                    yield alias.asname or alias.name.split(".")[0], node.lineno


def _stored(node: ast.AST) -> ast.Attribute | ast.Subscript | None:
    """An attribute or item that is assigned or deleted."""
    if isinstance(node, (ast.Attribute, ast.Subscript)) and isinstance(
        node.ctx, (ast.Store, ast.Del)
    ):
        return node
    return None
