"""Rules over the candidate module's structure, beside forward's call graph: decorators
(`decorators`), classes whose special methods run implicitly (`special-methods`, `model-new`,
and `__exit__` as a `try-except-fallback`) and what a kernel body may call (`kernel-code`);
`check` also runs the `import-time-code` (import_time.py) and `rebinding` (rebinding.py) rules.
"""

from __future__ import annotations

import ast

from kbot.evaluate import import_time, rebinding
from kbot.evaluate.allowed import (
    AUTOGRAD_BACKWARD_DECORATORS,
    AUTOGRAD_BASES,
    AUTOGRAD_MACHINERY,
    AUTOTUNE_KEYWORDS,
    CONFIG_KEYWORDS,
    FUNCTION_DECORATORS,
    IMPLICIT_DUNDERS,
    JIT_KEYWORDS,
    NN_MODULE_MACHINERY,
    TRITON_API,
)
from kbot.evaluate.names import Aliases
from kbot.evaluate.rebinding import local_bindings
from kbot.evaluate.verdict import Reason

KERNEL_DECORATORS = ("triton.jit", "triton.runtime.jit.jit")
_KERNEL_WRAPPERS = ("triton.autotune", "triton.heuristics")
_KERNEL_BUILTINS = frozenset(
    "range float int bool min max len isinstance print abs tuple zip enumerate getattr hasattr "
    "type list repr str all any".split()
)


def kernel_names(tree: ast.Module, aliases: Aliases) -> set[str]:
    """Module-level functions decorated with @triton.jit."""
    return {
        n.name
        for n in tree.body
        if isinstance(n, ast.FunctionDef) and any(_is_jit(d, aliases) for d in n.decorator_list)
    }


def autograd_functions(tree: ast.Module, aliases: Aliases) -> dict[str, ast.ClassDef]:
    """Module-level `class F(torch.autograd.Function)`: forward's call `F.apply(...)` runs
    F.forward (and F.setup_context), which the forward check follows like a helper."""
    return {
        n.name: n
        for n in tree.body
        if isinstance(n, ast.ClassDef)
        and len(n.bases) == 1
        and aliases.qualname(n.bases[0]) in AUTOGRAD_BASES
    }


def _is_jit(decorator: ast.AST, aliases: Aliases) -> bool:
    target = decorator.func if isinstance(decorator, ast.Call) else decorator
    return aliases.qualname(target) in KERNEL_DECORATORS


def check(tree: ast.Module, aliases: Aliases) -> list[Reason]:
    kernels = kernel_names(tree, aliases)
    reasons: list[Reason] = []
    reasons += import_time.check(tree, aliases)
    reasons += rebinding.check(tree, kernels)
    reasons += _decorators(tree, aliases, kernels)
    reasons += _classes(tree, aliases)
    reasons += _kernel_bodies(tree, aliases, kernels)
    return reasons


# ---- decorators -------------------------------------------------------------------------
def _decorators(tree: ast.Module, aliases: Aliases, kernels: set[str]) -> list[Reason]:
    reasons: list[Reason] = []
    module_functions = {id(n) for n in tree.body if isinstance(n, ast.FunctionDef)}
    methods = {id(m) for c in ast.walk(tree) if isinstance(c, ast.ClassDef) for m in c.body}
    autograd = {id(c) for c in autograd_functions(tree, aliases).values()}

    def reject(node: ast.AST, message: str) -> None:
        reasons.append(Reason("decorators", message, node.lineno))

    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            properties = {
                m.name
                for m in node.body
                if isinstance(m, ast.FunctionDef)
                and any(_decorator_name(d, aliases) == "property" for d in m.decorator_list)
            }
            for decorator in node.decorator_list:
                name = _decorator_name(decorator, aliases)
                if node.name == "ModelNew" or name != "dataclasses.dataclass":
                    reject(
                        decorator,
                        f"`@{ast.unparse(decorator)}` on class {node.name} wraps the class in "
                        "code the checks do not follow; remove it",
                    )
            for method in (m for m in node.body if isinstance(m, ast.FunctionDef)):
                for decorator in method.decorator_list:
                    name = _decorator_name(decorator, aliases)
                    accessor = (
                        isinstance(decorator, ast.Attribute)
                        and isinstance(decorator.value, ast.Name)
                        and decorator.value.id in properties
                        and decorator.attr in ("setter", "getter", "deleter")
                    )
                    plain = name in ("torch.no_grad", "torch.inference_mode")
                    if id(node) in autograd:  # forward, backward, ... are @staticmethods
                        if method.name in ("forward", "setup_context") and name != "staticmethod":
                            reject(
                                decorator,
                                f"`@{ast.unparse(decorator)}` on {node.name}.{method.name}: "
                                "torch.autograd.Function's forward and setup_context are "
                                "@staticmethod only",
                            )
                        elif not (
                            name in FUNCTION_DECORATORS
                            or (method.name == "backward" and name in AUTOGRAD_BACKWARD_DECORATORS)
                        ):
                            reject(decorator, _wraps(decorator, method.name))
                    elif method.name == "forward" and not plain:
                        reject(
                            decorator,
                            f"`@{ast.unparse(decorator)}` on forward: forward must be a plain "
                            "method (only @torch.no_grad() / @torch.inference_mode())",
                        )
                    elif not (accessor or name in FUNCTION_DECORATORS):
                        reject(decorator, _wraps(decorator, method.name))
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and id(node) not in methods:
            is_kernel = node.name in kernels and id(node) in module_functions
            for decorator in node.decorator_list:
                name = _decorator_name(decorator, aliases)
                if is_kernel and name in KERNEL_DECORATORS + _KERNEL_WRAPPERS:
                    if isinstance(decorator, ast.Call):
                        for message in _kernel_decorator_arguments(decorator, name):
                            reject(decorator, message)
                elif name in KERNEL_DECORATORS:
                    reject(
                        decorator,
                        f"the @triton.jit function `{node.name}` must be defined at module level",
                    )
                elif name not in FUNCTION_DECORATORS or name == "property":
                    reject(decorator, _wraps(decorator, node.name))
        elif isinstance(node, ast.Call) and aliases.qualname(node.func) == "triton.Config":
            for message in _kernel_decorator_arguments(node, "triton.Config"):
                reject(node, message)
    return reasons


