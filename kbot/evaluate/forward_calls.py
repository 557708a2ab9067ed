"""The call rules of the forward check: what each call in forward's call graph is (a Triton
launch, a followed helper or method, an allowed `torch` allocation/view/query, a declared extern
op, a Python builtin) and the rejection, with its hint, for everything else. Tables of what is
allowed live in `allowed`; the statement and expression walk lives in `forward_walk`."""

from __future__ import annotations

import ast
import builtins

from kbot.evaluate.allowed import (
    ALLOC_METHODS,
    CAST_METHODS,
    CONTAINER_METHODS,
    EXTERN_CALLS,
    OTHER_BUILTINS,
    QUERY_METHODS,
    SCALAR_BUILTINS,
    TORCH_ALLOC,
    TORCH_QUERIES,
    TORCH_VIEWS,
    VIEW_METHODS,
)
from kbot.evaluate.forward_kinds import MAYBE_TENSOR, ForwardFacts, Kind
from kbot.evaluate.names import forbidden


class CallRules:
    """The call half of `forward_walk.Walker`, which mixes it in and supplies `expr` (an
    expression's kind), `taint` (a container now holds a tensor) and the state below; `follow`
    walks a called function with a fresh walker of the same class."""

    m: ForwardFacts
    env: dict[str, Kind]
    depth: int

    def _Call(self, node: ast.Call) -> Kind:
        func = node.func
        arg_kinds = tuple(self.expr(a) for a in node.args)
        self.keyword_kinds = {k.arg: self.expr(k.value) for k in node.keywords if k.arg}
        # kernel[grid](...): a launch.
        if (
            isinstance(func, ast.Subscript)
            and isinstance(func.value, ast.Name)
            and func.value.id in self.m.kernels
        ):
            self.expr(func.slice)
            self.m.launches += 1
            return Kind.UNKNOWN
        dotted = self.m.aliases.qualname(func)
        if dotted is not None:
            return self.torch_call(node, dotted, arg_kinds)
        if isinstance(func, ast.Name):
            return self.name_call(node, func.id, arg_kinds)
        if isinstance(func, ast.Attribute):
            return self.method_call(node, func, arg_kinds)
        self.expr(func)
        self.m.reject(node, f"`{ast.unparse(func)}(...)` calls something kbot cannot check")
        return Kind.UNKNOWN

    def name_call(self, node: ast.Call, name: str, arg_kinds: tuple[Kind, ...]) -> Kind:
        if name in self.env:
            if self.env[name] != Kind.FUNCTION:
                self.m.reject(node, f"`{name}(...)` calls a value kbot cannot check")
            return Kind.UNKNOWN
        if name in self.m.kernels:
            self.m.reject(node, f"`{name}(...)` calls a Triton kernel without a grid")
            return Kind.UNKNOWN
        if name in self.m.functions:
            return self.follow(f"fn:{name}", self.m.functions[name], arg_kinds, is_method=False)
        if name in SCALAR_BUILTINS:
            if (Kind.TENSOR in arg_kinds or Kind.TENSORS in arg_kinds) and name not in (
                "isinstance",
                "len",
                "hasattr",
                "callable",
            ):
                self.m.reject(
                    node, f"`{name}(...)` on a tensor runs PyTorch compute; do it in the kernel"
                )
            return Kind.SCALAR
        if name in OTHER_BUILTINS:
            return (
                Kind.CONTAINER
                if name in ("tuple", "list", "dict", "set", "range", "enumerate", "zip")
                else Kind.UNKNOWN
            )
        if hasattr(builtins, name):
            self.m.reject(node, f"`{name}(...)` is not allowed in forward")
            return Kind.UNKNOWN
        self.m.reject(node, f"`{name}(...)` is not defined in the candidate")
        return Kind.UNKNOWN

    def method_call(self, node: ast.Call, func: ast.Attribute, arg_kinds: tuple[Kind, ...]) -> Kind:
        name = func.attr
        if isinstance(func.value, ast.Name) and func.value.id == "self":
            if name in self.m.methods:
                return self.follow(
                    f"method:{name}", self.m.methods[name], arg_kinds, is_method=True
                )
            layer = self.m.self_modules.get(name)
            if layer is not None and self.m.extern_allowed(layer):
                return Kind.TENSOR
            self.m.reject(
                node,
                f"`self.{name}(...)` runs a PyTorch module in forward"
                + (f" ({layer}); declare it in KBOT extern_ops" if layer else ""),
            )
            return Kind.UNKNOWN
        receiver = self.expr(func.value)
        if receiver == Kind.CONTAINER and any(k in MAYBE_TENSOR for k in arg_kinds):
            self.taint(func.value)  # parts.append(x)
            return Kind.UNKNOWN
        if receiver == Kind.TENSORS:
            return Kind.TENSOR  # parts.pop(), table.get(key)
        if receiver in (Kind.CONTAINER, Kind.SCALAR, Kind.META):
            return Kind.UNKNOWN
        if name in QUERY_METHODS:
            return Kind.SHAPE if name in ("size", "stride") and not node.args else Kind.SCALAR
        if name in VIEW_METHODS:
            return Kind.TENSOR
        if name in ALLOC_METHODS:
            if name == "fill_" and Kind.TENSOR in arg_kinds:
                self.m.reject(node, "`fill_` with a tensor value is a copy in PyTorch")
            return Kind.TENSOR
        if self.m.extern_allowed(f"torch.Tensor.{name}"):
            return Kind.TENSOR
        if receiver == Kind.UNKNOWN and name in CONTAINER_METHODS:
            return Kind.UNKNOWN
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

    def torch_call(self, node: ast.Call, dotted: str, arg_kinds: tuple[Kind, ...]) -> Kind:
        root = dotted.split(".")[0]
        if root == "triton":
            return Kind.SCALAR
        if root != "torch":
            return (
                Kind.SCALAR
                if root in ("math", "operator") and Kind.TENSOR not in arg_kinds
                else self._other_module_call(node, dotted, arg_kinds)
            )
        return self.check_torch_name(node, dotted, called=True)

    def _other_module_call(self, node: ast.Call, dotted: str, arg_kinds) -> Kind:
        if Kind.TENSOR in arg_kinds:
            self.m.reject(node, f"`{dotted}(...)` on a tensor in forward")
        return Kind.UNKNOWN

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
        self, key: str, fn: ast.FunctionDef, arg_kinds: tuple[Kind, ...], is_method: bool
    ) -> Kind:
        visit = (key, arg_kinds)
        if visit in self.m.visiting or self.depth > 20:
            return Kind.UNKNOWN
        self.m.visiting.add(visit)
        keyword_kinds = dict(getattr(self, "keyword_kinds", {}))
        try:
            return type(self)(self.m, {}, self.depth + 1).run(
                fn, is_method=is_method, arg_kinds=arg_kinds, keyword_kinds=keyword_kinds
            )
        finally:
            self.m.visiting.discard(visit)
