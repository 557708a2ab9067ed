"""The expressions forward's walk judges by their operands' kinds alone: literals, containers,
conditionals, comparisons and arithmetic (a tensor operand means PyTorch computing in forward).
A mixin of `forward_walk.Walker`, which dispatches each expression node to `_<NodeType>`."""

from __future__ import annotations

import ast

from kbot.evaluate.forward_kinds import Kind, container_of, join_arith


class OperatorRules:
    """Expression handlers that need only `expr`, `test` and `bind` of the walker."""

    def _Constant(self, node: ast.Constant) -> Kind:
        return Kind.SCALAR

    def _JoinedStr(self, node: ast.JoinedStr) -> Kind:
        for value in node.values:
            if isinstance(value, ast.FormattedValue) and self.expr(value.value) in (
                Kind.TENSOR,
                Kind.TENSORS,
            ):
                self.m.reject(value, "formatting a tensor reads its values in Python")
        return Kind.SCALAR

    def _Slice(self, node: ast.Slice) -> Kind:
        kinds = [self.expr(part) for part in (node.lower, node.upper, node.step) if part]
        return Kind.TENSOR if Kind.TENSOR in kinds else Kind.SCALAR

    def _Tuple(self, node: ast.Tuple) -> Kind:
        return container_of([self.expr(element) for element in node.elts])

    _List = _Set = _Tuple

    def _Dict(self, node: ast.Dict) -> Kind:
        return container_of([self.expr(v) for v in list(node.keys) + list(node.values) if v])

    def _Starred(self, node: ast.Starred) -> Kind:
        return self.expr(node.value)

    def _NamedExpr(self, node: ast.NamedExpr) -> Kind:
        kind = self.expr(node.value)
        self.bind(node.target, kind, node.value)
        return kind

    def _IfExp(self, node: ast.IfExp) -> Kind:
        self.test(node.test)
        a, b = self.expr(node.body), self.expr(node.orelse)
        if a == b:
            return a
        if Kind.TENSOR in (a, b):
            return Kind.TENSOR
        return Kind.TENSORS if Kind.TENSORS in (a, b) else Kind.UNKNOWN

    def _BoolOp(self, node: ast.BoolOp) -> Kind:
        kinds = [self.test(v) for v in node.values[:-1]] + [self.expr(node.values[-1])]
        if all(k == Kind.SCALAR for k in kinds):
            return Kind.SCALAR
        # `a or b` evaluates to one of its operands: a tensor stays a tensor.
        if Kind.TENSOR in kinds:
            return Kind.TENSOR
        return Kind.TENSORS if Kind.TENSORS in kinds else Kind.UNKNOWN

    def _Compare(self, node: ast.Compare) -> Kind:
        kinds = [self.expr(node.left)] + [self.expr(c) for c in node.comparators]
        identity = all(isinstance(op, (ast.Is, ast.IsNot)) for op in node.ops)
        if Kind.TENSOR in kinds and not identity:
            self.m.reject(
                node, f"`{ast.unparse(node)}` compares tensors with PyTorch; do it in the kernel"
            )
        elif Kind.TENSORS in kinds and not identity:
            self.m.reject(
                node,
                f"`{ast.unparse(node)}` compares tensors with PyTorch, or a container that may "
                "hold them (one that forward fills or changes, such as a module-level cache, "
                "counts as one); compare plain numbers, or do it in the kernel",
            )
        return Kind.SCALAR

    def _UnaryOp(self, node: ast.UnaryOp) -> Kind:
        kind = self.expr(node.operand)
        if kind in (Kind.TENSOR, Kind.TENSORS):
            self.m.reject(
                node, f"`{ast.unparse(node)}` is tensor arithmetic in PyTorch; do it in the kernel"
            )
        return Kind.SCALAR if kind == Kind.SCALAR or isinstance(node.op, ast.Not) else kind

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
