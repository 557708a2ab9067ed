"""A self-contained reference rebuilt from source, for targets that cannot be imported.

Copies the op (its class minus the device fast paths and dispatch, or its function minus
decorators) and what it reads from its module: imports of outside packages, constants,
helper functions, classes of that module (the op's own base classes among them). Anything else
(a relative import, a method of a base class from elsewhere, a class of the package) cannot be
copied faithfully, and the error says so instead of guessing.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from dataclasses import dataclass

from kbot.scan.eager import strip_compile
from kbot.scan.facts import module_imports
from kbot.scan.findings import Finding
from kbot.scan.module_defs import (
    ModuleDefs,
    RebuildError,
    decorator_names,
    free_names,
    without_decorators,
)

REFERENCE_CLASS = "_Reference"
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


@dataclass(frozen=True)
class Rebuilt:
    source: str  # imports, helpers, then `class _Reference` or the function
    callable_name: str  # "_Reference" for a class, the function's name otherwise
    packages: tuple[str, ...] = ()  # the project's own packages the copy imports


def rebuild_reference(
    module_source: str,
    finding: Finding,
    package_roots: set[str],
    compile_names: tuple[str, ...] = (),
    module: str = "",
) -> Rebuilt:
    """`package_roots`: top-level names of the scanned project's own packages, whose imports
    need the project importable: with `module` (the op's dotted module name) the copy imports
    them from the checkout (`Rebuilt.packages`), without it they are refused. `compile_names`:
    the project's own compile decorators; these and torch.compile's spellings are dropped, so
    the copy runs eagerly."""
    tree = ast.parse(module_source)
    imports = module_imports(tree)
    tree = ast.Module(
        body=[strip_compile(n, imports, compile_names) for n in tree.body], type_ignores=[]
    )
    defs = ModuleDefs(tree, package_roots, finding.file, module)
    if not finding.entry:
        func = _find(tree, finding.qualname, (ast.FunctionDef, ast.AsyncFunctionDef))
        helpers = defs.resolve(free_names(func) - {func.name})
        source = "\n\n".join([*helpers, without_decorators(func)]) + "\n"
        return Rebuilt(source, func.name, _imported_packages(source, defs.package_roots))
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
    source = "\n\n".join([*helpers, body]) + "\n"
    return Rebuilt(source, REFERENCE_CLASS, _imported_packages(source, defs.package_roots))


def _imported_packages(source: str, package_roots: set[str]) -> tuple[str, ...]:
    """The project's own packages (`package_roots`) that `source` imports, in order."""
    found: dict[str, None] = {}
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            names = [node.module]
        else:
            continue
        for name in names:
            if name.split(".")[0] in package_roots:
                found.setdefault(name.split(".")[0], None)
    return tuple(found)


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


def _is_super_init(stmt: ast.stmt) -> bool:
    """`super().__init__(...)` or `Base.__init__(self, ...)`."""
    if not (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call)):
        return False
    func = stmt.value.func
    return isinstance(func, ast.Attribute) and func.attr == "__init__"


def _local_bases(cls: ast.ClassDef, defs: ModuleDefs) -> list[ast.ClassDef]:
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
    defs: ModuleDefs,
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
            free |= free_names(copy) | decorator_names(copy)
    return "\n\n".join(parts), free


def _refuse_state_of_dropped_bases(
    cls: ast.ClassDef,
    finding: Finding,
    defs: ModuleDefs,
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
