"""Split row reductions: several programs per row, for few rows that are very wide.

At decode sizes a 128k-column log_softmax has 1-64 rows, so one program per row leaves most
of the GPU idle. Here a row is cut into SPLITS chunks: `_<op>_partials_kernel` reduces each
chunk to a partial (a sum, a max, or an online-softmax (max, sum) pair) in a small fp32
workspace; `_<op>_kernel` combines the row's partials (SPLITS values, in registers) and
writes its chunk of the outputs. A reduction over another's result (a variance over the
mean, as LayerNorm/GroupNorm take it) gets a pass of its own between the two, which first
combines the earlier partials. One launch per pass, no atomics, deterministic.
"""

from __future__ import annotations

from typing import NamedTuple

import torch.fx

from kbot.propose.codegen.classify import OutputKind, Schedule
from kbot.propose.codegen.emit_reduction import COMBINE, NEUTRAL, online_step
from kbot.propose.codegen.emitted import Emitted, Tunable
from kbot.propose.codegen.kernel import KernelSource
from kbot.propose.codegen.lowering import Ix, KernelBody
from kbot.propose.codegen.rows import (
    emit_row_indices,
    full_index,
    launcher_extent_lines,
    register_outputs,
    store_outputs,
)
from kbot.propose.codegen.sizes import SizeNames
from kbot.propose.codegen.trace import TracedProblem, Unsupported


def splittable(schedule: Schedule) -> bool:
    """Every reduction combines from partials: sums, means, maxima, minima and softmax's
    (max, sum) pairs, at any depth (a variance's mean of squared deviations is a second stage)."""
    return all(r.kind in COMBINE for r in schedule.reductions)


class Partial(NamedTuple):
    """One reduction's per-chunk partial in its fp32 workspace."""

    name: str  # the workspace
    node: torch.fx.Node  # the reduction
    kind: str  # how partials combine: sum | mean | max | min | online_sum
    stage: int  # the pass that writes it: the reduction's level


def _partials(schedule: Schedule) -> list[Partial]:
    """Every partial the kernels trade, in the order they are combined. A softmax's sum is
    taken in its max's stage, in the same pass."""
    out = []
    fused = {p.sum_node for p in schedule.online}
    online = {p.max_node: p for p in schedule.online}
    for red in sorted(schedule.reductions, key=lambda r: r.level):
        if red.node in fused:
            continue
        out.append(Partial(f"{red.node.name}_partial", red.node, red.kind, red.level))
        if red.node in online:
            pair = online[red.node]
            out.append(
                Partial(f"{pair.sum_node.name}_partial", pair.sum_node, "online_sum", red.level)
            )
    return out


def _chunk_bounds(body: KernelBody) -> None:
    body.emit("split = tl.program_id(1)")
    body.emit("col_begin = split * chunk")
    body.emit("col_end = tl.minimum(col_begin + chunk, n_cols)")


def _chunk_loop(body: KernelBody) -> None:
    body.emit("for col_start in range(col_begin, col_end, BLOCK_N):")
    body.indent += 1
    body.emit("cols = col_start + tl.arange(0, BLOCK_N)[None, :]")
    body.emit("col_mask = cols < col_end")
    body.emit("mask = row_mask & col_mask")


def _end_loop(body: KernelBody) -> None:
    body.indent -= 1
    body.forget()


_FINISH = {"sum": "tl.sum", "mean": "tl.sum", "max": "tl.max", "min": "tl.min"}


def _combine(body: KernelBody, schedule: Schedule, partials: list[Partial], row_index) -> None:
    """Loads each row's SPLITS partials of `partials` and combines them into the row's values
    (`body.precomputed`), for the code after it to use."""
    body.emit("splits = tl.arange(0, SPLITS)[None, :]")
    loaded = {}
    for name, node, kind, _ in partials:
        neutral = "0.0" if kind in ("sum", "mean", "online_sum") else NEUTRAL[kind]
        offset, _ = body.offset(name, (row_index_flat(), Ix("splits")))
        var = body.fresh(f"{name}s")
        body.emit(f"{var} = tl.load({name}_ptr + {offset}, mask=row_mask, other={neutral})")
        loaded[node] = var
    for _name, node, kind, _ in partials:
        var = body.fresh(node.name)
        if kind == "online_sum":
            pair = next(p for p in schedule.online if p.sum_node is node)
            m_parts, m_row = loaded[pair.max_node], body.precomputed[pair.max_node]
            body.emit("# Each chunk's sum was taken at its own max: rescale to the row max.")
            body.emit(
                f"{var} = tl.sum(tl.where({m_parts} == float('-inf'), 0.0, "
                f"{loaded[node]} * tl.exp({m_parts} - {m_row})), axis=1, keep_dims=True)"
            )
        else:
            expr = f"{_FINISH[kind]}({loaded[node]}, axis=1, keep_dims=True)"
            body.emit(f"{var} = {expr} / n_cols" if kind == "mean" else f"{var} = {expr}")
        body.precomputed[node] = var


