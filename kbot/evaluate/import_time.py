"""The `import-time-code` rule: what a candidate runs when it is imported (module level, class
bodies, default values, decorator arguments) is limited to definitions and constants, so no
answer, file read or patch can be prepared before the evaluator's first call."""

from __future__ import annotations

import ast

from kbot.evaluate.allowed import IMPORT_TIME_CALLS, IMPORT_TIME_MODULES
from kbot.evaluate.forbidden import forbidden
from kbot.evaluate.names import Aliases
from kbot.evaluate.verdict import Reason

# Methods of the constants a module may hold (dicts, tuples, strings).
_CONSTANT_METHODS = frozenset(
    "items keys values get index count join format upper lower split strip replace "
    "startswith endswith".split()
)
_IMPORT_HINT = (
    "keep module level to imports, definitions and constants (numbers, strings, dtypes, "
    "tuples and dicts of them, math.* and triton.cdiv of numbers); build tensors in __init__"
)


def check(tree: ast.Module, aliases: Aliases) -> list[Reason]:
    defined = {n.name for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
    checker = _ImportTime(aliases, defined)
    for stmt in tree.body:
        checker.statement(stmt, where="module level")
    return checker.reasons


class _ImportTime:
    def __init__(self, aliases: Aliases, defined: set[str]) -> None:
        self.aliases = aliases
        self.defined = defined
        self.reasons: list[Reason] = []

    def reject(self, node: ast.AST, where: str) -> None:
        text = ast.unparse(node)
        text = text if len(text) <= 70 else text[:67] + "..."
        self.reasons.append(
            Reason(
                "import-time-code",
                f"`{text}` runs at import ({where}); {_IMPORT_HINT}",
                getattr(node, "lineno", None),
            )
        )

    def value(self, node: ast.AST | None, where: str, decorator: bool = False) -> None:
        bad = self.offender(node, decorator)
        if bad is not None:
            self.reject(bad, where)

    def statement(self, stmt: ast.stmt, where: str) -> None:
        if isinstance(stmt, (ast.Import, ast.ImportFrom, ast.Pass)):
            return
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
            return  # a docstring
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            self.function(stmt)
        elif isinstance(stmt, ast.ClassDef):
            self.decorators(stmt, f"the decorators of class {stmt.name}")
            for base in stmt.bases:
                self.value(base, "a class's bases")
            for child in stmt.body:
                self.statement(child, where=f"the body of class {stmt.name}")
        elif isinstance(stmt, (ast.Assign, ast.AugAssign)):
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            for target in targets:
                self.value(target, where)  # `f(...).x = v` calls f at import
            self.value(stmt.value, where)
        elif isinstance(stmt, ast.AnnAssign):
            self.value(stmt.annotation, where)
            self.value(stmt.value, where)
        elif isinstance(stmt, ast.If) and _is_main_guard(stmt.test):
            # Never runs: the evaluator imports the candidate under a module name of its own.
            for child in stmt.orelse:
                self.statement(child, where)
        elif isinstance(stmt, ast.If):
            self.value(stmt.test, where)
            for child in stmt.body + stmt.orelse:
                self.statement(child, where)
        elif isinstance(stmt, ast.Assert):
            self.value(stmt.test, where)
        else:
            self.reject(stmt, where)

    def decorators(self, node: ast.FunctionDef | ast.ClassDef, where: str) -> None:
        """Decorator arguments run at import; which decorators may be used is `decorators`."""
        for decorator in node.decorator_list:
            if isinstance(decorator, ast.Call):
                for argument in list(decorator.args) + [k.value for k in decorator.keywords]:
                    self.value(argument, where, decorator=True)

    def function(self, fn: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        where = f"the signature or decorators of {fn.name}"
        self.decorators(fn, where)
        args = fn.args
        for default in args.defaults + [d for d in args.kw_defaults if d is not None]:
            self.value(default, where)
        for arg in args.posonlyargs + args.args + args.kwonlyargs:
            self.value(arg.annotation, where)
        self.value(fn.returns, where)

    def offender(self, node: ast.AST | None, decorator: bool = False) -> ast.AST | None:
        """The first part of an expression evaluated at import that is not a constant."""
        if node is None or isinstance(node, (ast.Constant, ast.Name)):
            return None
        if isinstance(node, ast.Call):
            return self.call(node, decorator)
        if isinstance(node, ast.Lambda):
            return self.first(node.args.defaults + [d for d in node.args.kw_defaults if d])
        if isinstance(node, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
            parts = [node.key, node.value] if isinstance(node, ast.DictComp) else [node.elt]
            for generator in node.generators:
                parts += [generator.iter, *generator.ifs]
            return self.first(parts)
        if isinstance(node, (ast.NamedExpr, ast.Await, ast.Yield, ast.YieldFrom)):
            return node
        allowed = (
            ast.Attribute, ast.Tuple, ast.List, ast.Set, ast.Dict, ast.Starred, ast.BinOp,
            ast.UnaryOp, ast.BoolOp, ast.Compare, ast.IfExp, ast.Subscript, ast.Slice,
            ast.JoinedStr, ast.FormattedValue,
        )  # fmt: skip
        if isinstance(node, allowed):
            return self.first([c for c in ast.iter_child_nodes(node) if isinstance(c, ast.expr)])
        return node

    def first(self, nodes, decorator: bool = False) -> ast.AST | None:
        for child in nodes:
            bad = self.offender(child, decorator)
            if bad is not None:
                return bad
        return None

    def call(self, node: ast.Call, decorator: bool) -> ast.AST | None:
        dotted = self.aliases.qualname(node.func)
        if dotted is None and isinstance(node.func, ast.Name) and node.func.id not in self.defined:
            dotted = node.func.id if node.func.id not in self.aliases.names else None
        ok = dotted is not None and (
            dotted in IMPORT_TIME_CALLS
            or (dotted.startswith(IMPORT_TIME_MODULES) and forbidden(dotted) is None)
        )
        if dotted is None and isinstance(node.func, ast.Attribute):  # `_WARPS.items()`
            receiver = node.func.value
            ok = node.func.attr in _CONSTANT_METHODS and not (
                isinstance(receiver, ast.Name) and receiver.id in self.defined
            )
            if ok and self.offender(receiver) is not None:
                return self.offender(receiver)
        if not ok:
            return node
        arguments = list(node.args) + [k.value for k in node.keywords]
        for argument in arguments:
            if isinstance(argument, ast.Lambda) and not decorator:
                bad = self.offender(argument.body)  # called at import by the callee
                if bad is not None:
                    return bad
        return self.first(arguments, decorator)


def _is_main_guard(test: ast.expr) -> bool:
    """`if __name__ == "__main__":`"""
    return (
        isinstance(test, ast.Compare)
        and isinstance(test.left, ast.Name)
        and test.left.id == "__name__"
        and len(test.ops) == 1
        and isinstance(test.ops[0], ast.Eq)
        and isinstance(test.comparators[0], ast.Constant)
        and test.comparators[0].value == "__main__"
    )
