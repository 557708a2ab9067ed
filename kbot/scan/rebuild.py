"""A self-contained reference rebuilt from source, for targets that cannot be imported.

Copies the op (its class minus the device fast paths and dispatch, or its function minus
decorators) and what it reads from its module: imports of outside packages, constants,
helper functions, classes of that module (the op's own base classes among them). Anything else
(a relative import, a method of a base class from elsewhere, a class of the package) cannot be
copied faithfully, and the error says so instead of guessing.
"""

from __future__ import annotations

import ast
import builtins
from collections.abc import Iterable
from dataclasses import dataclass

from kbot.scan.config_args import is_dataclass
from kbot.scan.eager import strip_compile
from kbot.scan.facts import module_imports
from kbot.scan.findings import Finding

REFERENCE_CLASS = "_Reference"
_PROVIDED = {"torch", "nn"}  # the problem file imports these itself
_BUILTINS = set(dir(builtins)) | {"__file__", "__name__"}
# nn.Module methods an op may call on itself without defining them.
_MODULE_METHODS = {
    "register_buffer",
    "register_parameter",
    "register_module",
    "add_module",
    "parameters",
    "named_parameters",
    "buffers",
    "named_buffers",
    "modules",
    "children",
    "to",
    "float",
    "half",
    "train",
    "eval",
    "state_dict",
    "load_state_dict",
    "apply",
}


class RebuildError(Exception):
    """The reference cannot be copied out of its module; the message says why."""


@dataclass(frozen=True)
class Rebuilt:
    source: str  # imports, helpers, then `class _Reference` or the function
    callable_name: str  # "_Reference" for a class, the function's name otherwise


def rebuild_reference(
    module_source: str,
    finding: Finding,
    package_roots: set[str],
    compile_names: tuple[str, ...] = (),
) -> Rebuilt:
    """`package_roots`: top-level names of the scanned project's own packages, whose imports
    would need the project importable. `compile_names`: the project's own compile decorators;
    these and torch.compile's spellings are dropped, so the copy runs eagerly."""
    tree = ast.parse(module_source)
    imports = module_imports(tree)
    tree = ast.Module(
        body=[strip_compile(n, imports, compile_names) for n in tree.body], type_ignores=[]
    )
    defs = _ModuleDefs(tree, package_roots, finding.file)
    if not finding.entry:
        func = _find(tree, finding.qualname, (ast.FunctionDef, ast.AsyncFunctionDef))
        helpers = defs.resolve(free_names(func) - {func.name})
        return Rebuilt("\n\n".join([*helpers, _without_decorators(func)]) + "\n", func.name)
    cls = _find(tree, finding.qualname, ast.ClassDef)
    try:
        body, free = _class_source(cls, finding, defs, keep_bases=True)
        helpers = defs.resolve(free - {REFERENCE_CLASS})
    except RebuildError as exc:
        if not _local_bases(cls, defs):
            raise
        # A base that cannot be copied (it reads the package) is dropped, as for a base from
        # elsewhere; the smoke run then shows whether the op needed it.
        body, free = _class_source(cls, finding, defs, keep_bases=False, dropped_because=str(exc))
        helpers = defs.resolve(free - {REFERENCE_CLASS})
    return Rebuilt("\n\n".join([*helpers, body]) + "\n", REFERENCE_CLASS)


def _find(tree: ast.Module, qualname: str, kind) -> ast.AST:
    scope: list[ast.stmt] = tree.body
    node = None
    for part in qualname.split("."):
        # The last definition of the name: the one an import binds.
        node = next(
            (
                n
                for n in reversed(scope)
                if isinstance(n, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
                and n.name == part
            ),
            None,
        )
        if node is None:
            raise RebuildError(f"{qualname} is not defined at module level")
        scope = getattr(node, "body", [])
    if not isinstance(node, kind):
        raise RebuildError(f"{qualname} is not a {'class' if kind is ast.ClassDef else 'function'}")
    return node


def _without_decorators(func: ast.FunctionDef | ast.AsyncFunctionDef) -> str:
    copy = ast.parse(ast.unparse(func)).body[0]
    copy.decorator_list = []
    return ast.unparse(copy)


def _is_super_init(stmt: ast.stmt) -> bool:
    """`super().__init__(...)` or `Base.__init__(self, ...)`."""
    if not (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call)):
        return False
    func = stmt.value.func
    return isinstance(func, ast.Attribute) and func.attr == "__init__"


def _local_bases(cls: ast.ClassDef, defs: _ModuleDefs) -> list[ast.ClassDef]:
    """The classes of the op's own module that `cls` derives from, nearest first, each once
    (a module may rebind a class name to a class deriving from the name's previous class)."""
    out: list[ast.ClassDef] = []
    pending = [cls]
    while pending:
        for base in pending.pop(0).bases:
            node = defs.defs.get(base.id) if isinstance(base, ast.Name) else None
            if isinstance(node, ast.ClassDef) and node is not cls and node not in out:
                out.append(node)
                pending.append(node)
    return out


def _methods(cls: ast.ClassDef) -> dict[str, ast.FunctionDef | ast.AsyncFunctionDef]:
    return {n.name: n for n in cls.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}