def _stage_kernel(
    traced: TracedProblem,
    schedule: Schedule,
    sizes: SizeNames,
    op: str,
    partials: list[Partial],
    stage: int,
    extern_args: dict[str, str],
    gpu_math: bool,
) -> KernelSource:
    """Program (row, split) reduces its chunk to the partials of `stage`, after combining the
    row's partials of the stages before it (a variance's pass needs the row's mean)."""
    online = {p.max_node: p for p in schedule.online}
    earlier = [p for p in partials if p.stage < stage]
    mine = [p for p in partials if p.stage == stage]
    body = KernelBody(traced, sizes)
    body.extern_args.update(extern_args)
    body.gpu_math = gpu_math
    for part in earlier + mine:
        body.tensor_arg(f"workspace:{part.name}", part.name, 2)
    row_index = emit_row_indices(body, schedule)
    full = full_index(schedule, row_index, body)
    body.row_tile = full
    body.reserve("split", "col_begin", "col_end", "chunk", "splits")
    if earlier:
        _combine(body, schedule, earlier, row_index)
    _chunk_bounds(body)
    nodes = {part.node for part in mine}
    accs = {}
    for red in schedule.reductions:
        if red.node not in nodes or any(p.sum_node is red.node for p in schedule.online):
            continue
        acc = body.fresh(f"{red.node.name}_acc")
        body.emit(f"{acc} = tl.full([ROWS, BLOCK_N], {NEUTRAL[red.kind]}, tl.float32)")
        accs[red.node] = acc
        if red.node in online:
            total = body.fresh(f"{online[red.node].sum_node.name}_acc")
            body.emit(f"{total} = tl.zeros([ROWS, BLOCK_N], dtype=tl.float32)")
            accs[online[red.node].sum_node] = total
    body.eviction = "evict_last"  # the next pass reads this chunk again
    _chunk_loop(body)
    for red in schedule.reductions:
        if red.node not in accs or any(p.sum_node is red.node for p in schedule.online):
            continue
        x = body.value(red.node.args[0], full)
        body.comment_source(red.node)
        if red.node in online:
            online_step(body, online[red.node], accs[red.node], accs[online[red.node].sum_node], x)
        else:
            masked = f"tl.where(mask, {x}, {NEUTRAL[red.kind]})"
            body.emit(
                f"{accs[red.node]} = {COMBINE[red.kind].format(acc=accs[red.node], x=masked)}"
            )
    _end_loop(body)
    chunk_max = {}
    split_ix = Ix("split")
    for name, node, kind, _ in mine:
        var = body.fresh(name)
        if kind == "online_sum":
            m_acc = accs[next(p.max_node for p in schedule.online if p.sum_node is node)]
            body.emit(
                f"{var} = tl.sum(tl.where({m_acc} == float('-inf'), 0.0, "
                f"{accs[node]} * tl.exp({m_acc} - {chunk_max[m_acc]})), axis=1, keep_dims=True)"
            )
        else:
            body.emit(f"{var} = {_FINISH[kind]}({accs[node]}, axis=1, keep_dims=True)")
            chunk_max[accs[node]] = var
        offset, _ = body.offset(name, (row_index_flat(), split_ix))
        body.emit(f"tl.store({name}_ptr + {offset}, {var}, mask=row_mask)")
    last = max(p.stage for p in partials)
    suffix = "" if last == 1 else f"_{stage}"
    after = "the row's partials of earlier passes combined, " if earlier else ""
    return KernelSource(
        name=f"_{op}_partials{suffix}_kernel",
        doc=(
            f"{op}, step {stage}: {after}program (row, split) reduces columns "
            "[split*chunk, +chunk) to partials."
        ),
        body=body,
        leading=[("n_rows", "n_rows"), ("n_cols", "n_cols"), ("chunk", "chunk")],
        constexprs=["ROWS", "BLOCK_N", "SPLITS"] if earlier else ["ROWS", "BLOCK_N"],
    )


# Programs of one split launch, all rows together, beyond which each row gets fewer. Chosen by
# bench/split_count.py on the H100 (2026-12-06 18:11 UTC, bench/results/optimize.md): among
# 256-8192, 512 was within 0.15 us of the fastest at every decode case of softmax_64k and
# log_softmax_50k (T=16: 5.70 us against 7.30 at 2048; T=64: 11.10 against 19.05 at 8192).
TOTAL_SPLITS = 512


