"""The rules about what `ModelNew.forward` may do: launch at least one Triton kernel, and use
PyTorch only for allocation, views/shape queries and the problem's declared extern ops.

The check follows forward's call graph through `self.<method>(...)`, properties and
module-level functions (the launcher `<op>(...)` of the candidate convention), tracking just
enough of each value's kind (tensor, Python number, container) to tell grid arithmetic on
sizes from tensor math. The same walk judges the other code that can run during a call:
special methods and properties of every class, triton.heuristics functions, and functions
made in `__init__` or at module level.
"""

from __future__ import annotations

import ast
import dataclasses

from kbot.evaluate.allowed import IMPLICIT_DUNDERS
from kbot.evaluate.forward_kinds import CandidateTypes, ForwardFacts, Kind
from kbot.evaluate.forward_types import (
    candidate_types,
    dataclass_fields,
    helper_class,
    is_number_expr,
    module_constants,
    stored_attributes,
)
from kbot.evaluate.forward_walk import Walker
from kbot.evaluate.module_rules import autograd_functions, kernel_names
from kbot.evaluate.names import Aliases
from kbot.evaluate.verdict import Reason
from kbot.problem.spec import ProblemOptions


def check(tree: ast.Module, aliases: Aliases, options: ProblemOptions) -> list[Reason]:
    """model-new, no-triton-kernel and torch-compute-in-forward on one parsed candidate."""
    functions = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
    functions.update(_module_lambdas(tree))
    kernels = kernel_names(tree, aliases)
    model = next(
        (n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "ModelNew"), None
    )
    if model is None:
        return [Reason("model-new", "no module-level `class ModelNew(nn.Module)`")]
    methods = _methods(model)
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
    types = candidate_types(tree, aliases)
    constants = module_constants(tree, aliases, types)
    module = _class_facts(
        model, aliases, options, functions, kernels, constants, Kind.UNKNOWN, types=types
    )
    module.autograd = {
        name: _methods(cls) for name, cls in autograd_functions(tree, aliases).items()
    }
    local = {}
    for cls in tree.body:
        if isinstance(cls, ast.ClassDef) and cls is not model and _is_module_class(cls, aliases):
            # an attribute its own __init__ did not set came from elsewhere: a tensor
            facts = _class_facts(
                cls, aliases, options, functions, kernels, constants, Kind.TENSOR, types=types
            )
            facts.reasons, facts.autograd, facts.visiting = (
                module.reasons, module.autograd, module.visiting
            )  # fmt: skip
            facts.local_modules = local
            local[cls.name] = facts
    module.local_modules = local
    stored = stored_attributes(tree)
    for cls in (n for n in tree.body if isinstance(n, ast.ClassDef) and n is not model):
        # a class forward may build or call into: its methods' parameters and attributes are
        # what forward passes, not what a constructor the judge calls would (trust_init)
        facts = _class_facts(
            cls, aliases, options, functions, kernels, constants, Kind.TENSOR,
            fields=False, trust_init=False, types=types,
        )  # fmt: skip
        facts.reasons, facts.autograd, facts.visiting = (
            module.reasons, module.autograd, module.visiting
        )  # fmt: skip
        facts.local_modules = local
        helper = helper_class(cls, aliases, facts, stored)
        if helper is not None:
            types.helpers[cls.name] = helper
    Walker(module, {}).run(
        methods["forward"], is_method=True, arg_kinds=_forward_kinds(methods["forward"], options),
        default_kind=Kind.TENSOR,
    )  # fmt: skip
    if module.launches == 0:
        module.reasons.append(
            Reason(
                "no-triton-kernel",
                "forward never launches a Triton kernel (`_kernel[grid](...)`), directly or "
                "through the functions it calls",
                methods["forward"].lineno,
            )
        )
    # Code that runs during a call without being called by name: special methods and
    # properties of every class in the file, and triton.heuristics functions. Judged like
    # forward, each parameter taken for a tensor.
    for cls in (n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)):
        if cls is model:
            facts = plain = dataclasses.replace(module)
        else:
            facts = _class_facts(
                cls, aliases, options, functions, kernels, constants, Kind.TENSOR, types=types
            )
            plain = _class_facts(
                cls, aliases, options, functions, kernels, constants, Kind.TENSOR,
                fields=False, types=types,
            )  # fmt: skip
            for each in (facts, plain):
                each.reasons, each.autograd = module.reasons, module.autograd
        for name, method in _methods(cls).items():
            implicit = name.startswith("__") and name.endswith("__") and name != "__init__"
            if not (implicit or _is_property(method, aliases)) or name in _REJECTED:
                continue  # rejected outright (module_rules)
            walked = plain if implicit else facts
            walked.where = f"`{cls.name}.{name}`"
            Walker(walked, {}).run(method, is_method=True, default_kind=Kind.TENSOR)
    facts = dataclasses.replace(module, where="a triton.heuristics function")
    for fn in (functions[name] for name in sorted(kernels)):
        for decorator in fn.decorator_list:
            if isinstance(decorator, ast.Call):
                for node in ast.walk(decorator):
                    if isinstance(node, ast.Lambda):
                        Walker(facts, {}).run(node, default_kind=Kind.UNKNOWN)
    # Functions made where forward's rule does not look (in __init__, at module level) can
    # still run during a call: a grid lambda kept on self, a module-level lambda.
    facts = dataclasses.replace(module, where="a function defined outside forward")
    for fn in _module_lambdas(tree).values():
        Walker(facts, {}).run(fn, default_kind=Kind.UNKNOWN)
    for cls in (n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)):
        init = _methods(cls).get("__init__")
        for node in ast.walk(init) if init is not None else ():
            if isinstance(node, ast.Lambda) or (
                isinstance(node, ast.FunctionDef) and node is not init
            ):
                Walker(facts, {}).run(node, default_kind=Kind.UNKNOWN)
    return module.reasons


