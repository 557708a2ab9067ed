"""Symbolic sizes as names: what the launcher reads from the tensors and passes to a kernel.

Every size the kernel needs (a hidden size, half of it for a chunk, a slice bound) is computed
in the launcher from `tensor.shape` at call time and passed as an integer argument, so one
emitted kernel serves every case of a problem.
"""

from __future__ import annotations

import sympy
import torch
from torch.utils._sympy.printers import PythonPrinter

from kbot.propose.codegen.trace import TracedProblem, Unsupported


def size_expr(value: object) -> sympy.Expr:
    if isinstance(value, bool):
        raise Unsupported("a boolean where a size was expected")
    if isinstance(value, int):
        return sympy.Integer(value)
    if isinstance(value, torch.SymInt):
        return value.node.expr
    if isinstance(value, sympy.Expr):
        return value
    if isinstance(value, torch.fx.Node):
        return size_expr(value.meta["val"])
    raise Unsupported(f"size {value!r} is not an integer")


class SizeNames:
    """Names for symbolic sizes; `x_size1` for a dim of input `x`, `size_k` for expressions."""

    def __init__(self, traced: TracedProblem) -> None:
        self._symbols: dict[sympy.Symbol, str] = {}
        self._reads: list[str] = []  # launcher lines reading symbols off the inputs
        self._derived: dict[sympy.Expr, str] = {}
        self._derived_lines: list[str] = []
        self.used: list[str] = []  # names the kernel(s) need as integer arguments, in order
        self._hints: dict[sympy.Symbol, int] = {}  # traced values of the symbols
        placeholders = {n.name: n for n in traced.graph.nodes if n.op == "placeholder"}
        for graph_input in traced.inputs:
            if not (graph_input.is_tensor or graph_input.size_of):
                continue
            node = placeholders[graph_input.node_name]
            if not node.users and not graph_input.size_of:
                # state the graph never reads (torchtune's rotary keeps its `theta` beside the
                # table it indexes): the launcher is not passed it, so no size is read off it
                continue
            shape = node.meta["val"].shape
            for dim, size in enumerate(shape):
                expr = size_expr(size)
                if isinstance(expr, sympy.Symbol) and isinstance(size, torch.SymInt):
                    if size.node.hint is not None:
                        self._hints[expr] = int(size.node.hint)
                if isinstance(expr, sympy.Symbol) and expr not in self._symbols:
                    if graph_input.size_of:  # the integer argument is the size itself
                        self._symbols[expr] = graph_input.arg_name
                        continue
                    name = f"{graph_input.arg_name}_size{dim}"
                    self._symbols[expr] = name
                    self._reads.append(f"{name} = {graph_input.arg_name}.shape[{dim}]")

    def python(self, value: object) -> str:
        """The size as a Python expression over symbol names (for the launcher)."""
        expr = size_expr(value)
        if expr.is_Integer:
            return str(int(expr))
        if expr.is_Number:
            return repr(float(expr))
        unknown = expr.free_symbols - set(self._symbols)
        if unknown:
            raise Unsupported(f"size {expr} depends on values, not on input shapes")
        renamed = expr.xreplace({s: sympy.Symbol(n) for s, n in self._symbols.items()})
        return PythonPrinter().doprint(renamed)

    def kernel(self, value: object) -> str:
        """The size as a kernel argument name (or literal), recording that the kernel needs it."""
        expr = size_expr(value)
        if expr.is_Integer:
            return str(int(expr))
        if expr.is_Number:
            return repr(float(expr))
        constant = self._constant(expr)
        if constant is not None:
            return str(constant)
        if isinstance(expr, sympy.Symbol):
            name = self._symbols.get(expr)
            if name is None:
                raise Unsupported(f"size {expr} depends on values, not on input shapes")
        else:
            name = self._derived.get(expr)
            if name is None:
                name = f"size_{len(self._derived)}"
                self._derived_lines.append(f"{name} = {self.python(value)}")
                self._derived[expr] = name
        if name not in self.used:
            self.used.append(name)
        return name

    def _constant(self, expr: sympy.Expr) -> int | None:
        """The value of a size that is the same for every valid shape, e.g. `s1 // (s1 // 128)`
        (the 128 of `q.view(T, -1, 128)`): kernels then divide by a literal (a shift), not by a
        runtime integer. "Valid" means the traced sizes times any factor, as a view requires."""
        if isinstance(expr, sympy.Symbol) or expr.is_Integer:
            return None
        symbols = expr.free_symbols
        if not symbols or not symbols <= set(self._hints):
            return None
        if not expr.is_integer:
            return None
        values = {
            int(expr.xreplace({s: sympy.Integer(self._hints[s] * k) for s in symbols}))
            for k in (1, 2, 3, 5, 8)
        }
        return values.pop() if len(values) == 1 else None

    def equal(self, a: object, b: object) -> bool:
        """Whether two sizes are equal for every valid shape: symbolically, or by `_constant`'s
        test (`(s + 1) // 2` and `s - (s + 1) // 2`, a chunk's halves of an even width)."""
        difference = sympy.simplify(size_expr(a) - size_expr(b))
        if difference.is_Integer:
            return int(difference) == 0
        return self._constant(difference) == 0

    def launcher_lines(self) -> list[str]:
        return self._reads + self._derived_lines

    @staticmethod
    def is_one(value: object) -> bool:
        expr = size_expr(value)
        return bool(expr.is_Integer and int(expr) == 1)

    @staticmethod
    def same(a: object, b: object) -> bool:
        return sympy.simplify(size_expr(a) - size_expr(b)) == 0

    @staticmethod
    def same_shape(a: tuple, b: tuple) -> bool:
        return len(a) == len(b) and all(SizeNames.same(x, y) for x, y in zip(a, b))
