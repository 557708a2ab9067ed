"""The call rules of the forward check: what each call in forward's call graph is (a Triton
launch, a followed helper, method or local function, an allowed `torch` allocation/view/query,
a declared extern op, a Python builtin) and the rejection, with its hint, for everything else.
Tables of what is allowed live in `allowed`; the statement and expression walk lives in
`forward_walk`.

A function value is followed where it is called: a local def or lambda called by name, one
passed to a helper that calls it, and one handed to anything else (`map`, `sorted(key=)`,
`functools.reduce`) is walked with tensors for its parameters, since that is what it may get.
"""

from __future__ import annotations

import ast
import builtins
from dataclasses import dataclass, field

from kbot.evaluate.allowed import (
    ALLOC_METHODS,
    AUTOGRAD_CTX_METHODS,
    CAST_METHODS,
    CONTAINER_METHODS,
    DEVICE_FACT_METHODS,
    DEVICE_FACTS,
    EXTERN_CALLS,
    OTHER_BUILTINS,
    QUERY_METHODS,
    SCALAR_BUILTINS,
    TORCH_ALLOC,
    TORCH_QUERIES,
    TORCH_VIEWS,
    TRITON_API,
    TRITON_DESCRIPTORS,
    TRITON_HELPERS,
    VIEW_METHODS,
)
from kbot.evaluate.forbidden import forbidden
from kbot.evaluate.forward_kinds import (
    MAX_CALL_DEPTH,
    MAYBE_TENSOR,
    TOO_DEEP,
    Callable,
    ForwardFacts,
    Kind,
    container_of,
    element_of,
    holds_tensor,
)

# Keywords of an allocation that say where and how, never with what values.
_ALLOC_KEYWORDS = frozenset(
    "device dtype layout requires_grad pin_memory memory_format size stride".split()
)
_COMPARING_METHODS = frozenset("sort index count remove".split())


@dataclass
class CallSite:
    """The arguments of one call, as the callee will see them."""

    arg_kinds: tuple[Kind, ...]
    keyword_kinds: dict[str, Kind]
    star_kind: Kind | None  # f(*xs) / f(**kw): the kind of any parameter they may fill
    callables: dict[int | str, Callable] = field(default_factory=dict)
    consumed: bool = False  # the callables were bound into a followed callee

    @property
    def kinds(self) -> list[Kind]:
        extra = [self.star_kind] if self.star_kind is not None else []
        return [*self.arg_kinds, *self.keyword_kinds.values(), *extra]


# Allocations whose dtype, unless given, is torch's default (a float fill for `full`).
DEFAULT_DTYPE_ALLOC = frozenset({"empty", "empty_strided", "zeros", "ones", "full"})


