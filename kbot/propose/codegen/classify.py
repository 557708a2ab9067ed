"""Classifying a traced graph into a schedule: pointwise, row reduction, or matmul + epilogue.

The schedule fixes the iteration space the kernel tiles (`iter_shape`), which dim the tile's
columns run along (`col_dim`: the last dim for pointwise, the reduced dim for reductions), which
reductions are computed in which order (`levels`: a softmax needs its max before its sum), and
whether each output is full-shaped or one value per row.
"""

from __future__ import annotations

import operator
from dataclasses import replace

import torch
import torch.fx

from kbot.propose.codegen.lowering import (
    ARG_REDUCTIONS,
    FULL_REDUCTIONS,
    ONE_PASS_ONLY,
    REDUCTIONS,
    SCANS,
    VIEW_OPS,
    shape_of,
)
from kbot.propose.codegen.ops import FLOAT_TYPES, TL_DTYPES, dtype_of
from kbot.propose.codegen.scans import scan_tile
from kbot.propose.codegen.schedule import (
    OnlineSoftmax,
    OutputKind,
    Reduction,
    Schedule,
    ScheduleKind,
)
from kbot.propose.codegen.sizes import SizeNames
from kbot.propose.codegen.stages import ancestors, materialized, needed
from kbot.propose.codegen.trace import TracedProblem, Unsupported

aten = torch.ops.aten

MATMULS = {aten.mm.default, aten.bmm.default}
CONVOLUTIONS = {aten.convolution.default}


_VIEW_LIKE = VIEW_OPS | {aten.split_with_sizes.default, aten.split.Tensor}
_SIZE_OPS = {operator.add, operator.sub, operator.mul, operator.floordiv, operator.mod}


def compute_nodes(traced: TracedProblem) -> list[torch.fx.Node]:
    """Nodes the outputs depend on, in graph order, minus the size arithmetic."""
    needed: set[torch.fx.Node] = set()
    stack = list(traced.outputs)
    while stack:
        node = stack.pop()
        if node in needed:
            continue
        needed.add(node)
        stack += [n for n in node.all_input_nodes if n not in needed]
    return [
        n
        for n in traced.graph.nodes
        if n in needed
        and n.op == "call_function"
        and n.target not in _SIZE_OPS
        and n.target != aten.sym_size.int
    ]


def classify(traced: TracedProblem, extern_ops: tuple[str, ...] = ()) -> list[Schedule]:
    """Schedules that fit, best first: with a matmul, the extern call + fused epilogue when the
    problem declares the op as extern, and the Triton GEMM template when the epilogue allows."""
    nodes = compute_nodes(traced)
    for node in [*nodes, *(n for n in traced.graph.nodes if n.op == "placeholder")]:
        dtype = dtype_of(node)
        if dtype is not None and dtype not in TL_DTYPES:
            raise Unsupported(f"{node.name} has dtype {dtype} (float64/complex are not handled)")
    for out in traced.outputs:
        if out.op == "placeholder":
            raise Unsupported("forward returns one of its inputs unchanged")
        if dtype_of(out) is None:
            raise Unsupported("forward returns a non-tensor")
    matmuls = [n for n in nodes if n.target in MATMULS or n.target in CONVOLUTIONS]
    reductions = [n for n in nodes if n.target in REDUCTIONS]
    if not matmuls:
        if not reductions:
            return [_pointwise_schedule(traced, allow_groups=True)]
        return [_staged_reductions(traced, nodes, reductions)]
    if len(matmuls) > 1:
        raise Unsupported(f"{len(matmuls)} matmuls/convolutions in one forward")
    matmul = matmuls[0]
    schedules: list[Schedule] = []
    reasons: list[str] = []
    if extern_declared(matmul, extern_ops):
        upstream = ancestors(matmul)
        epilogue_nodes = [n for n in nodes if n not in upstream and n is not matmul]
        if reductions:
            base = _staged_reductions(traced, epilogue_nodes, reductions)
        else:
            base = _pointwise_schedule(traced)
        schedules.append(replace(base, matmul=matmul, extern=True))
    else:
        suggestion = conv_name(matmul) if matmul.target in CONVOLUTIONS else "matmul"
        reasons.append(
            f"declare KBOT = dict(extern_ops=[{suggestion!r}]) for an extern {_op(matmul)} "
            "with a fused epilogue"
        )
    if matmul.target in MATMULS and not reductions:
        try:
            schedules.append(_matmul_schedule(traced, matmul))
        except Unsupported as exc:
            reasons.append(str(exc))
    elif matmul.target in MATMULS:
        reasons.append("the Triton GEMM template fuses only pointwise epilogues")
    else:
        reasons.append("codegen has no Triton convolution")
    if not schedules:
        raise Unsupported("; ".join(reasons))
    return schedules