def _class_source(
    cls: ast.ClassDef,
    finding: Finding,
    defs: _ModuleDefs,
    keep_bases: bool,
    dropped_because: str = "",
) -> tuple[str, set[str]]:
    methods = _methods(cls)
    # A base class of the same module (a rotary variant over its module's base rotary) is
    # copied whole, and the op's class keeps deriving from it: its __init__ sets state the op
    # reads, and its methods are the op's.
    local = _local_bases(cls, defs) if keep_bases else []
    inherited_methods = {name for base in local for name in _methods(base)}
    if finding.entry not in methods:
        raise RebuildError(
            f"{finding.qualname}.{finding.entry} is inherited; copy it into the class or make the module importable"
        )
    keep = [
        n
        for name, n in methods.items()
        if name == finding.entry or not (name.startswith("forward") or name == "__init__")
    ]
    called = {
        node.func.attr
        for method in keep
        for node in ast.walk(method)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id == "self"
    }
    assigned = _self_attributes(methods.values(), ast.Store)
    # `self.act(x)` where __init__ set `self.act = nn.GELU()` calls an attribute, not a method.
    inherited = sorted(called - set(methods) - inherited_methods - assigned - _MODULE_METHODS)
    if inherited:
        raise RebuildError(
            f"{finding.qualname} calls self.{inherited[0]}(), defined in a base class; "
            "make the module importable so the problem can import the op"
        )
    if not keep_bases:
        _refuse_state_of_dropped_bases(cls, finding, defs, keep, assigned, dropped_because)
    init = methods.get("__init__")
    bases = ", ".join(ast.unparse(b) for b in cls.bases) if local else "nn.Module"
    parts = [f"class {REFERENCE_CLASS}({bases}):"]
    free: set[str] = {ast.unparse(b).split(".")[0] for b in cls.bases} if local else set()
    if init is not None:
        copy = ast.parse(ast.unparse(init)).body[0]
        copy.decorator_list = []
        if not local:  # the base is dropped: only nn.Module's own __init__ is left to call
            copy.body = [ast.parse("super().__init__()").body[0]] + [
                s for s in copy.body if not _is_super_init(s)
            ]
        parts.append(_indent(ast.unparse(copy)))
        free |= free_names(init)
    elif not local:  # with a base of its module kept, the base's __init__ is inherited
        # the dropped base's arguments (OLMo's SwiGLU(config), its Activation base's) are taken
        # and left unused: the smoke run shows whether the op read what the base set
        parts.append(_indent("def __init__(self, *args, **kwargs):\n    super().__init__()"))
    for method in keep:
        if method.name == "__init__":
            continue
        parts.append(_indent(ast.unparse(method)))
        free |= free_names(method)
    # Class-level constants (`EPS = 1e-6`) are read as self.EPS: copy them too.
    for node in cls.body:
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            parts.insert(1, _indent(ast.unparse(node)))
            free |= free_names(node)
    # The config dataclass the constructor takes (`RoPE.Config`), which the problem builds.
    nested = {c.class_name for c in finding.init_configs if c.nested}
    free |= {c.class_name for c in finding.init_configs if c.class_name and not c.nested}
    for node in cls.body:
        if isinstance(node, ast.ClassDef) and node.name in nested:
            copy = defs.without_package_bases(node, fallback=None)
            parts.insert(1, _indent(ast.unparse(copy)))
            free |= free_names(copy) | _decorator_names(copy)
    return "\n\n".join(parts), free


def _refuse_state_of_dropped_bases(
    cls: ast.ClassDef,
    finding: Finding,
    defs: _ModuleDefs,
    keep: list[ast.FunctionDef | ast.AsyncFunctionDef],
    assigned: set[str],
    why: str,
) -> None:
    """A base of the op's module that could not be copied sets state the op reads (OLMo's
    RMSLayerNorm reads `self.eps`, which LayerNormBase.__init__ sets): the copy could not run,
    and the reason is the base, not the inputs."""
    read = _self_attributes(keep, ast.Load)
    for base in _local_bases(cls, defs):
        set_there = _self_attributes(_methods(base).values(), ast.Store)
        needed = sorted((read & set_there) - assigned)
        if needed:
            raise RebuildError(
                f"{finding.qualname} reads self.{needed[0]}, which its base class {base.name} "
                f"sets, and that base could not be copied ({why.split(': ', 1)[-1]}); make the "
                "module importable so the problem can import the op"
            )


def _self_attributes(functions: Iterable[ast.AST], context: type) -> set[str]:
    """The `self.<name>` the functions read (`ast.Load`) or set (`ast.Store`)."""
    return {
        node.attr
        for function in functions
        for node in ast.walk(function)
        if isinstance(node, ast.Attribute)
        and isinstance(node.ctx, context)
        and isinstance(node.value, ast.Name)
        and node.value.id == "self"
    }


def _indent(text: str) -> str:
    return "\n".join(("    " + line) if line else line for line in text.splitlines())


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


def _decorator_names(node: ast.AST) -> set[str]:
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


class _ModuleDefs:
    """The module's top-level definitions, and turning free names into copied source."""

    def __init__(self, tree: ast.Module, package_roots: set[str], file: str) -> None:
        self.file = file
        self.package_roots = package_roots
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
                pending.extend(sorted((free_names(node) | _decorator_names(node)) - done))
            else:
                text = (
                    _without_decorators(node)
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
            and not all(self._reachable(n) for n in free_names(node) | _decorator_names(node))
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
                    raise RebuildError(
                        f"{self.file}: the op uses `{name}` from its own package "
                        f"({'.' * node.level}{module}); make the package importable"
                    )
                return ast.unparse(ast.ImportFrom(module=module, names=[alias], level=0))
            if alias.name.split(".")[0] in self.package_roots:
                raise RebuildError(
                    f"{self.file}: the op uses its own package `{alias.name}`; make it importable"
                )
            return ast.unparse(ast.Import(names=[alias]))
        raise RebuildError(f"{self.file}: cannot find the import of `{name}`")