# What triton's decorators and Config take: how many leading positional arguments, which
# keywords. The rest are callables run at launch (`prune_configs_by`, `do_bench`, `pre_hook`,
# `launch_metadata`, `repr`), which no check reads; `*_hook` keywords are `hooks`.
_TRITON_ARGUMENTS = {
    "triton.autotune": (2, AUTOTUNE_KEYWORDS),
    "triton.heuristics": (1, frozenset()),
    "triton.Config": (3, CONFIG_KEYWORDS),
    "triton.jit": (0, JIT_KEYWORDS),
    "triton.runtime.jit.jit": (0, JIT_KEYWORDS),
}


def _kernel_decorator_arguments(call: ast.Call, name: str) -> list[str]:
    positional, keywords = _TRITON_ARGUMENTS[name]
    messages = []
    if len(call.args) > positional:
        messages.append(
            f"`{name}(...)` with {len(call.args)} positional arguments: pass its settings by "
            f"keyword ({', '.join(sorted(keywords)) or 'none'})"
        )
    for keyword in call.keywords:
        if keyword.arg not in keywords and "hook" not in (keyword.arg or "").lower():
            messages.append(
                f"`{name}({keyword.arg or '**'}=...)` is not one of its settings the checks "
                f"allow ({', '.join(sorted(keywords)) or 'none'}); callables there run at launch"
            )
    return messages


def _wraps(decorator: ast.AST, name: str) -> str:
    return (
        f"`@{ast.unparse(decorator)}` wraps `{name}` in code the checks do not follow; remove it "
        "(allowed: @staticmethod, @classmethod, @property, @torch.no_grad(), @triton.jit on "
        "kernels)"
    )


def _decorator_name(decorator: ast.AST, aliases: Aliases) -> str | None:
    target = decorator.func if isinstance(decorator, ast.Call) else decorator
    dotted = aliases.qualname(target)
    if dotted is None and isinstance(target, ast.Name):
        return target.id
    return dotted


