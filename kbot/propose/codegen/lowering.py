"""Lowering ATen nodes to Triton expressions evaluated at symbolic tile indices.

A value is asked for at an index: one `Ix` per dim of the node, each a Triton expression over the
program's row and column indices. View ops (slice, chunk, ::2, unsqueeze, expand, permute,
reshape, cat) only rewrite indices; gathers (`cos[positions]`) load an index tensor and use it as
an index; compute ops become fp32 Triton expressions; graph inputs become masked loads whose
mask is exactly the bounds conditions of the indices they use. Results are memoised per
(node, index), so a value used twice is computed once.
"""

from __future__ import annotations

import math
import operator
from dataclasses import dataclass

import torch
import torch.fx

from kbot.propose.codegen.sizes import SizeNames
from kbot.propose.codegen.trace import TracedProblem, Unsupported

aten = torch.ops.aten

FLOAT_TYPES = (torch.float32, torch.bfloat16, torch.float16)
TL_DTYPES = {
    torch.float32: "tl.float32",
    torch.bfloat16: "tl.bfloat16",
    torch.float16: "tl.float16",
    torch.int64: "tl.int64",
    torch.int32: "tl.int32",
    torch.int16: "tl.int16",
    torch.int8: "tl.int8",
    torch.uint8: "tl.uint8",
    torch.bool: "tl.int1",
}


@dataclass(frozen=True)
class Ix:
    """An index along one dim: a Triton expression and the conditions that keep it in bounds."""

    expr: str
    guards: tuple[str, ...] = ()
    wide: bool = False  # already int64 (row indices are), so `ix * stride` cannot overflow


ZERO = Ix("0")

_UNARY = {
    aten.exp.default: "tl.exp({a})",
    aten.exp2.default: "tl.exp2({a})",
    aten.log.default: "tl.log({a})",
    aten.log2.default: "tl.log2({a})",
    aten.sqrt.default: "tl.sqrt({a})",
    aten.rsqrt.default: "tl.rsqrt({a})",
    aten.sigmoid.default: "tl.sigmoid({a})",
    aten.abs.default: "tl.abs({a})",
    aten.neg.default: "(-{a})",
    aten.sin.default: "tl.sin({a})",
    aten.cos.default: "tl.cos({a})",
    aten.erf.default: "tl.math.erf({a})",
    aten.floor.default: "tl.floor({a})",
    aten.ceil.default: "tl.ceil({a})",
    aten.logical_not.default: "({a} == 0)",
    aten.sign.default: "tl.where({a} > 0, 1.0, tl.where({a} < 0, -1.0, 0.0))",
}
_BINARY = {
    aten.mul.Tensor: "{a} * {b}",
    aten.div.Tensor: "{a} / {b}",
    aten.maximum.default: "tl.maximum({a}, {b})",
    aten.minimum.default: "tl.minimum({a}, {b})",
    aten.eq.Tensor: "{a} == {b}",
    aten.eq.Scalar: "{a} == {b}",
    aten.ne.Tensor: "{a} != {b}",
    aten.ne.Scalar: "{a} != {b}",
    aten.lt.Tensor: "{a} < {b}",
    aten.lt.Scalar: "{a} < {b}",
    aten.le.Tensor: "{a} <= {b}",
    aten.le.Scalar: "{a} <= {b}",
    aten.gt.Tensor: "{a} > {b}",
    aten.gt.Scalar: "{a} > {b}",
    aten.ge.Tensor: "{a} >= {b}",
    aten.ge.Scalar: "{a} >= {b}",
    aten.logical_and.default: "({a} != 0) & ({b} != 0)",
    aten.logical_or.default: "({a} != 0) | ({b} != 0)",
    aten.bitwise_and.Tensor: "{a} & {b}",
    aten.bitwise_or.Tensor: "{a} | {b}",
}
_IDENTITY = {
    aten.alias.default,
    aten.clone.default,
    aten.lift_fresh_copy.default,
    aten.detach.default,
}
REDUCTIONS = {
    aten.sum.dim_IntList: "sum",
    aten.mean.dim: "mean",
    aten.amax.default: "max",
    aten.amin.default: "min",
}
VIEW_OPS = {
    aten.view.default,
    aten._unsafe_view.default,
    aten.reshape.default,
    aten.expand.default,
    aten.unsqueeze.default,
    aten.squeeze.dim,
    aten.squeeze.dims,
    aten.permute.default,
    aten.slice.Tensor,
    aten.select.int,
    aten.cat.default,
    aten.index.Tensor,
    aten.index_select.default,
    operator.getitem,
}


def shape_of(node: object) -> tuple:
    if isinstance(node, torch.fx.Node):
        val = node.meta.get("val")
        if isinstance(val, torch.Tensor):
            return tuple(val.shape)
    return ()