def _op(node: torch.fx.Node) -> str:
    return str(node.target).replace("aten.", "").split(".")[0]


def extern_declared(matmul: torch.fx.Node, extern_ops: tuple[str, ...]) -> bool:
    if matmul.target == aten.mm.default:
        return bool({"mm", "matmul", "linear", "addmm"} & set(extern_ops))
    if matmul.target == aten.bmm.default:
        return bool({"bmm", "matmul"} & set(extern_ops))
    return conv_name(matmul) in extern_ops


def conv_name(conv: torch.fx.Node) -> str:
    """The extern op name of an aten.convolution: conv2d, or conv_transpose3d when transposed."""
    rank = len(shape_of(conv)) - 2
    transposed = len(conv.args) > 6 and bool(conv.args[6])
    return f"conv_transpose{rank}d" if transposed else f"conv{rank}d"


def _pointwise_schedule(traced: TracedProblem, allow_groups: bool = False) -> Schedule:
    if any(len(shape_of(out)) == 0 for out in traced.outputs):
        raise Unsupported("a 0-dim output")
    groups: list[list[int]] = []  # output positions, one list per distinct shape
    for k, out in enumerate(traced.outputs):
        same = [g for g in groups if _same_shape(shape_of(traced.outputs[g[0]]), shape_of(out))]
        if same:
            same[0].append(k)
        else:
            groups.append([k])
    shape = shape_of(traced.outputs[0])
    schedule = Schedule(
        ScheduleKind.POINTWISE,
        iter_shape=shape,
        col_dim=len(shape) - 1,
        outputs=tuple((o, OutputKind.FULL) for o in traced.outputs),
    )
    if len(groups) == 1:
        return schedule
    if not allow_groups:
        raise Unsupported("pointwise outputs of different shapes after an extern op")
    # Each group's kernel lowers only what its outputs depend on (values are lowered on
    # demand), so a group is its outputs plus their subgraph; shared inputs are read twice.
    names = [f"out{k}" for k in range(len(traced.outputs))]
    subs = []
    for group in groups:
        group_shape = shape_of(traced.outputs[group[0]])
        subs.append(
            Schedule(
                ScheduleKind.POINTWISE,
                iter_shape=group_shape,
                col_dim=len(group_shape) - 1,
                outputs=tuple((traced.outputs[k], OutputKind.FULL) for k in group),
                out_names=tuple(names[k] for k in group),
            )
        )
    return replace(schedule, groups=tuple(subs))


def _same_shape(a: tuple, b: tuple) -> bool:
    return len(a) == len(b) and all(SizeNames.same(x, y) for x, y in zip(a, b))


def _staged_reductions(
    traced: TracedProblem, nodes: list[torch.fx.Node], reductions: list[torch.fx.Node]
) -> Schedule:
    """One row-reduction schedule, or, for reductions of reductions, one per stage (stages.py):
    each stage writes its reductions to buffers that the later stages load. Where the outputs
    fit no reduction's tile (a per-row value broadcast to another shape, pooled, or added to an
    input of another shape), every reduction is written to a buffer and a pointwise kernel over
    the outputs' shape loads them."""
    try:
        return _reduction_schedule(traced, nodes, reductions)
    except Unsupported as exc:
        first_reason = exc
    for every in (False, True):
        try:
            return _stages(traced, nodes, reductions, set(reductions) if every else set())
        except Unsupported:
            continue
    raise first_reason