# ---- classes ----------------------------------------------------------------------------
def _classes(tree: ast.Module, aliases: Aliases) -> list[Reason]:
    reasons: list[Reason] = []
    for cls in (n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)):
        methods = [n for n in cls.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
        for keyword in cls.keywords:
            reasons.append(
                Reason(
                    "special-methods",
                    f"class {cls.name}({keyword.arg}=...): a metaclass runs code when the class "
                    "is created or called; remove it",
                    cls.lineno,
                )
            )
        for method in methods:
            if method.name in ("__exit__", "__aexit__"):
                reasons.append(
                    Reason(
                        "try-except-fallback",
                        f"class {cls.name} defines `{method.name}`: a context manager can "
                        "swallow a failing kernel's exception; remove the class",
                        method.lineno,
                    )
                )
            elif method.name in IMPLICIT_DUNDERS:
                reasons.append(
                    Reason(
                        "special-methods",
                        f"class {cls.name} defines `{method.name}`, which Python runs "
                        "implicitly, outside forward's call graph; remove it",
                        method.lineno,
                    )
                )
        bases = [aliases.qualname(b) or ast.unparse(b) for b in cls.bases]
        state_base = next((b for b in bases if b.split(".")[-1] in _BUILTIN_STATE_TYPES), None)
        if state_base is not None:
            reasons.append(
                Reason(
                    "special-methods",
                    f"class {cls.name}({state_base}) overrides a builtin container's methods, "
                    "which the judge's state checks would run; keep plain lists and dicts",
                    cls.lineno,
                )
            )
        if bases and bases[0] in AUTOGRAD_BASES:
            reasons += [
                Reason(
                    "model-new",
                    f"class {cls.name} overrides torch.autograd.Function's `{method.name}`, "
                    "which runs its forward; define forward, setup_context, backward and "
                    "helpers of your own",
                    method.lineno,
                )
                for method in methods
                if method.name in AUTOGRAD_MACHINERY
            ]
            continue
        if cls.name != "ModelNew" or cls not in tree.body:
            if bases:  # a submodule: the judge moves, walks and loads it like ModelNew
                reasons += _machinery(cls, methods, f"class {cls.name}")
            continue
        if bases != ["torch.nn.Module"]:
            reasons.append(
                Reason(
                    "model-new",
                    f"`class ModelNew({', '.join(bases)})` must subclass nn.Module directly, "
                    "so that no inherited code runs around forward",
                    cls.lineno,
                )
            )
        reasons += _machinery(cls, methods, "ModelNew")
    return reasons


# Builtin types whose methods the state checks would otherwise call on a subclass's instance.
_BUILTIN_STATE_TYPES = frozenset(
    "dict list tuple set frozenset OrderedDict defaultdict Counter deque UserDict UserList "
    "SimpleNamespace".split()
)


def _machinery(cls: ast.ClassDef, methods: list, who: str) -> list[Reason]:
    return [
        Reason(
            "model-new",
            f"{who} overrides nn.Module's `{method.name}`, which the evaluator calls; define "
            "only __init__, forward and helpers of your own",
            method.lineno,
        )
        for method in methods
        if method.name in NN_MODULE_MACHINERY and method.name not in IMPLICIT_DUNDERS
    ]


# ---- kernel-code ------------------------------------------------------------------------
# Attributes of the interpreter's values that a compiled kernel does not have.
_INTERPRETER_INTERNALS = frozenset("handle data".split())


def _kernel_bodies(tree: ast.Module, aliases: Aliases, kernels: set[str]) -> list[Reason]:
    reasons: list[Reason] = []
    python_defs = {
        n.name
        for n in tree.body
        if isinstance(n, (ast.FunctionDef, ast.ClassDef)) and n.name not in kernels
    } | {
        target.id
        for n in tree.body
        if isinstance(n, ast.Assign) and isinstance(n.value, ast.Lambda)
        for target in n.targets
        if isinstance(target, ast.Name)
    }
    for fn in (n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name in kernels):
        local = {name for name, _ in local_bindings(fn)}

        def reject(node: ast.AST, message: str, fn=fn) -> None:
            reasons.append(
                Reason(
                    "kernel-code",
                    f"{message} inside the @triton.jit kernel `{fn.name}`: kernel bodies use "
                    "triton.language and other @triton.jit functions only",
                    getattr(node, "lineno", None),
                )
            )

        body = ast.Module(body=fn.body, type_ignores=[])
        inner = {id(n.value) for n in ast.walk(body) if isinstance(n, ast.Attribute)}
        for node in ast.walk(body):
            if isinstance(node, ast.Attribute) and (
                node.attr in _INTERPRETER_INTERNALS or node.attr.startswith("_")
            ):
                # what the CPU interpreter hands a kernel is a Python object with NumPy inside;
                # a compiled kernel has none of it
                reject(node, f"`.{node.attr}` (the interpreter's internals, not triton.language)")
            if isinstance(node, (ast.Attribute, ast.Name)) and id(node) not in inner:
                dotted = aliases.qualname(node)
                if dotted is not None and dotted.split(".")[0] == "torch":
                    reject(node, f"`{dotted}`")
                elif isinstance(node, ast.Name) and node.id in python_defs and node.id not in local:
                    reject(node, f"`{node.id}` (Python code, not a kernel)")
            if isinstance(node, ast.Call):
                func = node.func
                dotted = aliases.qualname(func)
                if dotted is not None:
                    if not (dotted.startswith("triton.language") or dotted in TRITON_API):
                        if dotted.split(".")[0] != "torch":
                            reject(node, f"`{dotted}(...)`")
                elif isinstance(func, ast.Name):
                    known = (
                        func.id in kernels
                        or func.id in local
                        or (func.id in _KERNEL_BUILTINS and func.id not in python_defs)
                    )
                    if not known and func.id not in python_defs:
                        reject(node, f"`{func.id}(...)`")
                elif not isinstance(func, ast.Attribute):
                    reject(node, f"`{ast.unparse(func)}(...)`")
    return reasons
