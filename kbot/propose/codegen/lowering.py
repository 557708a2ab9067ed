"""Lowering ATen nodes to Triton expressions evaluated at symbolic tile indices.

A value is asked for at an index: one `Ix` per dim of the node, each a Triton expression over the
program's row and column indices. View ops (slice, chunk, ::2, unsqueeze, expand, permute,
reshape, cat) only rewrite indices; gathers (`cos[positions]`) load an index tensor and use it as
an index; compute ops become fp32 Triton expressions; graph inputs become masked loads whose
mask is exactly the bounds conditions of the indices they use. Results are memoised per
(node, index), so a value used twice is computed once.
"""

from __future__ import annotations

import operator

import torch
import torch.fx

from kbot.propose.codegen.indexing import ZERO, Ix, shape_of
from kbot.propose.codegen.ops import (
    FLOAT_TYPES,
    FP8_TYPES,
    TL_DTYPES,
    compute,
    dtype_of,
    literal,
    supported,
)
from kbot.propose.codegen.scans import SCAN_FUNCTIONS, lower_scan
from kbot.propose.codegen.sizes import SizeNames
from kbot.propose.codegen.trace import TracedProblem, Unsupported
from kbot.propose.codegen.views import POOLS, lower_avg_pool, lower_view

aten = torch.ops.aten
# Products and the sums that would absorb them into an fma (KernelBody.product_before_sum).
_PRODUCTS = {aten.mul.Tensor, aten.mul.Scalar, aten.div.Tensor, aten.div.Scalar}
_SUMS = {
    aten.add.Tensor,
    aten.add.Scalar,
    aten.sub.Tensor,
    aten.sub.Scalar,
    aten.rsub.Tensor,
    aten.rsub.Scalar,
    aten.sum.dim_IntList,
    aten.mean.dim,
    aten.sum.default,
    aten.mean.default,
}
_PASS_THROUGH = {
    aten.neg.default,
    aten._to_copy.default,
    torch.ops.prims.convert_element_type.default,
}


IDENTITY_OPS = {
    aten.alias.default,
    aten.clone.default,
    aten.lift_fresh_copy.default,
    aten.detach.default,
}
_ARANGES = (aten.arange.default, aten.arange.start, aten.arange.start_step)
# `sum(x)` and `mean(x)` reduce every dim (a 0-dim result).
FULL_REDUCTIONS = {aten.sum.default: "sum", aten.mean.default: "mean"}
REDUCTIONS = {
    aten.sum.dim_IntList: "sum",
    aten.mean.dim: "mean",
    aten.amax.default: "max",
    aten.amin.default: "min",
    # The index of the first max/min (ties go to the lower index, as torch does): one pass only.
    aten.argmax.default: "argmax",
    aten.argmin.default: "argmin",
    # Inclusive scans along one dim: full-shaped, computed in the one-pass row schedule where
    # they are read (scans.py).
    aten.cumsum.default: "cumsum",
    aten.cumprod.default: "cumprod",
    **FULL_REDUCTIONS,
}
ARG_REDUCTIONS = ("argmax", "argmin")
SCANS = ("cumsum", "cumprod")
# Kinds only the one-pass row schedule carries (the whole row in registers).
ONE_PASS_ONLY = ARG_REDUCTIONS + SCANS
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
    aten.flip.default,
    aten.repeat.default,
    aten.index.Tensor,
    aten.index_select.default,
    aten.embedding.default,
    aten.constant_pad_nd.default,
    aten.gather.default,
    operator.getitem,
}


_ROUNDINGS = {aten.round.default, aten.floor.default, aten.ceil.default, aten.trunc.default}


def _quantizes(node: torch.fx.Node) -> bool:
    """A cast to fp8, a rounding to integers or a cast from a float type to an integer one."""
    dtype = dtype_of(node)
    if dtype in FP8_TYPES or node.target in _ROUNDINGS:
        return True
    if node.target != aten._to_copy.default or dtype is None or dtype.is_floating_point:
        return False
    source = node.args[0]
    source_dtype = dtype_of(source) if isinstance(source, torch.fx.Node) else None
    return dtype != torch.bool and source_dtype is not None and source_dtype.is_floating_point