def dtype_of(node: object) -> torch.dtype | None:
    if isinstance(node, torch.fx.Node):
        val = node.meta.get("val")
        if isinstance(val, torch.Tensor):
            return val.dtype
    return None


def _paren(expr: str) -> str:
    return expr if expr.isidentifier() or expr.isdigit() else f"({expr})"


def literal(value: object) -> str:
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isinf(value):
            return "float('inf')" if value > 0 else "float('-inf')"
        if math.isnan(value):
            return "float('nan')"
        return repr(value)
    raise Unsupported(f"constant {value!r} of type {type(value).__name__}")


class KernelBody:
    """Accumulates one kernel's body lines and the arguments they need."""

    def __init__(self, traced: TracedProblem, sizes: SizeNames) -> None:
        self.traced = traced
        self.sizes = sizes
        self.lines: list[str] = []
        self.tensor_args: dict[str, tuple[str, int]] = {}  # node name -> (arg name, rank)
        self.arg_names = {g.node_name: g.arg_name for g in traced.inputs if g.is_tensor}
        self.precomputed: dict[torch.fx.Node, str] = {}
        self.extern_args: dict[str, str] = {}  # node name -> launcher tensor (extern results)
        self.helpers: set[str] = set()  # @triton.jit helpers the kernel calls
        self.used_sizes: list[str] = []  # size names this kernel takes as arguments
        self.float_args: list[str] = []  # Model attributes passed as kernel floats (eps ...)
        self._attr_by_value = {v: k for k, v in traced.float_attrs.items()}
        self._memo: dict[tuple, str] = {}
        self._taken: set[str] = set()
        self._commented: set[str] = set()
        self.indent = 0

    def forget(self) -> None:
        """Drops memoised values (leaving a loop: values computed inside it are out of scope)."""
        self._memo.clear()
        self._commented.clear()

    # -- naming and comments ------------------------------------------------------------
    def fresh(self, base: str) -> str:
        base = base if base.isidentifier() else "t"
        name, k = base, 1
        while name in self._taken:
            name, k = f"{base}_{k}", k + 1
        self._taken.add(name)
        return name

    def reserve(self, *names: str) -> None:
        self._taken.update(names)

    def emit(self, line: str) -> None:
        self.lines.append("    " * self.indent + line)

    def comment_source(self, node: torch.fx.Node) -> None:
        """Ties the next lines to the reference line the node came from (once per line)."""
        text = reference_line(node, self.traced.path)
        if text and text not in self._commented:
            self._commented.add(text)
            self.emit(f"# reference: {text}")

    def size(self, value: object) -> str:
        name = self.sizes.kernel(value)
        if not name.lstrip("-").isdigit() and name not in self.used_sizes:
            self.used_sizes.append(name)
            self.reserve(name)
        return name

    def rounded(self, expr: str, dtype: torch.dtype) -> str:
        """`expr` rounded to a low-precision dtype and widened back to fp32."""
        if dtype == torch.bfloat16:
            self.helpers.add("_round_to_bf16")
            return f"_round_to_bf16({expr})"
        return f"({expr}).to({TL_DTYPES[dtype]}).to(tl.float32)"

    # -- tensors ------------------------------------------------------------------------
    def tensor_arg(self, key: str, arg_name: str, rank: int) -> str:
        if key not in self.tensor_args:
            self.tensor_args[key] = (arg_name, rank)
            self.reserve(arg_name)
        return self.tensor_args[key][0]

    def offset(self, arg: str, idx: tuple[Ix, ...]) -> tuple[str, str]:
        """`(offset, mask)` of element `idx` of tensor argument `arg` (strides are arguments)."""
        terms: list[str] = []
        guards: list[str] = []
        last = len(idx) - 1
        for dim, ix in enumerate(idx):
            for guard in ix.guards:
                if guard not in guards:
                    guards.append(guard)
            if ix.expr == "0":
                continue
            expr = _paren(ix.expr)
            if not ix.wide and dim != last:
                expr = f"{expr}.to(tl.int64)"
            terms.append(f"{expr} * {arg}_stride{dim}")
        return (" + ".join(terms) or "0"), " & ".join(guards)

    def load(self, node: torch.fx.Node, arg: str, idx: tuple[Ix, ...]) -> str:
        offset, mask = self.offset(arg, idx)
        dtype = dtype_of(node)
        if dtype not in TL_DTYPES:
            raise Unsupported(f"input dtype {dtype} (codegen handles float32/bf16/fp16/ints/bool)")
        cast = ".to(tl.float32)" if dtype in FLOAT_TYPES else ""
        other = ", other=0.0" if dtype in FLOAT_TYPES else ", other=0"
        var = self.fresh(arg)
        pointer = f"{arg}_ptr + {offset}" if offset != "0" else f"{arg}_ptr"
        if mask:
            self.emit(f"{var} = tl.load({pointer}, mask={mask}{other}){cast}")
        else:
            self.emit(f"{var} = tl.load({pointer}){cast}")
        return var

    # -- values -------------------------------------------------------------------------
    def value(self, node: object, idx: tuple[Ix, ...]) -> str:
        if not isinstance(node, torch.fx.Node):
            return self.scalar(node)
        if node in self.precomputed:
            return self.precomputed[node]
        val = node.meta.get("val")
        if isinstance(val, (int, torch.SymInt)) and not isinstance(val, bool):
            return self.size(val)  # size arithmetic: a launcher-computed integer argument
        key = (node, idx)
        if key not in self._memo:
            self._memo[key] = self._lower(node, idx)
        return self._memo[key]

    def scalar(self, value: object) -> str:
        if isinstance(value, float) and not isinstance(value, bool):
            attr = self._attr_by_value.get(value)
            if attr is not None:
                if attr not in self.float_args:
                    self.float_args.append(attr)
                    self.reserve(attr)
                return attr
        if isinstance(value, torch.SymInt):
            return self.size(value)
        return literal(value)

    def operand(self, node: object, out_shape: tuple, idx: tuple[Ix, ...]) -> str:
        """A broadcast operand: right-aligned dims; size-1 dims read index 0."""
        if not isinstance(node, torch.fx.Node):
            return self.scalar(node)
        shape = shape_of(node)
        offset = len(out_shape) - len(shape)
        sub = []
        for dim, size in enumerate(shape):
            out_size = out_shape[offset + dim]
            if SizeNames.is_one(size) and not SizeNames.is_one(out_size):
                sub.append(ZERO)
            else:
                sub.append(idx[offset + dim])
        return self.value(node, tuple(sub))

    def _lower(self, node: torch.fx.Node, idx: tuple[Ix, ...]) -> str:
        if node.name in self.extern_args:
            arg = self.tensor_arg(node.name, self.extern_args[node.name], len(shape_of(node)))
            return self.load(node, arg, idx)
        if node.op == "placeholder":
            arg = self.arg_names.get(node.name)
            if arg is None:
                raise Unsupported(f"graph input {node.name} has no launcher argument")
            return self.load(node, self.tensor_arg(node.name, arg, len(shape_of(node))), idx)
        if node.op != "call_function":
            raise Unsupported(f"FX node kind {node.op}")
        target = node.target
        if target in VIEW_OPS:
            from kbot.propose.codegen.views import lower_view

            return lower_view(self, node, idx)
        if target in _IDENTITY:
            return self.value(node.args[0], idx)
        if target in REDUCTIONS:
            raise Unsupported(f"{target} feeds a value the schedule cannot reach")
        out_shape = shape_of(node)
        args = [self.operand(a, out_shape, idx) for a in node.args if _is_operand(a)]
        self.comment_source(node)
        expr = self._compute(node, args)
        dtype = dtype_of(node)
        if dtype in (torch.bfloat16, torch.float16) and node.target != aten._to_copy.default:
            # The reference rounds every low-precision op's result; so do we (math stays fp32).
            expr = self.rounded(expr, dtype)
        if expr.isidentifier():  # a cast that is a no-op in fp32: reuse the value
            return expr
        var = self.fresh(node.name)
        self.emit(f"{var} = {expr}")
        return var

    def _compute(self, node: torch.fx.Node, args: list[str]) -> str:
        target = node.target
        kwargs = node.kwargs
        if target in _UNARY:
            return _UNARY[target].format(a=args[0])
        if target == aten.tanh.default:
            self.helpers.add("_tanh")
            return f"_tanh({args[0]})"
        if target in (aten.mul.Tensor, aten.mul.Scalar) and args[1] in ("1", "1.0"):
            return args[0]  # alpha/beta of a decomposed addmm
        if target in (aten.mul.Tensor, aten.mul.Scalar) and args[0] in ("1", "1.0"):
            return args[1]
        if target in _BINARY:
            return _BINARY[target].format(a=args[0], b=args[1])
        if target in (aten.add.Tensor, aten.sub.Tensor, aten.add.Scalar, aten.sub.Scalar):
            alpha = kwargs.get("alpha", 1)
            rhs = args[1] if alpha == 1 else f"{args[1]} * {literal(alpha)}"
            op = "+" if target in (aten.add.Tensor, aten.add.Scalar) else "-"
            return f"{args[0]} {op} {rhs}"
        if target in (aten.mul.Scalar, aten.div.Scalar):
            return f"{args[0]} {'*' if target == aten.mul.Scalar else '/'} {args[1]}"
        if target in (aten.where.self, aten.where.ScalarSelf, aten.where.ScalarOther):
            return f"tl.where({args[0]}, {args[1]}, {args[2]})"
        if target in (aten.clamp.default, aten.clamp_min.default, aten.clamp_max.default):
            return _clamp(node, args[0], self)
        if target == aten.pow.Tensor_Scalar:
            return _pow(args[0], node.args[1])
        if target == aten.pow.Scalar:
            return f"tl.exp({args[1]} * {literal(math.log(node.args[0]))})"
        if target == aten._to_copy.default:
            return _cast(node, args[0], self)
        if target in (aten.full.default, aten.scalar_tensor.default):
            value = node.args[1] if target == aten.full.default else node.args[0]
            return literal(value)
        raise Unsupported(f"op {_op_name(target)} has no Triton lowering")