def _forward_kinds(forward: ast.FunctionDef, options: ProblemOptions) -> tuple[Kind, ...]:
    """What the judge passes in each place of forward: a number where the problem declares one
    (KBOT scalar_inputs, checked at every case), else a tensor. The candidate's annotations do
    not count: `x: float` on a tensor would let PyTorch arithmetic pass for size arithmetic."""
    places = len(forward.args.posonlyargs) + len(forward.args.args) - 1
    return tuple(
        Kind.SCALAR if i in options.scalar_positions else Kind.TENSOR for i in range(places)
    )


def _module_lambdas(tree: ast.Module) -> dict[str, ast.Lambda]:
    """`name = lambda ...` at module level: functions like any `def`."""
    return {
        n.targets[0].id: n.value
        for n in tree.body
        if isinstance(n, ast.Assign)
        and len(n.targets) == 1
        and isinstance(n.targets[0], ast.Name)
        and isinstance(n.value, ast.Lambda)
    }


_REJECTED = IMPLICIT_DUNDERS | {"__enter__", "__exit__", "__aenter__", "__aexit__"}


def _methods(cls: ast.ClassDef) -> dict[str, ast.FunctionDef]:
    return {n.name: n for n in cls.body if isinstance(n, ast.FunctionDef)}


def _is_property(method: ast.FunctionDef, aliases: Aliases) -> bool:
    for decorator in method.decorator_list:
        dotted = aliases.qualname(decorator) or (
            decorator.id if isinstance(decorator, ast.Name) else ""
        )
        if dotted in ("property", "functools.cached_property") or (
            isinstance(decorator, ast.Attribute) and decorator.attr in ("setter", "deleter")
        ):
            return True
    return False


def _is_module_class(cls: ast.ClassDef, aliases: Aliases) -> bool:
    return [aliases.qualname(b) for b in cls.bases] == ["torch.nn.Module"]


def _class_facts(
    cls: ast.ClassDef,
    aliases,
    options,
    functions,
    kernels,
    constants,
    self_default: Kind,
    fields: bool = True,
    trust_init: bool = True,
    types: CandidateTypes | None = None,
) -> ForwardFacts:
    """What the walker knows inside one class's methods; `fields`: a dataclass's number
    fields count as numbers (in its properties, not in special methods Triton or Python run
    on their own); `trust_init`: __init__'s parameters are numbers (the judge builds the
    class with the problem's init inputs), not so for a class forward builds."""
    methods = _methods(cls)
    self_kinds, self_modules = (
        _self_attributes(methods.get("__init__"), aliases) if trust_init else ({}, {})
    )
    for name, kind in (dataclass_fields(cls, aliases) if fields else {}).items():
        self_kinds.setdefault(name, kind)
    for name, method in methods.items():
        if name == "__init__":
            continue
        for node in ast.walk(method):
            if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for target in targets:
                    for sub in ast.walk(target):
                        if _is_self_attribute(sub):
                            self_kinds[sub.attr] = Kind.TENSOR  # state kept across calls
                            self_modules.pop(sub.attr, None)  # not one submodule for good
    return ForwardFacts(
        aliases=aliases,
        options=options,
        functions=functions,
        kernels=kernels,
        constants=constants,
        methods={n: m for n, m in methods.items() if not _is_property(m, aliases)},
        properties={n: m for n, m in methods.items() if _is_property(m, aliases)},
        self_kinds=self_kinds,
        self_modules=self_modules,
        self_default=self_default,
        types=types or CandidateTypes(),
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
    assigned: dict[str, int] = {}
    for node in ast.walk(init):
        for target in node.targets if isinstance(node, ast.Assign) else ():
            if _is_self_attribute(target):
                assigned[target.attr] = assigned.get(target.attr, 0) + 1
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
            value = _unwrap_module_casts(node.value)
            if (
                isinstance(value, ast.Call)
                and isinstance(value.func, ast.Name)
                and value.func.id not in aliases.names
                and assigned[target.attr] == 1
            ):
                # a class of the candidate's own: followed if it is an nn.Module of the file
                submodules[target.attr] = f"local:{value.func.id}"
                kinds[target.attr] = Kind.UNKNOWN
                continue
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
            if is_number_expr(value) or (names and names <= params | {"float", "int"}):
                kinds[target.attr] = Kind.SCALAR
            else:
                kinds.setdefault(target.attr, Kind.UNKNOWN)
    return kinds, submodules


# Methods that return the module they are called on (`nn.Linear(...).half()`).
_MODULE_CASTS = frozenset("half float double bfloat16 to cuda cpu requires_grad_ eval".split())


def _unwrap_module_casts(value: ast.expr) -> ast.expr:
    """`nn.Linear(a, b).half().to(device)` -> `nn.Linear(a, b)`: still that layer."""
    while (
        isinstance(value, ast.Call)
        and isinstance(value.func, ast.Attribute)
        and value.func.attr in _MODULE_CASTS
        and isinstance(value.func.value, ast.Call)
    ):
        value = value.func.value
    return value


def _is_self_attribute(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id == "self"
    )
