"""One pass over a parsed file: its classes, functions, imports and `# kbot: optimize` markers.

The patterns (kbot.scan.patterns) then work on these facts across the whole tree, so a class
whose base lives in another file is still recognised.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field

from kbot.scan.walk import ParsedFile

_MARKER = re.compile(r"#\s*kbot:\s*optimize\b", re.IGNORECASE)

FunctionNode = ast.FunctionDef | ast.AsyncFunctionDef

# What compiles a function when it decorates or wraps it, by its resolved dotted name.
# `torch.jit.script` too: older serving and training code (text-generation-inference,
# nanotron, Megatron-style fused ops) marks its hot functions for TorchScript's fuser.
COMPILE_FUNCTIONS = (
    "torch.compile",
    "torch.compiler.compile",
    "torch._dynamo.optimize",
    "torch.jit.script",
)


@dataclass(eq=False)
class FunctionInfo:
    qualname: str  # "fused_add", "RMSNorm.forward_native", "outer.<locals>.inner" is not kept
    node: FunctionNode
    class_qualname: str | None  # the enclosing class, for methods
    compile_decorator: str | None = None  # the decorator spelling that compiles it, as written
    marked: bool = False


@dataclass(eq=False)
class ClassInfo:
    qualname: str
    name: str
    node: ast.ClassDef
    bases: tuple[str, ...]  # last dotted component of each base: "CustomOp", "Module"
    methods: dict[str, FunctionNode] = field(default_factory=dict)
    aliases: dict[str, str] = field(default_factory=dict)  # `forward_cuda = forward_native`
    marked: bool = False


@dataclass(eq=False)
class FileFacts:
    file: ParsedFile
    imports: dict[str, str]  # local name -> dotted origin ("tc" -> "torch.compile")
    classes: list[ClassInfo]
    functions: list[FunctionInfo]


def dotted_name(node: ast.AST) -> str | None:
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


def resolve_alias(name: str, imports: dict[str, str]) -> str:
    """`tc` -> `torch.compile` when the file did `from torch import compile as tc`."""
    head, _, rest = name.partition(".")
    origin = imports.get(head)
    if origin is None:
        return name
    return f"{origin}.{rest}" if rest else origin


def compile_spelling(
    decorator: ast.expr, imports: dict[str, str], extra_names: tuple[str, ...]
) -> str | None:
    """The decorator as written when it compiles the function, else None.

    Recognises `torch.compile`, `torch.compiler.compile`, `torch._dynamo.optimize`, called or
    not, imported aliases of them, and any name in `extra_names` (a project's own wrapper such
    as `safe_torch_compile`).
    """
    target = decorator.func if isinstance(decorator, ast.Call) else decorator
    name = dotted_name(target)
    if name is None:
        return None
    resolved = resolve_alias(name, imports)
    last = resolved.rsplit(".", 1)[-1]
    if resolved in COMPILE_FUNCTIONS or (
        extra_names and (name in extra_names or resolved in extra_names or last in extra_names)
    ):
        return "@" + ast.unparse(decorator)
    return None


def _marker_lines(source: str) -> list[int]:
    if "kbot" not in source:
        return []
    return [i for i, text in enumerate(source.splitlines(), 1) if _MARKER.search(text)]


def _is_marked(node: ast.AST, markers: list[int], lines: list[str]) -> bool:
    """A marker counts on the def/class line, on a decorator line, or on the comment lines
    directly above (blank lines and other comments may sit between)."""
    if not markers:
        return False
    decorators = getattr(node, "decorator_list", [])
    start = min([d.lineno for d in decorators] + [node.lineno])
    for line in markers:
        if start <= line <= node.lineno:
            return True
        if line < start and all(
            not lines[i - 1].strip() or lines[i - 1].lstrip().startswith("#")
            for i in range(line + 1, start)
        ):
            return True
    return False


def module_imports(tree: ast.Module) -> dict[str, str]:
    """Local name -> dotted origin of the module-level imports (also under `if`/`try`):
    walking every node of every file for function-local imports doubled the scan time of
    large trees."""
    imports: dict[str, str] = {}
    pending = list(tree.body)
    while pending:
        node = pending.pop()
        if isinstance(node, (ast.If, ast.Try)):
            pending.extend(child for branch in _branches(node) for child in branch)
        else:
            add_import(imports, node)
    return imports


def add_import(imports: dict[str, str], node: ast.AST, relative: bool = False) -> None:
    """The names one import statement binds, with their dotted origins, into `imports` (other
    nodes add nothing). A relative import (`from .kernels import rms_norm`) only with
    `relative`, its origin keeping its dots (`.kernels.rms_norm`)."""
    if isinstance(node, ast.Import):
        for alias in node.names:
            if alias.asname:
                imports[alias.asname] = alias.name
            else:
                imports.setdefault(alias.name.split(".")[0], alias.name.split(".")[0])
    elif isinstance(node, ast.ImportFrom) and (node.level == 0 and node.module or relative):
        module = "." * node.level + (node.module or "")
        for alias in node.names:
            imports[alias.asname or alias.name] = f"{module}.{alias.name}"


def collect_facts(parsed: ParsedFile, compile_names: tuple[str, ...]) -> FileFacts:
    imports = module_imports(parsed.tree)
    classes: list[ClassInfo] = []
    functions: list[FunctionInfo] = []
    markers = _marker_lines(parsed.source)
    lines = parsed.source.splitlines() if markers else []

    def visit(body: list[ast.stmt], prefix: str, class_qualname: str | None) -> None:
        for node in body:
            if isinstance(node, ast.ClassDef):
                qualname = prefix + node.name
                bases = tuple(
                    (dotted_name(b) or "").rsplit(".", 1)[-1] for b in node.bases if dotted_name(b)
                )
                info = ClassInfo(qualname, node.name, node, bases)
                info.marked = _is_marked(node, markers, lines)
                for item in node.body:
                    if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                        info.methods[item.name] = item
                    elif (
                        isinstance(item, ast.Assign)
                        and isinstance(item.value, ast.Name)
                        and all(isinstance(t, ast.Name) for t in item.targets)
                    ):
                        for target in item.targets:
                            info.aliases[target.id] = item.value.id
                classes.append(info)
                visit(node.body, qualname + ".", qualname)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                spelling = None
                for decorator in node.decorator_list:
                    spelling = spelling or compile_spelling(decorator, imports, compile_names)
                functions.append(
                    FunctionInfo(
                        prefix + node.name,
                        node,
                        class_qualname,
                        spelling,
                        _is_marked(node, markers, lines),
                    )
                )
            elif isinstance(node, (ast.If, ast.Try)) and class_qualname is None:
                # Definitions guarded by `if HAS_TRITON:` / `try:` are still module level.
                for branch in _branches(node):
                    visit(branch, prefix, None)

    visit(parsed.tree.body, "", None)
    _mark_compiled_by_call(parsed.tree, imports, compile_names, functions)
    return FileFacts(parsed, imports, classes, functions)


def _branches(node: ast.If | ast.Try) -> list[list[ast.stmt]]:
    if isinstance(node, ast.If):
        return [node.body, node.orelse]
    return [node.body, node.orelse, node.finalbody, *[h.body for h in node.handlers]]


def _mark_compiled_by_call(
    tree: ast.Module,
    imports: dict[str, str],
    compile_names: tuple[str, ...],
    functions: list[FunctionInfo],
) -> None:
    """`fast_fn = torch.compile(fn)` at module level compiles `fn` just like a decorator."""
    by_name = {f.qualname: f for f in functions if f.class_qualname is None}
    for node in tree.body:
        if not (isinstance(node, ast.Assign) and isinstance(node.value, ast.Call)):
            continue
        call = node.value
        if call.args and isinstance(call.args[0], ast.Name) and call.args[0].id in by_name:
            probe = ast.Call(func=call.func, args=[], keywords=call.keywords)
            spelling = compile_spelling(probe, imports, compile_names)
            info = by_name[call.args[0].id]
            if spelling and info.compile_decorator is None:
                info.compile_decorator = ast.unparse(call)