def _is_operand(arg: object) -> bool:
    return isinstance(arg, (torch.fx.Node, int, float))


def _op_name(target: object) -> str:
    return getattr(target, "__name__", str(target))


def _clamp(node: torch.fx.Node, a: str, body: KernelBody) -> str:
    if node.target == aten.clamp_min.default:
        lo, hi = node.args[1], None
    elif node.target == aten.clamp_max.default:
        lo, hi = None, node.args[1]
    else:
        lo = node.args[1] if len(node.args) > 1 else node.kwargs.get("min")
        hi = node.args[2] if len(node.args) > 2 else node.kwargs.get("max")
    expr = a
    if lo is not None:
        expr = f"tl.maximum({expr}, {body.scalar(lo)})"
    if hi is not None:
        expr = f"tl.minimum({expr}, {body.scalar(hi)})"
    return expr


def _pow(a: str, exponent: object) -> str:
    if exponent == 2:
        return f"{a} * {a}"
    if exponent == 3:
        return f"{a} * {a} * {a}"
    if exponent == 1:
        return a
    if exponent == 0.5:
        return f"tl.sqrt({a})"
    if exponent == -0.5:
        return f"tl.rsqrt({a})"
    if exponent == -1:
        return f"1.0 / {a}"
    if isinstance(exponent, (int, float)):
        # a**p = 2**(p*log2 a): NaN for a < 0, as torch gives for a non-integer p.
        return f"tl.exp2({literal(float(exponent))} * tl.log2({a}))"
    raise Unsupported(f"pow with exponent {exponent!r}")