class CallRules:
    """The call half of `forward_walk.Walker`, which mixes it in and supplies `expr` (an
    expression's kind), `taint`, `run_callable` and the state below; `follow` walks a called
    function with a fresh walker of the same class."""

    m: ForwardFacts
    env: dict[str, Kind]
    depth: int
    local_fns: dict[str, Callable]

    def _Call(self, node: ast.Call) -> Kind:
        func = node.func
        site = self.call_site(node)
        # kernel[grid](...): a launch (of the module's kernel, not a local of that name).
        if (
            isinstance(func, ast.Subscript)
            and isinstance(func.value, ast.Name)
            and (
                (func.value.id in self.m.kernels and func.value.id not in self.env)
                or self.env.get(func.value.id) == Kind.KERNEL  # bound only to kernels
            )
        ):
            self.expr(func.slice)
            self.m.launches += 1
            kind = Kind.UNKNOWN
        else:
            kind = self.dispatch(node, func, site)
        if not site.consumed:
            for target in site.callables.values():  # handed to code that may pass tensors
                self.run_callable(target, (), Kind.TENSOR)
        return kind

    def dispatch(self, node: ast.Call, func: ast.expr, site: CallSite) -> Kind:
        dotted = self.m.aliases.qualname(func)
        if dotted is not None:
            return self.torch_call(node, dotted, site)
        if isinstance(func, ast.Name):
            return self.name_call(node, func.id, site)
        if isinstance(func, ast.Attribute):
            return self.method_call(node, func, site)
        self.expr(func)
        self.m.reject(node, f"`{ast.unparse(func)}(...)` calls something kbot cannot check")
        return Kind.UNKNOWN

    def call_site(self, node: ast.Call) -> CallSite:
        arg_kinds: list[Kind] = []
        star_kind: Kind | None = None
        starred = False
        for arg in node.args:
            kind = self.expr(arg)
            if isinstance(arg, ast.Starred):
                starred = True
                star_kind = _widest(star_kind, _spread(kind))
            elif not starred:
                arg_kinds.append(kind)
            else:
                star_kind = _widest(star_kind, kind)
        keyword_kinds: dict[str, Kind] = {}
        for keyword in node.keywords:
            kind = self.expr(keyword.value)
            if keyword.arg is None:  # **table
                star_kind = _widest(star_kind, _spread(kind))
            else:
                keyword_kinds[keyword.arg] = kind
        site = CallSite(tuple(arg_kinds), keyword_kinds, star_kind)
        for index, arg in enumerate(node.args):
            target = self.as_callable(arg)
            if target is not None:
                site.callables[index] = target
        for keyword in node.keywords:
            target = self.as_callable(keyword.value)
            if target is not None and keyword.arg:
                site.callables[keyword.arg] = target
        return site

    def as_callable(self, node: ast.AST) -> Callable | None:
        """The function a call argument is, when it is one the walker can follow."""
        if isinstance(node, ast.Starred):
            return self.as_callable(node.value)
        if isinstance(node, ast.Lambda):
            return Callable(node, dict(self.env), owner=id(self))
        if isinstance(node, ast.Name):
            if node.id in self.local_fns:
                return self.local_fns[node.id]
            if node.id in self.m.functions and node.id not in self.env:
                return Callable(self.m.functions[node.id], module_key=f"fn:{node.id}")
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id == "self"
            and node.attr in self.m.methods
        ):
            method = self.m.methods[node.attr]
            return Callable(
                method, module_key=f"method:{node.attr}", is_method=not _is_static(method)
            )
        cls = self.class_named(getattr(node, "value", None)) or ""
        helper = self.m.types.helpers.get(cls)
        method = helper.facts.methods.get(node.attr) if helper else None
        if method is not None and not _is_static(method):
            names = {d.id for d in method.decorator_list if isinstance(d, ast.Name)}
            method = method if "classmethod" in names else None  # `self` would be unknown
        if method is not None:  # `map(Launcher.run, xs)`
            return Callable(
                method, module_key=f"class:{cls}.{node.attr}", is_method=not _is_static(method)
            )
        return None

    def name_call(self, node: ast.Call, name: str, site: CallSite) -> Kind:
        if name in self.class_params:  # `cls(...)` in a @classmethod
            return self.construct(node, self.class_params[name], site)
        if name in self.local_fns:
            site.consumed = True
            return self.run_callable(
                self.local_fns[name],
                site.arg_kinds,
                Kind.UNKNOWN,
                keyword_kinds=site.keyword_kinds,
                star_kind=site.star_kind,
                callable_args=site.callables,
            )
        if name in self.env:
            self.m.reject(node, f"`{name}(...)` calls a value kbot cannot check")
            return Kind.UNKNOWN
        if name in self.m.kernels:
            self.m.reject(node, f"`{name}(...)` calls a Triton kernel without a grid")
            return Kind.UNKNOWN
        if name in self.m.functions:
            return self.follow(
                f"fn:{name}", self.m.functions[name], site.arg_kinds, False, site=site
            )
        if name in self.m.types.names:
            return self.construct(node, name, site)
        tensors = holds_tensor(site.kinds)
        if name in SCALAR_BUILTINS:
            if tensors and name not in ("isinstance", "len", "hasattr", "callable"):
                self.m.reject(
                    node, f"`{name}(...)` on a tensor runs PyTorch compute; do it in the kernel"
                )
            return Kind.SCALAR
        if name in OTHER_BUILTINS:
            if tensors and name in ("sorted", "range", "repr", "slice"):
                self.m.reject(
                    node, f"`{name}(...)` on tensors reads their values; do it in the kernel"
                )
            if name in ("tuple", "list", "dict", "set", "range", "enumerate", "zip", "reversed",
                        "sorted", "map", "filter", "iter"):  # fmt: skip
                return container_of(site.kinds)
            if name == "next":
                return Kind.TENSOR if tensors else Kind.UNKNOWN
            return Kind.UNKNOWN
        if hasattr(builtins, name):
            self.m.reject(node, f"`{name}(...)` is not allowed in forward")
            return Kind.UNKNOWN
        self.m.reject(node, f"`{name}(...)` is not defined in the candidate")
        return Kind.UNKNOWN

    def method_call(self, node: ast.Call, func: ast.Attribute, site: CallSite) -> Kind:
        name = func.attr
        if isinstance(func.value, ast.Name) and func.value.id == "self":
            if name in self.m.methods:
                method = self.m.methods[name]
                return self.follow(
                    f"method:{name}", method, site.arg_kinds, not _is_static(method), site=site
                )
            layer = self.m.self_modules.get(name)
            if layer is not None and self.m.extern_allowed(layer):
                return Kind.TENSOR
            submodule = self.m.local_modules.get((layer or "").removeprefix("local:"))
            if layer and layer.startswith("local:") and submodule is not None:
                return self.submodule_call(node, submodule, site)
            self.m.reject(
                node,
                f"`self.{name}(...)` runs a PyTorch module in forward"
                + (f" ({layer}); declare it in KBOT extern_ops" if layer else ""),
            )
            return Kind.UNKNOWN
        if (
            isinstance(func.value, ast.Name)
            and func.value.id in self.m.autograd
            and func.value.id not in self.env
        ):
            return self.autograd_call(node, func.value.id, name, site)
        cls = self.class_named(func.value)
        if cls is not None:
            return self.class_method_call(node, cls, name, site)
        receiver = self.expr(func.value)
        if receiver == Kind.OBJECT or (receiver != Kind.CONTEXT and name in self.m.types.members):
            return self.object_call(node, func, site)
        if receiver == Kind.SCALAR and (kind := self.str_method(func, site)) is not None:
            return kind
        tensors = holds_tensor(site.kinds)
        if receiver == Kind.CONTEXT:
            if name not in AUTOGRAD_CTX_METHODS:
                self.m.reject(
                    node,
                    f"`{ast.unparse(func)}(...)`: an autograd ctx only saves what backward needs "
                    f"({', '.join(sorted(AUTOGRAD_CTX_METHODS))})",
                )
            return Kind.SCALAR
        if receiver == Kind.TENSORS and name in _COMPARING_METHODS:
            self.m.reject(node, f"`{ast.unparse(func)}(...)` compares tensors with PyTorch")
            return Kind.UNKNOWN
        if receiver == Kind.CONTAINER and any(k in MAYBE_TENSOR for k in site.kinds):
            self.taint(func.value)  # parts.append(x)
            return Kind.TENSORS
        if receiver == Kind.TENSORS:
            return Kind.TENSOR  # parts.pop(), table.get(key)
        if receiver in (Kind.CONTAINER, Kind.SCALAR, Kind.META):
            return Kind.TENSORS if tensors else Kind.UNKNOWN
        if name in QUERY_METHODS:
            return Kind.SHAPE if name in ("size", "stride") and not node.args else Kind.SCALAR
        if name in DEVICE_FACT_METHODS and receiver == Kind.TENSOR:
            self.m.reject(node, _device_fact(f"{ast.unparse(func)}()"))
            return Kind.SCALAR
        if name in VIEW_METHODS:
            return Kind.TENSOR
        if name in ALLOC_METHODS:
            if name == "fill_" and tensors:
                self.m.reject(node, "`fill_` with a tensor value is a copy in PyTorch")
            return Kind.TENSOR
        if self.m.extern_allowed(f"torch.Tensor.{name}"):
            return Kind.TENSOR
        if receiver == Kind.UNKNOWN and name in CONTAINER_METHODS:
            return Kind.TENSORS if tensors else Kind.UNKNOWN
        if name in CAST_METHODS:
            self.m.reject(
                node,
                f"`{ast.unparse(func)}(...)` casts or copies a tensor in PyTorch; cast inside the kernel (load, upcast, compute, cast on store)",
            )
            return Kind.TENSOR
        self.m.reject(
            node,
            f"`{ast.unparse(func)}(...)` is PyTorch compute in forward; do it in the Triton kernel",
        )
        return Kind.TENSOR

    def torch_call(self, node: ast.Call, dotted: str, site: CallSite) -> Kind:
        root = dotted.split(".")[0]
        tensors = holds_tensor(site.kinds)
        if root == "triton":
            if dotted in TRITON_HELPERS:
                if tensors:
                    self.m.reject(
                        node, f"`{dotted}(...)` on a tensor is PyTorch arithmetic in forward"
                    )
                return Kind.SCALAR
            if dotted in TRITON_DESCRIPTORS:
                return Kind.TENSOR
            # Anything else of triton is its own rule (`triton-api`); the value is opaque.
            return Kind.SCALAR if dotted in TRITON_API else Kind.UNKNOWN
        if root != "torch":
            if tensors:
                self.m.reject(node, f"`{dotted}(...)` on a tensor in forward")
            numbers = all(k in (Kind.SCALAR, Kind.SHAPE, Kind.CONTAINER) for k in site.kinds)
            return Kind.SCALAR if root in ("math", "operator") and numbers else Kind.UNKNOWN
        kind = self.check_torch_name(node, dotted, called=True)
        rest = dotted[len("torch.") :]
        if rest in TORCH_ALLOC:
            values = list(site.arg_kinds[1:] if rest.endswith("_like") else site.arg_kinds)
            values += [k for key, k in site.keyword_kinds.items() if key not in _ALLOC_KEYWORDS]
            if site.star_kind is not None:
                values.append(site.star_kind)
            if holds_tensor(values):
                self.m.reject(node, f"`{dotted}(...)` from a tensor's values is a copy in PyTorch")
            given = "dtype" in site.keyword_kinds or any(k.arg is None for k in node.keywords)
            if rest in DEFAULT_DTYPE_ALLOC and not given:
                self.m.reject(
                    node,
                    f"`{dotted}(...)` without dtype= takes torch's default dtype, which a "
                    "serving engine may set (torch.set_default_dtype(torch.bfloat16)); pass "
                    "dtype= (or allocate with *_like)",
                    rule="default-dtype",
                )
        return kind

    def check_torch_name(self, node: ast.AST, dotted: str, called: bool) -> Kind:
        """A `torch.*` name used in forward's call graph: allowed, or a rejection."""
        if not dotted.startswith("torch") or forbidden(dotted) is not None:
            return Kind.SCALAR  # forbidden names are reported by their own rule
        rest = dotted[len("torch.") :] if dotted != "torch" else ""
        if rest == "" or rest in ("nn", "nn.functional", "cuda", "Tensor"):
            return Kind.SCALAR
        if rest in TORCH_ALLOC or rest in TORCH_VIEWS:
            return Kind.TENSOR
        if rest in TORCH_QUERIES:
            return Kind.SCALAR
        if rest in DEVICE_FACTS:
            self.m.reject(node, _device_fact(dotted))
            return Kind.SCALAR
        if self.m.extern_allowed(dotted):
            return Kind.TENSOR
        hint = ""
        for op, names in EXTERN_CALLS.items():
            if dotted in names:
                hint = f"; the problem may declare KBOT extern_ops=['{op}']"
        self.m.reject(
            node, f"`{dotted}` is PyTorch compute in forward; do it in the Triton kernel{hint}"
        )
        return Kind.TENSOR

    def follow(
        self,
        key: str,
        fn: ast.FunctionDef | ast.Lambda,
        arg_kinds: tuple[Kind, ...],
        is_method: bool,
        default_kind: Kind = Kind.UNKNOWN,
        site: CallSite | None = None,
        facts: ForwardFacts | None = None,
        bound_class: str | None = None,
        **binding,
    ) -> Kind:
        """Walks `fn` with a fresh walker; `facts`: those of another class of the file, whose
        launches count as forward's; `bound_class`: a @classmethod's class, its first
        parameter."""
        if site is not None:
            site.consumed = True
            binding = dict(
                keyword_kinds=site.keyword_kinds,
                star_kind=site.star_kind,
                callable_args=site.callables,
            )
        visit = (f"{key}:{default_kind.value}", tuple(arg_kinds))
        if self.depth > MAX_CALL_DEPTH:
            self.m.reject(fn, TOO_DEEP, rule="call-depth")
            return Kind.UNKNOWN
        if visit in self.m.visiting:
            return Kind.UNKNOWN
        self.m.visiting.add(visit)
        facts = facts or self.m
        before = facts.launches
        inner = type(self)(facts, {}, self.depth + 1)
        if bound_class is not None and is_method and isinstance(fn, ast.FunctionDef):
            first = (fn.args.posonlyargs + fn.args.args)[:1]
            for arg in first:  # `cls`
                inner.env[arg.arg], inner.class_params[arg.arg] = Kind.OBJECT, bound_class
        try:
            return inner.run(
                fn, is_method=is_method, arg_kinds=arg_kinds, default_kind=default_kind, **binding
            )
        finally:
            self.m.visiting.discard(visit)
            if facts is not self.m:
                self.m.launches += facts.launches - before


def _is_static(method: ast.FunctionDef) -> bool:
    """A @staticmethod has no `self` to skip among its parameters."""
    return any(isinstance(d, ast.Name) and d.id == "staticmethod" for d in method.decorator_list)


def _spread(kind: Kind) -> Kind:
    """The kind of each value `*xs` or `**kw` spreads into parameters."""
    return element_of(kind) if kind != Kind.TENSOR else Kind.TENSOR


def _widest(a: Kind | None, b: Kind) -> Kind:
    if a is None or a == b:
        return b
    if Kind.TENSOR in (a, b):
        return Kind.TENSOR
    return Kind.TENSORS if Kind.TENSORS in (a, b) else Kind.UNKNOWN


def _device_fact(what: str) -> str:
    return (
        f"`{what}` reads which devices this machine has; forward may not depend on it (the "
        "judge sees one GPU at index 0, a user's rank may sit on another): pass the device on "
        "with the tensors (`x.device`)"
    )