def emit_split(
    traced: TracedProblem,
    schedule: Schedule,
    sizes: SizeNames,
    op: str,
    *,
    splits: int,
    block_n: int,
    num_warps: int,
    extern_args: dict[str, str] | None = None,
    gpu_math: bool = False,
) -> Emitted:
    if not splittable(schedule):
        raise Unsupported("a reduction that does not combine from partials (an index or a scan)")
    partials = _partials(schedule)
    stages = sorted({p.stage for p in partials})
    kernels = [
        _stage_kernel(traced, schedule, sizes, op, partials, stage, extern_args or {}, gpu_math)
        for stage in stages
    ]

    # The last kernel: combine the row's partials, then write this program's chunk of outputs.
    final = KernelBody(traced, sizes)
    final.extern_args.update(extern_args or {})
    final.gpu_math = gpu_math
    names = register_outputs(final, schedule)
    for part in partials:
        final.tensor_arg(f"workspace:{part.name}", part.name, 2)
    row_index = emit_row_indices(final, schedule)
    full = full_index(schedule, row_index, final)
    final.row_tile = full
    final.reserve("split", "col_begin", "col_end", "chunk", "splits")
    _combine(final, schedule, partials, row_index)
    _chunk_bounds(final)
    if any(kind == OutputKind.FULL for _, kind in schedule.outputs):
        final.eviction = "evict_first"
        _chunk_loop(final)
        store_outputs(final, schedule, names, OutputKind.FULL, full, row_index)
        _end_loop(final)
        final.eviction = None
    if any(kind == OutputKind.ROW for _, kind in schedule.outputs):
        final.emit("# Per-row outputs are written once, by the row's first split.")
        final.emit("if split == 0:")
        final.indent += 1
        store_outputs(final, schedule, names, OutputKind.ROW, full, row_index)
        _end_loop(final)
    finish_kernel = KernelSource(
        name=f"_{op}_kernel",
        doc=(
            f"{op}, step {len(stages) + 1}: combine the row's partials, write columns "
            "[split*chunk, +chunk)."
        ),
        body=final,
        leading=[("n_rows", "n_rows"), ("n_cols", "n_cols"), ("chunk", "chunk")],
        constexprs=["ROWS", "BLOCK_N", "SPLITS"],
    )
    launcher = launcher_extent_lines(schedule, sizes)
    launcher += [
        "# SPLITS programs a row, fewer once the launch passes TOTAL_SPLITS programs.",
        "splits = SPLITS",
        "while splits > 1 and n_rows * splits > TOTAL_SPLITS:",
        "    splits //= 2",
        "# Chunks are whole BLOCK_N steps, so only the last one is ragged.",
        "chunk = triton.cdiv(triton.cdiv(n_cols, splits), BLOCK_N) * BLOCK_N",
    ]
    device = next(g.arg_name for g in traced.inputs if g.is_tensor)
    for part in partials:
        launcher.append(
            f"{part.name} = torch.empty((n_rows, splits), dtype=torch.float32, device={device}.device)"
        )
    launcher.append("grid = (n_rows, splits)")
    consts = {"ROWS": "1", "BLOCK_N": "BLOCK_N"}
    for kernel, stage in zip(kernels, stages):
        extra = {"SPLITS": "splits"} if stage > stages[0] else {}
        launcher += kernel.launch("grid", {**consts, **extra}, "NUM_WARPS")
    launcher += finish_kernel.launch("grid", {**consts, "SPLITS": "splits"}, "NUM_WARPS")
    tunables = [
        Tunable("SPLITS", splits, "programs per row (a power of two): fills the GPU at few rows"),
        Tunable(
            "TOTAL_SPLITS",
            max(TOTAL_SPLITS, splits),
            "programs of one launch at most, all rows together (a power of two)",
        ),
        Tunable("BLOCK_N", block_n, "columns per loop step inside a chunk"),
        Tunable("NUM_WARPS", num_warps, "warps per program"),
    ]
    params = {
        "schedule": schedule.kind.value,
        "loop": "split",
        "splits": splits,
        "block_n": block_n,
        "num_warps": num_warps,
    }
    if len(stages) > 1:
        params["passes"] = len(stages) + 1
    if gpu_math:
        params["gpu_math"] = True
    return Emitted([*kernels, finish_kernel], launcher, tunables, params)


def row_index_flat() -> Ix:
    return Ix("rows", ("row_mask",), wide=True)