def _cast(node: torch.fx.Node, a: str, body: KernelBody) -> str:
    src = dtype_of(node.args[0])
    dst = node.kwargs.get("dtype", dtype_of(node))
    if dst is None or dst == src:
        return a
    if dst in FLOAT_TYPES:
        if src in FLOAT_TYPES or src is None:
            # The reference rounds here; round too, then keep computing in fp32.
            if dst == torch.float32:
                return a
            return body.rounded(a, dst)
        return f"{a}.to(tl.float32)"
    if dst in TL_DTYPES:
        return f"{a}.to({TL_DTYPES[dst]})"
    raise Unsupported(f"cast to {dst}")


def reference_line(node: torch.fx.Node, path: str) -> str:
    """`line N: <code>` of the reference frame in the node's stack trace, if recorded."""
    trace = node.meta.get("stack_trace") or ""
    lines = trace.strip().splitlines()
    found = ""
    for k, line in enumerate(lines):
        line = line.strip()
        if line.startswith("File ") and "kbot_codegen_trace" not in line and path and path in line:
            number = line.split(", line ")[-1].split(",")[0]
            code = lines[k + 1].strip() if k + 1 < len(lines) else ""
            found = f"line {number}: {code}"
    return found


HELPERS = {
    "_tanh": '''@triton.jit
def _tanh(x):
    """tanh in fp32 without libdevice. 1 - 2 / (exp(2x) + 1) saturates cleanly at +-1 but
    loses relative precision near 0, where the odd Taylor series is exact to < 1e-10."""
    big = 1.0 - 2.0 / (tl.exp(2.0 * x) + 1.0)
    x2 = x * x
    small = x * (1.0 - x2 * (1.0 / 3.0 - x2 * (2.0 / 15.0 - x2 * (17.0 / 315.0))))
    return tl.where(tl.abs(x) < 0.1, small, big)
''',
    "_round_to_bf16": '''@triton.jit
def _round_to_bf16(x):
    """fp32 -> nearest-even bf16 value, kept in fp32: mirrors the reference's bf16 results.
    Done on the bits because Triton's CPU interpreter truncates in `.to(tl.bfloat16)`."""
    bits = x.to(tl.uint32, bitcast=True)
    bits = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) << 16
    return bits.to(tl.float32, bitcast=True)
''',
}
