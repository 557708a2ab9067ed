"""Walking forward's call graph: each value's kind (tensor, Python number, container) is
tracked through assignments, so grid math on sizes passes and tensor math is reported with its
line. This module walks statements and expressions; what a call may be is decided in
`forward_calls`, the kinds and the checker's facts are in `forward_kinds`. Used by
`forward_path.check`."""

from __future__ import annotations

import ast

from kbot.evaluate.allowed import SCALAR_ATTRS, TENSOR_ATTRS
from kbot.evaluate.forward_calls import CallRules
from kbot.evaluate.forward_kinds import (
    MAYBE_TENSOR,
    ForwardFacts,
    Kind,
    element_of,
    join_arith,
)


class Walker(CallRules):
    """Walks one function body in order, binding names to kinds and recording violations.
    Calls are judged by `CallRules` (forward_calls)."""

    def __init__(self, module: ForwardFacts, env: dict[str, Kind], depth: int = 0) -> None:
        self.m = module
        self.env = dict(env)
        self.depth = depth
        self.return_kinds: list[Kind] = []

    def run(
        self, fn: ast.FunctionDef, is_method: bool = False, arg_kinds=None, keyword_kinds=None
    ) -> Kind:
        keyword_kinds = keyword_kinds or {}
        args = fn.args.posonlyargs + fn.args.args
        defaults = fn.args.defaults
        first_default = len(args) - len(defaults)
        for index, arg in enumerate(args):
            if is_method and index == 0:
                continue
            if arg_kinds is not None and index - int(is_method) < len(arg_kinds):
                kind = arg_kinds[index - int(is_method)]
            elif arg.arg in keyword_kinds:
                kind = keyword_kinds[arg.arg]
            elif index >= first_default and isinstance(
                defaults[index - first_default], ast.Constant
            ):
                kind = Kind.SCALAR
            elif _annotation_is_number(arg.annotation):
                kind = Kind.SCALAR
            else:
                kind = Kind.TENSOR if is_method and fn.name == "forward" else Kind.UNKNOWN
            self.env[arg.arg] = kind
        for arg in fn.args.kwonlyargs:
            if arg.arg in keyword_kinds:
                self.env[arg.arg] = keyword_kinds[arg.arg]
            else:
                number = _annotation_is_number(arg.annotation)
                self.env[arg.arg] = Kind.SCALAR if number else Kind.UNKNOWN
        for extra in (fn.args.vararg, fn.args.kwarg):
            if extra is not None:
                self.env[extra.arg] = Kind.TENSORS
        for stmt in fn.body:
            self.stmt(stmt)
        if self.return_kinds and all(k == Kind.SCALAR for k in self.return_kinds):
            return Kind.SCALAR
        return Kind.TENSOR if Kind.TENSOR in self.return_kinds else Kind.UNKNOWN

    # ---- statements -------------------------------------------------------------------
    def stmt(self, node: ast.stmt) -> None:
        if isinstance(node, ast.Assign):
            kind = self.expr(node.value)
            for target in node.targets:
                self.bind(target, kind, node.value)
        elif isinstance(node, ast.AnnAssign):
            kind = self.expr(node.value) if node.value is not None else Kind.UNKNOWN
            self.bind(node.target, kind, node.value)
        elif isinstance(node, ast.AugAssign):
            left = self.expr(_as_load(node.target))
            right = self.expr(node.value)
            self.arith(node, left, right, node.op)
            self.bind(node.target, join_arith(left, right), None)
        elif isinstance(node, ast.Return):
            self.return_kinds.append(
                self.expr(node.value) if node.value is not None else Kind.SCALAR
            )
        elif isinstance(node, ast.Expr):
            self.expr(node.value)
        elif isinstance(node, (ast.If, ast.While)):
            self.expr(node.test)
            for child in node.body + node.orelse:
                self.stmt(child)
        elif isinstance(node, ast.For):
            iter_kind = self.expr(node.iter)
            is_range = (
                isinstance(node.iter, ast.Call)
                and isinstance(node.iter.func, ast.Name)
                and node.iter.func.id == "range"
            )
            element = Kind.SCALAR if is_range else element_of(iter_kind)
            self.bind(node.target, element, None)
            for child in node.body + node.orelse:
                self.stmt(child)
        elif isinstance(node, ast.With):
            for item in node.items:
                self.expr(item.context_expr)
                if item.optional_vars is not None:
                    self.bind(item.optional_vars, Kind.UNKNOWN, None)
            for child in node.body:
                self.stmt(child)
        elif isinstance(node, ast.Assert):
            self.expr(node.test)
        elif isinstance(node, ast.FunctionDef):
            self.env[node.name] = Kind.FUNCTION  # a local grid function
            self.m.functions.setdefault(f"<local>{node.name}", node)
            Walker(
                self.m, {**self.env, **{a.arg: Kind.META for a in node.args.args}}, self.depth + 1
            ).body(node)
        elif isinstance(node, ast.Try):
            for child in node.body + node.orelse + node.finalbody:
                self.stmt(child)
        elif isinstance(node, ast.Raise) and node.exc is not None:
            self.expr(node.exc)
        # pass/break/continue/global/nonlocal/del/import carry no compute.

    def body(self, fn: ast.FunctionDef) -> None:
        for stmt in fn.body:
            self.stmt(stmt)

    def bind(self, target: ast.AST, kind: Kind, value: ast.AST | None) -> None:
        if isinstance(target, ast.Name):
            self.env[target.id] = kind
        elif isinstance(target, (ast.Tuple, ast.List)):
            if isinstance(value, (ast.Tuple, ast.List)) and len(value.elts) == len(target.elts):
                for sub, sub_value in zip(target.elts, value.elts):
                    self.bind(sub, self.expr(sub_value), sub_value)
                return
            element = Kind.TENSOR if kind == Kind.TENSOR else element_of(kind)  # a, b = x.chunk(2)
            for sub in target.elts:
                self.bind(sub, element, None)
        elif isinstance(target, ast.Starred):
            self.bind(target.value, Kind.TENSORS if kind in MAYBE_TENSOR else Kind.CONTAINER, None)
        elif isinstance(target, ast.Subscript):
            base = self.expr(target.value)
            self.expr(target.slice)
            if base == Kind.CONTAINER and kind in MAYBE_TENSOR:
                self.taint(target.value)  # the container now holds a tensor
            elif base not in (Kind.CONTAINER, Kind.TENSORS, Kind.META):
                self.m.reject(
                    target,
                    f"`{ast.unparse(target)} = ...` writes into a tensor with PyTorch; "
                    "write outputs from the Triton kernel",
                )
        elif isinstance(target, ast.Attribute):
            self.expr(target.value)

    def taint(self, container: ast.AST) -> None:
        """A local container that received a tensor: its elements are tensors from now on."""
        if isinstance(container, ast.Name) and container.id in self.env:
            self.env[container.id] = Kind.TENSORS

    # ---- expressions ------------------------------------------------------------------
    def expr(self, node: ast.AST | None) -> Kind:
        if node is None:
            return Kind.SCALAR
        method = getattr(self, f"_{type(node).__name__}", None)
        if method is not None:
            return method(node)
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.expr):
                self.expr(child)
        return Kind.UNKNOWN

    def _Constant(self, node: ast.Constant) -> Kind:
        return Kind.SCALAR

    def _JoinedStr(self, node: ast.JoinedStr) -> Kind:
        return Kind.SCALAR

    def _Name(self, node: ast.Name) -> Kind:
        if node.id in self.env:
            return self.env[node.id]
        if node.id in self.m.constants:
            return self.m.constants[node.id]
        if node.id in self.m.aliases.names:
            self.check_torch_name(node, self.m.aliases.names[node.id], called=False)
            return Kind.SCALAR
        return Kind.UNKNOWN

    def _Attribute(self, node: ast.Attribute) -> Kind:
        dotted = self.m.aliases.qualname(node)
        if dotted is not None:
            self.check_torch_name(node, dotted, called=False)
            return Kind.SCALAR
        if isinstance(node.value, ast.Name) and node.value.id == "self":
            return self.m.self_kinds.get(node.attr, Kind.UNKNOWN)
        base = self.expr(node.value)
        if node.attr == "shape":
            return Kind.SHAPE
        if node.attr in SCALAR_ATTRS:
            return Kind.SCALAR
        if node.attr in TENSOR_ATTRS and base in (Kind.TENSOR, Kind.UNKNOWN):
            return Kind.TENSOR
        return Kind.UNKNOWN

    def _Subscript(self, node: ast.Subscript) -> Kind:
        base = self.expr(node.value)
        index = self.expr(node.slice)
        if base in (Kind.SHAPE, Kind.META, Kind.CONTAINER):
            return Kind.SCALAR
        if base == Kind.TENSORS:
            return Kind.TENSOR
        if base == Kind.TENSOR:
            if index == Kind.TENSOR:
                self.m.reject(
                    node, f"`{ast.unparse(node)}` gathers with a tensor index; gather in the kernel"
                )
            return Kind.TENSOR
        return Kind.UNKNOWN

    def _Slice(self, node: ast.Slice) -> Kind:
        for part in (node.lower, node.upper, node.step):
            if part is not None:
                self.expr(part)
        return Kind.SCALAR

    def _Tuple(self, node: ast.Tuple) -> Kind:
        kinds = [self.expr(element) for element in node.elts]
        return Kind.TENSORS if any(k in MAYBE_TENSOR for k in kinds) else Kind.CONTAINER

    _List = _Set = _Tuple

    def _Dict(self, node: ast.Dict) -> Kind:
        kinds = [self.expr(v) for v in list(node.keys) + list(node.values) if v is not None]
        return Kind.TENSORS if any(k in MAYBE_TENSOR for k in kinds) else Kind.CONTAINER

    def _Starred(self, node: ast.Starred) -> Kind:
        return self.expr(node.value)

    def _Lambda(self, node: ast.Lambda) -> Kind:
        inner = Walker(
            self.m, {**self.env, **{a.arg: Kind.META for a in node.args.args}}, self.depth + 1
        )
        inner.expr(node.body)
        return Kind.FUNCTION

    def _comprehension(self, node) -> Kind:
        inner = Walker(self.m, self.env, self.depth)
        for generator in node.generators:
            iter_kind = inner.expr(generator.iter)
            is_range = (
                isinstance(generator.iter, ast.Call)
                and isinstance(generator.iter.func, ast.Name)
                and generator.iter.func.id == "range"
            )
            inner.bind(
                generator.target,
                Kind.SCALAR if is_range else element_of(iter_kind),
                None,
            )
            for condition in generator.ifs:
                inner.expr(condition)
        if isinstance(node, ast.DictComp):
            inner.expr(node.key)
            inner.expr(node.value)
        else:
            inner.expr(node.elt)
        return Kind.CONTAINER

    _ListComp = _SetComp = _GeneratorExp = _DictComp = _comprehension

    def _NamedExpr(self, node: ast.NamedExpr) -> Kind:
        kind = self.expr(node.value)
        self.bind(node.target, kind, node.value)
        return kind

    def _IfExp(self, node: ast.IfExp) -> Kind:
        self.expr(node.test)
        a, b = self.expr(node.body), self.expr(node.orelse)
        return a if a == b else (Kind.TENSOR if Kind.TENSOR in (a, b) else Kind.UNKNOWN)

    def _BoolOp(self, node: ast.BoolOp) -> Kind:
        kinds = [self.expr(v) for v in node.values]
        return Kind.SCALAR if all(k == Kind.SCALAR for k in kinds) else Kind.UNKNOWN

    def _Compare(self, node: ast.Compare) -> Kind:
        kinds = [self.expr(node.left)] + [self.expr(c) for c in node.comparators]
        identity = all(isinstance(op, (ast.Is, ast.IsNot)) for op in node.ops)
        if Kind.TENSOR in kinds and not identity:
            self.m.reject(
                node, f"`{ast.unparse(node)}` compares tensors with PyTorch; do it in the kernel"
            )
        return Kind.SCALAR

    def _UnaryOp(self, node: ast.UnaryOp) -> Kind:
        kind = self.expr(node.operand)
        if kind == Kind.TENSOR and not isinstance(node.op, ast.Not):
            self.m.reject(
                node, f"`{ast.unparse(node)}` is tensor arithmetic in PyTorch; do it in the kernel"
            )
        return Kind.SCALAR if kind == Kind.SCALAR else kind

    def _BinOp(self, node: ast.BinOp) -> Kind:
        left, right = self.expr(node.left), self.expr(node.right)
        if isinstance(node.op, ast.MatMult):
            if self.m.extern_allowed("torch.matmul"):
                return Kind.TENSOR
            self.m.reject(
                node,
                f"`{ast.unparse(node)}` is a matmul; declare KBOT extern_ops=['matmul'] in the problem or do it in Triton",
            )
            return Kind.TENSOR
        self.arith(node, left, right, node.op)
        return join_arith(left, right)

    def arith(self, node: ast.AST, left: Kind, right: Kind, op: ast.operator) -> None:
        if Kind.TENSOR in (left, right) or Kind.TENSORS in (left, right):
            self.m.reject(
                node, f"`{ast.unparse(node)}` is tensor arithmetic in PyTorch; do it in the kernel"
            )


def _annotation_is_number(annotation: ast.AST | None) -> bool:
    return isinstance(annotation, ast.Name) and annotation.id in ("int", "float", "bool", "str")


def _as_load(target: ast.AST) -> ast.AST:
    clone = ast.parse(ast.unparse(target), mode="eval").body
    return ast.copy_location(clone, target)
