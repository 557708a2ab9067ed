"""A module's top-level definitions, read as source, and what copying one of them out needs: the
names it reads, the imports and helpers those resolve to (kbot.scan.rebuild's reference copies).
"""

from __future__ import annotations

import ast
import builtins

from kbot.scan.config_args import is_dataclass

_PROVIDED = {"torch", "nn"}  # the problem file imports these itself
_BUILTINS = set(dir(builtins)) | {"__file__", "__name__"}


class RebuildError(Exception):
    """The reference cannot be copied out of its module; the message says why."""


def without_decorators(func: ast.FunctionDef | ast.AsyncFunctionDef) -> str:
    copy = ast.parse(ast.unparse(func)).body[0]
    copy.decorator_list = []
    return ast.unparse(copy)


def _walk_code(node: ast.AST):
    """ast.walk without annotations and decorators: those are dropped or never evaluated."""
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        for name, value in ast.iter_fields(current):
            if name in ("annotation", "returns", "decorator_list"):
                continue
            children = value if isinstance(value, list) else [value]
            stack.extend(c for c in children if isinstance(c, ast.AST))


def decorator_names(node: ast.AST) -> set[str]:
    """Names the decorators inside a copied class read (`functools.lru_cache`, a property)."""
    return {
        child.id
        for inner in ast.walk(node)
        for decorator in getattr(inner, "decorator_list", [])
        for child in ast.walk(decorator)
        if isinstance(child, ast.Name) and isinstance(child.ctx, ast.Load)
    } - _BUILTINS


def free_names(node: ast.AST) -> set[str]:
    """Names a definition reads but does not bind itself (builtins excluded)."""
    loaded: set[str] = set()
    bound: set[str] = set()
    for child in _walk_code(node):
        if isinstance(child, ast.Name):
            (loaded if isinstance(child.ctx, ast.Load) else bound).add(child.id)
        elif isinstance(child, ast.arg):
            bound.add(child.arg)
        elif (
            isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
            and child is not node
        ):
            bound.add(child.name)
        elif isinstance(child, ast.alias):
            bound.add((child.asname or child.name).split(".")[0])
        elif isinstance(child, ast.ExceptHandler) and child.name:
            bound.add(child.name)
    return loaded - bound - _BUILTINS