def _stages(
    traced: TracedProblem,
    nodes: list[torch.fx.Node],
    reductions: list[torch.fx.Node],
    every: set[torch.fx.Node],
) -> Schedule:
    plan = materialized(nodes, reductions, _reduction_key, every)
    if not plan:
        raise Unsupported("no reduction reads another's result")
    written: set[torch.fx.Node] = set()
    stages = []
    for stage in plan:
        stage_nodes = needed(tuple(stage), written, nodes)
        stage_reductions = [n for n in stage_nodes if n.target in REDUCTIONS]
        schedule = _reduction_schedule(
            replace(traced, outputs=tuple(stage)), stage_nodes, stage_reductions
        )
        stages.append(replace(schedule, out_names=tuple(f"{n.name}_buf" for n in stage)))
        written.update(stage)
    final_nodes = needed(traced.outputs, written, nodes)
    final_reductions = [n for n in final_nodes if n.target in REDUCTIONS]
    if final_reductions:
        final = _reduction_schedule(traced, final_nodes, final_reductions)
    else:
        final = _pointwise_schedule(traced)
    return replace(final, stages=tuple(stages))


def _reduction_key(red: torch.fx.Node) -> tuple:
    shape = shape_of(red.args[0])
    return tuple(_numel_hint((s,)) for s in shape), _reduced_dims(red, len(shape))


def _reduction_schedule(
    traced: TracedProblem, nodes: list[torch.fx.Node], reductions: list[torch.fx.Node]
) -> Schedule:
    first = reductions[0]
    iter_shape = shape_of(first.args[0])
    dims: set[tuple[int, ...]] = set()
    scans_only = all(REDUCTIONS[r.target] in SCANS for r in reductions)
    for red in reductions:
        # Scans are checked against their tile below: they may differ along the scanned dim.
        if not scans_only and not _same_shape(shape_of(red.args[0]), iter_shape):
            raise Unsupported("reductions over tensors of different shapes")
        dims.add(_reduced_dims(red, len(shape_of(red.args[0]))))
        # argmax/argmin return int64 indices of a floating-point input.
        reduced = red.args[0] if REDUCTIONS[red.target] in ARG_REDUCTIONS else red
        if dtype_of(reduced) not in FLOAT_TYPES and not _integer_sum(red):
            raise Unsupported("an integer reduction other than a sum, max or min")
    if len(dims) != 1:
        raise Unsupported("reductions over different dims")
    col_dims = dims.pop()
    col_dim = col_dims[-1]
    if scans_only:
        iter_shape = scan_tile(traced, [shape_of(r.args[0]) for r in reductions], col_dim)
    levels: dict[torch.fx.Node, int] = {}
    for node in nodes:
        below = max((levels.get(a, 0) for a in node.all_input_nodes), default=0)
        levels[node] = below + (1 if node.target in REDUCTIONS else 0)
    records = tuple(
        Reduction(r, REDUCTIONS[r.target], levels[r], _integer_sum(r)) for r in reductions
    )
    reduced = tuple(s for d, s in enumerate(iter_shape) if d not in col_dims)
    kept = tuple(1 if d in col_dims else s for d, s in enumerate(iter_shape))
    outputs = []
    for out in traced.outputs:
        shape = shape_of(out)
        if _same_shape(shape, iter_shape):
            outputs.append((out, OutputKind.FULL))
        elif _same_shape(shape, reduced) or _same_shape(shape, kept):
            outputs.append((out, OutputKind.ROW))
        elif _reshaped_full(out, iter_shape):
            # GroupNorm/InstanceNorm reduce a reshaped view ([N, G, C/G, H*W]) and return the
            # input's shape: the output is stored at the iteration index reshaped (rows.py).
            outputs.append((out, OutputKind.FULL))
        else:
            raise Unsupported(f"output {out.name} is neither the reduced nor the full shape")
    return Schedule(
        ScheduleKind.ROW_REDUCTION,
        iter_shape=iter_shape,
        col_dim=col_dim,
        reductions=records,
        outputs=tuple(outputs),
        online=_online_softmax_pairs(records),
        red_dims=col_dims if len(col_dims) > 1 else (),
    )


def _integer_sum(red: torch.fx.Node) -> bool:
    """A sum whose result is an integer (of integers or booleans: torch sums both to int64),
    or a max/min of integers (the longest sequence among the positions: dynamic-NTK rotary)."""
    integer = dtype_of(red) in (torch.int64, torch.int32)
    return REDUCTIONS[red.target] in ("sum", "max", "min") and integer


