"""The rules about what `ModelNew.forward` may do: launch at least one Triton kernel, and use
PyTorch only for allocation, views/shape queries and the problem's declared extern ops.

The check follows forward's call graph through `self.<method>(...)` and module-level functions
(the launcher `<op>(...)` of the candidate convention), tracking just enough of each value's
kind (tensor, Python number, container) to tell grid arithmetic on sizes from tensor math.
"""

from __future__ import annotations

import ast

from kbot.evaluate.forward_kinds import ForwardFacts, Kind
from kbot.evaluate.forward_walk import Walker
from kbot.evaluate.names import Aliases
from kbot.evaluate.verdict import Reason
from kbot.problem.spec import ProblemOptions


def check(tree: ast.Module, aliases: Aliases, options: ProblemOptions) -> list[Reason]:
    """model-new, no-triton-kernel and torch-compute-in-forward on one parsed candidate."""
    functions = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
    kernels = {name for name, fn in functions.items() if _is_kernel(fn, aliases)}
    model = next(
        (n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "ModelNew"), None
    )
    if model is None:
        return [Reason("model-new", "no module-level `class ModelNew(nn.Module)`")]
    methods = {n.name: n for n in model.body if isinstance(n, ast.FunctionDef)}
    if "forward" not in methods:
        return [Reason("model-new", "`ModelNew` has no `forward` method", model.lineno)]
    if not kernels:
        return [
            Reason(
                "no-triton-kernel",
                "no @triton.jit kernel in the candidate: the work must be done in Triton",
                model.lineno,
            )
        ]
    self_kinds, self_modules = _self_attributes(methods.get("__init__"), aliases)
    for name, method in methods.items():
        if name == "__init__":
            continue
        for node in ast.walk(method):
            if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for target in targets:
                    if _is_self_attribute(target):
                        self_kinds[target.attr] = Kind.TENSOR  # state kept across calls
    module = ForwardFacts(
        aliases=aliases,
        options=options,
        functions=functions,
        kernels=kernels,
        constants=_module_constants(tree, aliases),
        methods=methods,
        self_kinds=self_kinds,
        self_modules=self_modules,
    )
    Walker(module, {}).run(methods["forward"], is_method=True)
    if module.launches == 0:
        module.reasons.append(
            Reason(
                "no-triton-kernel",
                "forward never launches a Triton kernel (`_kernel[grid](...)`), directly or "
                "through the functions it calls",
                methods["forward"].lineno,
            )
        )
    return module.reasons


def _is_kernel(fn: ast.FunctionDef, aliases: Aliases) -> bool:
    for decorator in fn.decorator_list:
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        if aliases.qualname(target) in ("triton.jit", "triton.runtime.jit.jit"):
            return True
    return False


def _module_constants(tree: ast.Module, aliases: Aliases) -> dict[str, Kind]:
    """Kinds of module-level names: numbers (and math/triton expressions of them) are scalars,
    tuples of numbers are containers, mutable containers that the file mutates may hold
    tensors, anything else (a tensor built at import, say) counts as a tensor."""
    mutated = _mutated_names(tree)
    kinds: dict[str, Kind] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target, value = node.targets[0], node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            target, value = node.target, node.value
        else:
            continue
        if not isinstance(target, ast.Name) or target.id in aliases.names:
            continue
        if _is_scalar_expr(value, aliases, kinds):
            kinds[target.id] = Kind.SCALAR
        elif isinstance(value, ast.Tuple) and all(
            _is_scalar_expr(e, aliases, kinds) for e in value.elts
        ):
            kinds[target.id] = Kind.CONTAINER
        elif isinstance(value, (ast.Dict, ast.List, ast.Set)) and target.id not in mutated:
            elements = list(value.values) if isinstance(value, ast.Dict) else list(value.elts)
            scalar = all(_is_scalar_expr(e, aliases, kinds) for e in elements)
            kinds[target.id] = Kind.CONTAINER if scalar else Kind.TENSORS
        elif isinstance(value, (ast.Dict, ast.List, ast.Set)):
            kinds[target.id] = Kind.TENSORS
        else:
            kinds[target.id] = Kind.TENSOR
    return kinds


def _is_scalar_expr(node: ast.AST, aliases: Aliases, known: dict[str, Kind]) -> bool:
    """Numbers, names of scalar constants, and math./triton. calls or attributes of them."""
    if _is_number_expr(node):
        return True
    if isinstance(node, ast.Name):
        return known.get(node.id) == Kind.SCALAR
    if isinstance(node, (ast.Call, ast.Attribute)):
        func = node.func if isinstance(node, ast.Call) else node
        dotted = aliases.qualname(func) or ""
        args = node.args if isinstance(node, ast.Call) else []
        return dotted.split(".")[0] in ("math", "triton") and all(
            _is_scalar_expr(a, aliases, known) for a in args
        )
    if isinstance(node, ast.BinOp):
        return _is_scalar_expr(node.left, aliases, known) and _is_scalar_expr(
            node.right, aliases, known
        )
    if isinstance(node, ast.UnaryOp):
        return _is_scalar_expr(node.operand, aliases, known)
    return False


def _mutated_names(tree: ast.Module) -> set[str]:
    """Names whose value is changed in place somewhere: `name[k] = v`, `name.append(v)`."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Subscript) and isinstance(node.ctx, (ast.Store, ast.Del)):
            if isinstance(node.value, ast.Name):
                names.add(node.value.id)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if isinstance(node.func.value, ast.Name) and node.func.attr in (
                "append",
                "extend",
                "insert",
                "update",
                "setdefault",
                "add",
                "__setitem__",
            ):
                names.add(node.func.value.id)
    return names


def _is_number_expr(node: ast.AST) -> bool:
    return all(
        isinstance(n, (ast.Constant, ast.BinOp, ast.UnaryOp, ast.operator, ast.unaryop))
        for n in ast.walk(node)
    )


def _self_attributes(
    init: ast.FunctionDef | None, aliases: Aliases
) -> tuple[dict[str, Kind], dict[str, str]]:
    """Kinds of `self.<attr>` from __init__: parameters/buffers are tensors, constructor
    arguments and numbers are scalars, `nn.<Layer>(...)` are submodules."""
    kinds: dict[str, Kind] = {}
    submodules: dict[str, str] = {}
    if init is None:
        return kinds, submodules
    params = {a.arg for a in init.args.args + init.args.kwonlyargs} - {"self"}
    for node in ast.walk(init):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr == "register_buffer" and node.args:
                first = node.args[0]
                if isinstance(first, ast.Constant) and isinstance(first.value, str):
                    kinds[first.value] = Kind.TENSOR
        if not isinstance(node, ast.Assign):
            continue
        for target in node.targets:
            if not _is_self_attribute(target):
                continue
            value = node.value
            if isinstance(value, ast.Call):
                dotted = aliases.qualname(value.func) or ""
                if dotted.startswith("torch.nn.") and dotted.split(".")[-1][:1].isupper():
                    if dotted == "torch.nn.Parameter":
                        kinds[target.attr] = Kind.TENSOR
                    else:
                        submodules[target.attr] = dotted
                        kinds[target.attr] = Kind.UNKNOWN
                    continue
                if dotted.startswith("torch."):
                    kinds[target.attr] = Kind.TENSOR
                    continue
            names = {n.id for n in ast.walk(value) if isinstance(n, ast.Name)}
            if _is_number_expr(value) or (names and names <= params | {"float", "int"}):
                kinds[target.attr] = Kind.SCALAR
            else:
                kinds.setdefault(target.attr, Kind.UNKNOWN)
    return kinds, submodules


def _is_self_attribute(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id == "self"
    )