class ModuleDefs:
    """The module's top-level definitions, and turning free names into copied source."""

    def __init__(
        self, tree: ast.Module, package_roots: set[str], file: str, module: str = ""
    ) -> None:
        """`module`: the file's dotted module name where it is known (the problem then puts the
        folder it imports from on sys.path, and a name the op uses from its own package is
        imported from there); without it such a name is refused."""
        self.file = file
        self.module = module
        self.package_roots = package_roots | ({module.split(".")[0]} if module else set())
        self.defs: dict[str, ast.stmt] = {}
        for node in tree.body:
            self._add(node)

    def _add(self, node: ast.stmt) -> None:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            self.defs[node.name] = node
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                self.defs[(alias.asname or alias.name).split(".")[0]] = node
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                for name in ast.walk(target):
                    if isinstance(name, ast.Name):
                        self.defs[name.id] = node
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value:
            self.defs[node.target.id] = node
        elif isinstance(node, (ast.If, ast.Try)):
            for child in [*node.body, *node.orelse]:
                self._add(child)

    def resolve(self, names: set[str]) -> list[str]:
        out: list[str] = []
        done: set[str] = set()
        pending = sorted(names)
        while pending:
            name = pending.pop()
            if name in done:
                continue
            done.add(name)
            node = self.defs.get(name)
            if node is None and name in _PROVIDED:
                continue
            if node is None:
                raise RebuildError(
                    f"{self.file}: the op reads `{name}`, which is not defined in its module"
                )
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                out.insert(0, self._import_line(node, name))
            elif isinstance(node, ast.ClassDef):
                if node.decorator_list and not is_dataclass(node):
                    raise RebuildError(
                        f"{self.file}: the op uses class `{name}` of its module, which is "
                        "decorated; make the module importable"
                    )
                node = self._without_unreachable_methods(self.without_package_bases(node))
                out.append(ast.unparse(node))
                pending.extend(sorted((free_names(node) | decorator_names(node)) - done))
            else:
                text = (
                    without_decorators(node)
                    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
                    else ast.unparse(node)
                )
                out.append(text)
                pending.extend(sorted(free_names(node) - done))
        # Imports first, then definitions in dependency order (dependencies were appended later).
        imports = [t for t in out if t.startswith(("import ", "from "))]
        rest = [t for t in out if t not in imports]
        return list(dict.fromkeys(imports)) + list(reversed(rest))

    def _without_unreachable_methods(self, cls: ast.ClassDef) -> ast.ClassDef:
        """A copy of `cls` without the methods besides __init__ that read a name this module
        cannot give (OLMo's LayerNormBase.build, a factory over its package's config enums):
        the op's own methods are copied apart, and one that calls a dropped method fails its
        first-cases run, which names it."""
        dropped = [
            node
            for node in cls.body
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
            and node.name != "__init__"
            and not all(self._reachable(n) for n in free_names(node) | decorator_names(node))
        ]
        if not dropped:
            return cls
        copy = ast.parse(ast.unparse(cls)).body[0]
        names = {d.name for d in dropped}
        copy.body = [
            n
            for n in copy.body
            if not (isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name in names)
        ] or [ast.Pass()]
        return copy

    def _reachable(self, name: str) -> bool:
        if name in _PROVIDED:
            return True
        node = self.defs.get(name)
        if node is None:
            return False
        return not (isinstance(node, (ast.Import, ast.ImportFrom)) and self._from_package(name))

    def without_package_bases(
        self, cls: ast.ClassDef, fallback: str | None = "nn.Module"
    ) -> ast.ClassDef:
        """A copy of `cls` without the bases it cannot reach: an interface imported from the
        project's own package (`Impl`, or `Module.Config` through it), or the earlier class its
        name rebinds (lmdeploy's `class Impl(Impl, nn.Module)` over the package's abstract
        Impl). Its own __init__ and methods, which set the state a subclass reads, are kept;
        the first-cases run then shows whether the op needed what was dropped. With no base
        left it derives from `fallback` (nothing for None)."""
        kept = [
            base
            for base in cls.bases
            if not (
                (isinstance(base, ast.Name) and base.id == cls.name)
                or self._from_package(ast.unparse(base).split(".")[0])
            )
        ]
        if len(kept) == len(cls.bases):
            return cls
        copy = ast.parse(ast.unparse(cls)).body[0]
        copy.bases = kept or ([ast.parse(fallback, mode="eval").body] if fallback else [])
        return copy

    def _absolute(self, level: int, module: str, name: str) -> str:
        """The absolute name of a module of the project's own package that the op's module
        imports `name` from (`level` dots before `module`)."""
        if not self.module:
            raise RebuildError(
                f"{self.file}: the op uses `{name}` from its own package "
                f"({'.' * level}{module}); make the package importable"
            )
        if not level:
            return module
        package = self.module.split(".")
        package = package if self.file.endswith("__init__.py") else package[:-1]
        if level - 1 >= len(package):
            raise RebuildError(f"{self.file}: `{'.' * level}{module}` reaches above its package")
        base = package[: len(package) - (level - 1)]
        return ".".join([*base, module] if module else base)

    def _from_package(self, name: str) -> bool:
        node = self.defs.get(name)
        if isinstance(node, ast.ImportFrom):
            return bool(node.level) or (node.module or "").split(".")[0] in self.package_roots
        if isinstance(node, ast.Import):
            return any(
                (a.asname or a.name).split(".")[0] == name
                and a.name.split(".")[0] in self.package_roots
                for a in node.names
            )
        return False

    def _import_line(self, node: ast.Import | ast.ImportFrom, name: str) -> str:
        for alias in node.names:
            if (alias.asname or alias.name).split(".")[0] != name:
                continue
            if isinstance(node, ast.ImportFrom):
                module = node.module or ""
                if node.level or module.split(".")[0] in self.package_roots:
                    module = self._absolute(node.level, module, name)
                return ast.unparse(ast.ImportFrom(module=module, names=[alias], level=0))
            if alias.name.split(".")[0] in self.package_roots and not self.module:
                raise RebuildError(
                    f"{self.file}: the op uses its own package `{alias.name}`; make it importable"
                )
            return ast.unparse(ast.Import(names=[alias]))
        raise RebuildError(f"{self.file}: cannot find the import of `{name}`")
