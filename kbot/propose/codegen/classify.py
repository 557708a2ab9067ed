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
    shape_of,
)
from kbot.propose.codegen.matmuls import (
    CONVOLUTIONS,
    FLAT_VIEWS,
    MATMULS,
    aten_name,
    conv_name,
    extern_declared,
    matmul_schedule,
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
from kbot.propose.codegen.stages import ancestors, materialized, needed, operand_roots
from kbot.propose.codegen.trace import TracedProblem, Unsupported

aten = torch.ops.aten

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
    problem declares the op as extern, and the Triton GEMM template when the epilogue allows
    (first where the extern call would have nothing to fuse);
    with several declared extern ops (or one reading a computed value), their program."""
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
    if len(matmuls) > 1 or (
        extern_declared(matmuls[0], extern_ops)
        and any(root.op != "placeholder" for root in operand_roots(matmuls[0]))
    ):
        return [_extern_program(traced, nodes, matmuls, extern_ops)]
    matmul = matmuls[0]
    schedules: list[Schedule] = []
    reasons: list[str] = []
    epilogue_nodes: list[torch.fx.Node] = []
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
            f"declare KBOT = dict(extern_ops=[{suggestion!r}]) for an extern {aten_name(matmul)} "
            "with a fused epilogue"
        )
    if matmul.target in MATMULS and not reductions:
        try:
            gemm = matmul_schedule(traced, matmul)
        except Unsupported as exc:
            reasons.append(str(exc))
        else:
            # With nothing to fuse, the extern call's kernel is a copy of its result: one more
            # pass over the output than the reference makes, never faster than it (KernelBench's
            # small-K GEMMs: 0.36x-0.49x torch.compile). The GEMM template writes the output
            # once, so it goes first; the extern variant stays, measured behind it.
            bare = extern_declared(matmul, extern_ops) and all(
                n.target in FLAT_VIEWS for n in epilogue_nodes
            )
            schedules.insert(0 if bare else len(schedules), gemm)
    elif matmul.target in MATMULS:
        reasons.append("the Triton GEMM template fuses only pointwise epilogues")
    else:
        reasons.append("codegen has no Triton convolution")
    if not schedules:
        raise Unsupported("; ".join(reasons))
    return schedules


def _extern_program(
    traced: TracedProblem,
    nodes: list[torch.fx.Node],
    externs: list[torch.fx.Node],
    extern_ops: tuple[str, ...],
) -> Schedule:
    """Several extern ops, or one that reads a computed value, as a program in graph order:
    the value an extern op reads that is neither an input nor an earlier extern op's result
    (`linear2(sigmoid(linear1(x)))`'s sigmoid, attention's softmax) is written to a buffer
    (`<node>_buf`) by kernels of its own just before the call, and the outputs' kernel, which
    loads the last results, comes last (stages of kind EXTERN are the calls). Extern ops back
    to back (a depthwise then a pointwise convolution) have no kernel between them."""
    undeclared = [m for m in externs if not extern_declared(m, extern_ops)]
    if undeclared:
        names = sorted({conv_name(m) if m.target in CONVOLUTIONS else "matmul" for m in undeclared})
        raise Unsupported(
            f"{len(externs)} matmuls/convolutions in one forward: declare "
            f"KBOT = dict(extern_ops={names!r}) to run each as an extern op with the work "
            "between them in Triton"
        )
    steps: list[Schedule] = []
    written: set[torch.fx.Node] = set()  # values the launcher holds: buffers, extern results
    for extern in externs:
        for root in operand_roots(extern):
            if root.op == "placeholder" or root in written:
                continue
            kernel = _segment(traced, nodes, (root,), written)
            steps += [*kernel.stages, replace(kernel, stages=(), out_names=(f"{root.name}_buf",))]
            written.add(root)
        shape = shape_of(extern)
        steps.append(
            Schedule(
                ScheduleKind.EXTERN,
                iter_shape=shape,
                col_dim=len(shape) - 1,
                outputs=((extern, OutputKind.FULL),),
                matmul=extern,
                extern=True,
                out_names=(f"{extern.name}_out",),
            )
        )
        written.add(extern)
    final = _segment(traced, nodes, traced.outputs, written)
    return replace(final, stages=(*steps, *final.stages))


def _segment(
    traced: TracedProblem,
    nodes: list[torch.fx.Node],
    outputs: tuple[torch.fx.Node, ...],
    written: set[torch.fx.Node],
) -> Schedule:
    """The kernel (with its own stages, for reductions of reductions) that computes `outputs`
    from the inputs and the values in `written`."""
    segment = needed(outputs, written, nodes)
    reductions = [n for n in segment if n.target in REDUCTIONS]
    traced = replace(traced, outputs=outputs)
    if reductions:
        return _staged_reductions(traced, segment, reductions)
    return _pointwise_schedule(traced)


def _pointwise_schedule(traced: TracedProblem, allow_groups: bool = False) -> Schedule:
    if any(len(shape_of(out)) == 0 for out in traced.outputs):
        raise Unsupported("a 0-dim output")
    groups: list[list[int]] = []  # output positions, one list per distinct shape
    for k, out in enumerate(traced.outputs):
        same = [
            g for g in groups if SizeNames.same_shape(shape_of(traced.outputs[g[0]]), shape_of(out))
        ]
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
        if not scans_only and not SizeNames.same_shape(shape_of(red.args[0]), iter_shape):
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
        if SizeNames.same_shape(shape, iter_shape):
            outputs.append((out, OutputKind.FULL))
        elif SizeNames.same_shape(shape, reduced) or SizeNames.same_shape(shape, kept):
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
        if SizeNames.same_shape(shape_of(node), iter_shape):
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
