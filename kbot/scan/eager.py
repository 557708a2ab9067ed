"""Undoing `torch.compile` (and `torch.jit.script`) in a problem's reference, so the reference
runs eagerly.

kbot measures `torch.compile` of the whole `Model` as its baseline, and the codegen proposer
traces the reference with `make_fx`, which refuses a function Dynamo already optimized. Serving
engines mark their hot ops with `@torch.compile` (on functions, methods and `forward`s, through
aliases and their own wrappers), so an extracted problem undoes every such wrapper it reaches:

- an imported op (`IMPORTED_HELPERS`, text pasted into the problem): compiled methods of the
  class and its bases are bound to the functions they wrap on the problem's own subclass, and
  compiled functions of the op's modules (the helpers its methods call by name) are replaced in
  those modules by theirs. Dynamo keeps what it wraps as `_torchdynamo_orig_callable`, so this
  finds compiled callables whatever decorator spelling made them;
- a rebuilt op (`strip_compile`, on the copied source): the compile decorators come off, and
  `fast = torch.compile(fn)` becomes `fast = fn`.
"""

from __future__ import annotations

import ast

from kbot.scan.facts import compile_spelling

# Pasted into import-mode problems after `_Target` is imported; self-contained on purpose.
IMPORTED_HELPERS = '''
# The reference runs eagerly: kbot's baseline is torch.compile of this whole Model, and the
# codegen traces the reference, which Dynamo-optimized functions refuse.
def _eager(value):
    """What torch.compile wrapped (Dynamo keeps it as _torchdynamo_orig_callable), or the
    Python function torch.jit.script compiled (kept as _torchdynamo_inline), else value."""
    if isinstance(value, torch.jit.ScriptFunction):
        return getattr(value, "_torchdynamo_inline", value)
    inner = getattr(value, "__func__", value)  # staticmethod, classmethod, bound method
    if not hasattr(inner, "_torchdynamo_orig_callable"):
        compiled_module = isinstance(value, nn.Module) and hasattr(value, "_orig_mod")
        return value._orig_mod if compiled_module else value
    while hasattr(inner, "_torchdynamo_orig_callable"):
        inner = inner._torchdynamo_orig_callable
    if isinstance(value, (staticmethod, classmethod)):
        return type(value)(inner)
    if isinstance(value, types.MethodType):
        return types.MethodType(inner, value.__self__)
    return inner


def _eager_modules(*owners):
    """Compiled functions of the owners' modules, replaced there by the functions they wrap."""
    for owner in owners:
        module = sys.modules.get(getattr(owner, "__module__", None) or "")
        if module is None or module.__name__.partition(".")[0] in ("torch", "builtins"):
            continue
        for name, value in list(vars(module).items()):
            scripted = isinstance(value, torch.jit.ScriptFunction)
            if (scripted or isinstance(value, types.FunctionType)) and _eager(value) is not value:
                setattr(module, name, _eager(value))


def _eager_class(base, cls):
    """Compiled methods `cls` resolves (its own or its bases'), bound eagerly on `base`."""
    for name in dir(cls):
        value = inspect.getattr_static(cls, name, None)
        if _eager(value) is not value:
            setattr(base, name, _eager(value))


def _eager_attributes(model):
    """Compiled callables and modules the constructor stored (`self.fn = torch.compile(...)`)."""
    for name, value in [*vars(model).items(), *model._modules.items()]:
        if not name.startswith("__") and _eager(value) is not value:
            setattr(model, name, _eager(value))
'''.strip("\n")


def strip_compile(
    node: ast.AST, imports: dict[str, str], compile_names: tuple[str, ...]
) -> ast.AST:
    """A copy of `node` (a def, class or assignment) without compile decorators, with
    `name = torch.compile(fn, ...)` turned into `name = fn`."""
    copy = ast.parse(ast.unparse(node)).body[0]
    for child in ast.walk(copy):
        if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            child.decorator_list = [
                d
                for d in child.decorator_list
                if compile_spelling(d, imports, compile_names) is None
            ]
        elif (
            isinstance(child, ast.Assign)
            and isinstance(child.value, ast.Call)
            and child.value.args
            and compile_spelling(
                ast.Call(func=child.value.func, args=[], keywords=child.value.keywords),
                imports,
                compile_names,
            )
        ):
            child.value = child.value.args[0]
    return copy