def _paren(expr: str) -> str:
    return expr if expr.isidentifier() or expr.isdigit() else f"({expr})"


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
        # Constants that follow a float attribute (trace.py's second trace): written as it.
        self._attr_constants = traced.attr_constants
        self._lowering: list[str] = []  # the nodes being lowered, innermost last
        self._memo: dict[tuple, str] = {}
        self._taken: set[str] = set()
        self._commented: set[str] = set()
        self.indent = 0
        # Cache hint for loads of full rows: "evict_last" while a looped reduction will read the
        # row again, "evict_first" on the last read; None (no hint) elsewhere.
        self.eviction: str | None = None
        # The GPU's math library where it saves ALU time at the same fp32 accuracy: tanh by
        # libdevice on the GPU, division by a scalar as a multiply by its reciprocal (ops.py).
        self.gpu_math = False
        # Division rounded as torch divides (IEEE, `tl.div_rn`) where the graph quantizes (casts
        # to fp8, rounds or casts to an integer): such outputs are compared bit for bit, and a
        # division one ulp off can cross one of their rounding boundaries.
        self.exact_division = any(_quantizes(n) for n in traced.graph.nodes)
        # The one-pass schedule's tile index: scans are computed where they are read (scans.py).
        self.scan_tile: tuple[Ix, ...] | None = None
        # The row schedules' tile index: a reduction's per-row value is that row's only, so a
        # read at another row (through a flip, a shift or a slice across rows) is refused.
        self.row_tile: tuple[Ix, ...] | None = None

    def _evict(self, mask: str) -> str:
        # Only a row's own data: parameters shared by all rows (a weight) keep the default.
        if self.eviction and "row_mask" in mask and "col_mask" in mask:
            return f', eviction_policy="{self.eviction}"'
        return ""

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
        if name.isidentifier() and name not in self.used_sizes:
            self.used_sizes.append(name)
            self.reserve(name)
        return name

    def rounds(self, node: torch.fx.Node) -> bool:
        """Whether a computed low-precision value is rounded where it is made: not when its
        only use is being stored as an output (the store rounds) or it is a cast (ops.py)."""
        if dtype_of(node) not in (torch.bfloat16, torch.float16):
            return False
        if node.target == aten._to_copy.default:
            return False
        return not all(user.op == "output" for user in node.users)

    def rounded(self, expr: str, dtype: torch.dtype, before_sum: bool = False) -> str:
        """`expr` rounded to a low-precision dtype and widened back to fp32. `before_sum`: a
        product an add consumes, rounded so that the GPU compiler cannot fuse the two."""
        bf16 = dtype == torch.bfloat16
        if not before_sum and not bf16:
            return f"({expr}).to({TL_DTYPES[dtype]}).to(tl.float32)"
        if bf16:
            self.helpers.add("_round_to_bf16")  # also the CPU branch of the product helper
        if before_sum:
            helper = "_round_product_to_bf16" if bf16 else "_round_product_to_fp16"
            self.helpers.add(helper)
        else:
            helper = "_round_to_bf16"
        return f"{helper}({expr}, BITWISE_ROUNDING)"

    @staticmethod
    def product_before_sum(value: object, rounded: torch.fx.Node) -> bool:
        """Whether `value`, rounded at `rounded`, is a product whose rounded result an add,
        subtract or sum consumes (also through a negation or a cast): the pattern LLVM
        contracts into an fma on the GPU, skipping the rounding between them."""
        if not isinstance(value, torch.fx.Node) or value.target not in _PRODUCTS:
            return False
        users = list(rounded.users)
        users += [u for n in users if n.target in _PASS_THROUGH for u in n.users]
        return any(u.target in _SUMS for u in users)

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
                # A literal index (`x[:, 1]`) is a Python int in the kernel: it has no `.to`.
                expr = f"tl.cast({expr}, tl.int64)" if expr.isdigit() else f"{expr}.to(tl.int64)"
            terms.append(f"{expr} * {arg}_stride{dim}")
        return (" + ".join(terms) or "0"), " & ".join(guards)

    def load(self, node: torch.fx.Node, arg: str, idx: tuple[Ix, ...]) -> str:
        offset, mask = self.offset(arg, idx)
        dtype = dtype_of(node)
        if dtype not in TL_DTYPES:
            raise Unsupported(f"input dtype {dtype} (codegen handles float32/bf16/fp16/ints/bool)")
        cast = ".to(tl.float32)" if dtype in FLOAT_TYPES + FP8_TYPES else ""
        other = ", other=0.0" if dtype in FLOAT_TYPES + FP8_TYPES else ", other=0"
        var = self.fresh(arg)
        pointer = f"{arg}_ptr + {offset}" if offset != "0" else f"{arg}_ptr"
        if mask:
            self.emit(f"{var} = tl.load({pointer}, mask={mask}{other}{self._evict(mask)}){cast}")
        else:
            self.emit(f"{var} = tl.load({pointer}){cast}")
        return var

    # -- values -------------------------------------------------------------------------
    def value(self, node: object, idx: tuple[Ix, ...]) -> str:
        if not isinstance(node, torch.fx.Node):
            return self.scalar(node)
        if node in self.precomputed:
            if self.row_tile is not None and node.target in REDUCTIONS:
                # A digit of a reshape (GroupNorm reads its group's statistics at
                # `(i1 * size_1 + c) // size_1`, which is i1) is the same row rewritten.
                home = {ix.expr for ix in self.row_tile} | {ZERO.expr}
                if any(ix.expr not in home and not ix.origin for ix in idx):
                    raise Unsupported(
                        f"{node.name}: a reduction read at another row than the tile's (a "
                        "flip, shift or slice across rows)"
                    )
            return self.precomputed[node]
        val = node.meta.get("val")
        if isinstance(val, (int, torch.SymInt)) and not isinstance(val, bool):
            return self.size(val)  # size arithmetic: a launcher-computed integer argument
        if isinstance(val, torch.SymFloat):
            # A float computed from sizes (std's `n - 1`): the launcher computes it.
            return self.size(strip_to_float(val.node.expr))
        key = (node, idx)
        if key not in self._memo:
            self._lowering.append(node.name)
            try:
                self._memo[key] = self._lower(node, idx)
            finally:
                self._lowering.pop()
        return self._memo[key]

    def scalar(self, value: object) -> str:
        if isinstance(value, float) and not isinstance(value, bool):
            node = self._lowering[-1] if self._lowering else None
            follows = self._attr_constants.lookup(node, value)
            if follows is not None:
                if follows.attr not in self.float_args:
                    self.float_args.append(follows.attr)
                    self.reserve(follows.attr)
                return follows.expr
        if isinstance(value, torch.SymInt):
            return self.size(value)
        return literal(value)

    def operand(self, node: object, out_shape: tuple, idx: tuple[Ix, ...]) -> str:
        """A broadcast operand: right-aligned dims; size-1 dims read index 0."""
        if not isinstance(node, torch.fx.Node):
            return self.scalar(node)
        shape = shape_of(node)
        offset = len(out_shape) - len(shape)
        if offset < 0:
            raise Unsupported(f"{node.name} has more dims than the op it feeds")
        sub = []
        for dim, size in enumerate(shape):
            out_size = out_shape[offset + dim]
            if SizeNames.is_one(size) and not SizeNames.is_one(out_size):
                sub.append(ZERO)
            else:
                sub.append(idx[offset + dim])
        return self.value(node, tuple(sub))

    def _arange(self, node: torch.fx.Node, idx: tuple[Ix, ...]) -> str:
        """`arange(start, end, step)` at index i is `start + i * step` (triu/tril masks)."""
        args = list(node.args)
        if node.target == aten.arange.default:
            args = [0, *args]
        start, step = args[0], args[2] if len(args) > 2 else 1
        if not all(isinstance(v, (int, float)) for v in (start, step)):
            raise Unsupported(f"{node.name}: arange with tensor or symbolic bounds")
        value = idx[0].expr if start == 0 and step == 1 else f"({start} + {idx[0].expr} * {step})"
        floating = dtype_of(node) in (torch.float16, torch.bfloat16, torch.float32)
        return f"({value}).to(tl.float32)" if floating else value

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
            return lower_view(self, node, idx)
        if target in POOLS:
            return lower_avg_pool(self, node, idx)
        if target in IDENTITY_OPS:
            return self.value(node.args[0], idx)
        if target in SCAN_FUNCTIONS:
            return lower_scan(self, node, idx)
        if target in REDUCTIONS:
            raise Unsupported(f"{target} feeds a value the schedule cannot reach")
        if target in _ARANGES:
            return self._arange(node, idx)
        if target == aten.full_like.default:  # zeros_like(x): a constant, x is never read
            return self.scalar(node.args[1])
        if not supported(target):
            raise Unsupported(f"op {getattr(target, '__name__', target)} has no Triton lowering")
        out_shape = shape_of(node)
        args = [self.operand(a, out_shape, idx) for a in node.args if _is_operand(a)]
        self.comment_source(node)
        expr = compute(self, node, args)
        if self.rounds(node):
            # The reference rounds every bf16/fp16 result; so do we (math stays fp32). It
            # matters where values cancel, e.g. RoPE's q1 * cos - q2 * sin on large inputs.
            expr = self.rounded(expr, dtype_of(node), self.product_before_sum(node, node))
        if expr.isidentifier():  # a cast that is a no-op in fp32: reuse the value
            return expr
        var = self.fresh(node.name)
        self.emit(f"{var} = {expr}")
        return var


def strip_to_float(expr):  # type: ignore[no-untyped-def]
    """`ToFloat(s1) - 1.0` -> `s1 - 1.0`: Python (the launcher) does the promotion itself."""
    return expr.replace(lambda e: type(e).__name__ == "ToFloat", lambda e: e.args[0])


def _is_operand(arg: object) -> bool:
    return isinstance(arg, (torch.fx.Node, int, float))


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