def _reshaped_full(out: torch.fx.Node, iter_shape: tuple) -> bool:
    """Whether `out` is the iteration shape reshaped: reached from an iteration-shaped value
    through ops that keep its element count. Not a per-row value broadcast against a
    parameter into as many elements ((B, 1) + (1, C, 1, 1) is (1, C, B, 1): B * C elements)."""
    count = _numel_hint(shape_of(out))
    todo, seen = [out], set()
    while todo:
        node = todo.pop()
        if _same_shape(shape_of(node), iter_shape):
            return True
        seen.add(node)
        todo += [
            n
            for n in node.all_input_nodes
            if n not in seen and shape_of(n) and _numel_hint(shape_of(n)) == count
        ]
    return False


def _numel_hint(shape: tuple) -> int:
    total = 1
    for size in shape:
        total *= int(size.node.hint) if isinstance(size, torch.SymInt) else int(size)
    return total


def _reduced_dims(red: torch.fx.Node, rank: int) -> tuple[int, ...]:
    """The dims a reduction node reduces, ascending: `sum(x)`, `dim=None` and `dim=[]` reduce
    every dim (aten's convention for `sum.dim_IntList`)."""
    dims = red.args[1] if len(red.args) > 1 else red.kwargs.get("dim")
    if REDUCTIONS[red.target] in ONE_PASS_ONLY:
        if dims is None:
            raise Unsupported(f"{red.name}: an index over every dim (argmax/argmin without dim)")
        dims = [dims]
    if red.target in FULL_REDUCTIONS or not dims:
        return tuple(range(rank))
    return tuple(sorted({d % rank for d in dims}))


def _online_softmax_pairs(reductions: tuple[Reduction, ...]) -> tuple[OnlineSoftmax, ...]:
    """Finds `sum(exp(x - amax(x)))` so the max and the sum can share one pass over x."""
    pairs = []
    for red in reductions:
        if red.kind != "sum":
            continue
        exp = red.node.args[0]
        if not (isinstance(exp, torch.fx.Node) and exp.target == aten.exp.default):
            continue
        sub = exp.args[0]
        if not (isinstance(sub, torch.fx.Node) and sub.target == aten.sub.Tensor):
            continue
        source, maximum = sub.args[0], sub.args[1]
        if (
            isinstance(maximum, torch.fx.Node)
            and maximum.target == aten.amax.default
            and maximum.args[0] is source
            and len(sub.kwargs) == 0
        ):
            pairs.append(OnlineSoftmax(maximum, red.node, source))
    return tuple(pairs)


_FLAT_VIEWS = {aten.view.default, aten._unsafe_view.default, aten.reshape.default}


def _matmul_schedule(traced: TracedProblem, matmul: torch.fx.Node) -> Schedule:
    """The GEMM template keeps the accumulator in registers, so every path from the matmul to
    an output must be elementwise on the same flat (rows, cols) positions."""
    shape = shape_of(traced.outputs[0])
    for out in traced.outputs:
        if not _same_shape(shape_of(out), shape):
            raise Unsupported("matmul epilogue outputs of different shapes")
    mm_shape = shape_of(matmul)
    if not SizeNames.same(shape[-1], mm_shape[-1]):
        raise Unsupported("the epilogue changes the matmul's columns")
    stack = [u for u in matmul.users]
    seen: set[torch.fx.Node] = set()
    while stack:
        node = stack.pop()
        if node in seen or node.op == "output":
            continue
        seen.add(node)
        if node.target in REDUCTIONS or (
            node.target in _VIEW_LIKE and node.target not in _FLAT_VIEWS
        ):
            raise Unsupported(f"the matmul result goes through {_op(node)}, not elementwise")
        if not _same_shape(shape_of(node), shape) and not _same_shape(shape_of(node), mm_shape):
            raise Unsupported(f"the matmul result is broadcast by {_op(node)}")
        stack += list(node.users)
    return Schedule(
        ScheduleKind.MATMUL_EPILOGUE,
        iter_shape=shape,
        col_dim=len(shape) - 1,
        outputs=tuple((o, OutputKind.FULL) for o in traced.outputs),
        matmul=matmul,
    )
