"""Split row reductions: several programs per row, for few rows that are very wide.

At decode sizes a 128k-column log_softmax has 1-64 rows, so one program per row leaves most
of the GPU idle. Here a row is cut into SPLITS chunks: `_<op>_partials_kernel` reduces each
chunk to a partial (a sum, a max, or an online-softmax (max, sum) pair) in a small fp32
workspace; `_<op>_kernel` combines the row's partials (SPLITS values, in registers) and
writes its chunk of the outputs. Two launches, no atomics, deterministic.
"""

from __future__ import annotations

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
    fused = {p.sum_node for p in schedule.online}
    return all(r.level == 1 or r.node in fused for r in schedule.reductions)


def _partials(schedule: Schedule) -> list[tuple[str, object, str]]:
    """(workspace name, reduction node, combine kind) for every partial the kernels trade."""
    out = []
    fused = {p.sum_node for p in schedule.online}
    online = {p.max_node: p for p in schedule.online}
    for red in schedule.reductions:
        if red.node in fused:
            continue
        out.append((f"{red.node.name}_partial", red.node, red.kind))
        if red.node in online:
            out.append(
                (
                    f"{online[red.node].sum_node.name}_partial",
                    online[red.node].sum_node,
                    "online_sum",
                )
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
        raise Unsupported("a reduction that depends on another (other than softmax's max/sum)")
    partials = _partials(schedule)
    online = {p.max_node: p for p in schedule.online}
    split_ix = Ix("split")

    # Kernel 1: each (row, split) program reduces its chunk to partials.
    first = KernelBody(traced, sizes)
    first.extern_args.update(extern_args or {})
    first.gpu_math = gpu_math
    for name, _, _ in partials:
        first.tensor_arg(f"workspace:{name}", name, 2)
    row_index = emit_row_indices(first, schedule)
    full = full_index(schedule, row_index, first)
    first.reserve("split", "col_begin", "col_end", "chunk")
    _chunk_bounds(first)
    accs = {}
    for red in schedule.reductions:
        if red.node not in {n for _, n, _ in partials}:
            continue
        acc = first.fresh(f"{red.node.name}_acc")
        first.emit(f"{acc} = tl.full([ROWS, BLOCK_N], {NEUTRAL[red.kind]}, tl.float32)")
        accs[red.node] = acc
        if red.node in online:
            total = first.fresh(f"{online[red.node].sum_node.name}_acc")
            first.emit(f"{total} = tl.zeros([ROWS, BLOCK_N], dtype=tl.float32)")
            accs[online[red.node].sum_node] = total
    first.eviction = "evict_last"  # step 2 reads this chunk again
    _chunk_loop(first)
    for red in schedule.reductions:
        if red.node not in accs or any(p.sum_node is red.node for p in schedule.online):
            continue
        x = first.value(red.node.args[0], full)
        first.comment_source(red.node)
        if red.node in online:
            online_step(first, online[red.node], accs[red.node], accs[online[red.node].sum_node], x)
        else:
            masked = f"tl.where(mask, {x}, {NEUTRAL[red.kind]})"
            first.emit(
                f"{accs[red.node]} = {COMBINE[red.kind].format(acc=accs[red.node], x=masked)}"
            )
    _end_loop(first)
    finish = {"sum": "tl.sum", "mean": "tl.sum", "max": "tl.max", "min": "tl.min"}
    chunk_max = {}
    for name, node, kind in partials:
        var = first.fresh(name)
        if kind == "online_sum":
            m_acc = accs[next(p.max_node for p in schedule.online if p.sum_node is node)]
            m_chunk = chunk_max[m_acc]
            first.emit(
                f"{var} = tl.sum(tl.where({m_acc} == float('-inf'), 0.0, "
                f"{accs[node]} * tl.exp({m_acc} - {m_chunk})), axis=1, keep_dims=True)"
            )
        else:
            first.emit(f"{var} = {finish[kind]}({accs[node]}, axis=1, keep_dims=True)")
            chunk_max[accs[node]] = var
        offset, mask = first.offset(name, (row_index_flat(), split_ix))
        first.emit(f"tl.store({name}_ptr + {offset}, {var}, mask=row_mask)")
    partial_kernel = KernelSource(
        name=f"_{op}_partials_kernel",
        doc=f"{op}, step 1: program (row, split) reduces columns [split*chunk, +chunk) to partials.",
        body=first,
        leading=[("n_rows", "n_rows"), ("n_cols", "n_cols"), ("chunk", "chunk")],
        constexprs=["ROWS", "BLOCK_N"],
    )

    # Kernel 2: combine the row's partials, then write this program's chunk of the outputs.
    second = KernelBody(traced, sizes)
    second.extern_args.update(extern_args or {})
    second.gpu_math = gpu_math
    names = register_outputs(second, schedule)
    for name, _, _ in partials:
        second.tensor_arg(f"workspace:{name}", name, 2)
    row_index = emit_row_indices(second, schedule)
    full = full_index(schedule, row_index, second)
    second.reserve("split", "col_begin", "col_end", "chunk", "splits")
    second.emit("splits = tl.arange(0, SPLITS)[None, :]")
    loaded = {}
    for name, node, kind in partials:
        neutral = "0.0" if kind in ("sum", "mean", "online_sum") else NEUTRAL[kind]
        offset, _ = second.offset(name, (row_index_flat(), Ix("splits")))
        var = second.fresh(f"{name}s")
        second.emit(f"{var} = tl.load({name}_ptr + {offset}, mask=row_mask, other={neutral})")
        loaded[node] = var
    for _name, node, kind in partials:
        var = second.fresh(node.name)
        if kind == "online_sum":
            pair = next(p for p in schedule.online if p.sum_node is node)
            m_parts, m_row = loaded[pair.max_node], second.precomputed[pair.max_node]
            second.emit("# Each chunk's sum was taken at its own max: rescale to the row max.")
            second.emit(
                f"{var} = tl.sum(tl.where({m_parts} == float('-inf'), 0.0, "
                f"{loaded[node]} * tl.exp({m_parts} - {m_row})), axis=1, keep_dims=True)"
            )
        else:
            expr = f"{finish[kind]}({loaded[node]}, axis=1, keep_dims=True)"
            second.emit(f"{var} = {expr} / n_cols" if kind == "mean" else f"{var} = {expr}")
        second.precomputed[node] = var
    _chunk_bounds(second)
    if any(kind == OutputKind.FULL for _, kind in schedule.outputs):
        second.eviction = "evict_first"
        _chunk_loop(second)
        store_outputs(second, schedule, names, OutputKind.FULL, full, row_index)
        _end_loop(second)
        second.eviction = None
    second.emit("# Per-row outputs are written once, by the row's first split.")
    second.emit("row_mask = row_mask & (split == 0)")
    store_outputs(second, schedule, names, OutputKind.ROW, full, row_index)
    finish_kernel = KernelSource(
        name=f"_{op}_kernel",
        doc=f"{op}, step 2: combine the row's partials, write columns [split*chunk, +chunk).",
        body=second,
        leading=[("n_rows", "n_rows"), ("n_cols", "n_cols"), ("chunk", "chunk")],
        constexprs=["ROWS", "BLOCK_N", "SPLITS"],
    )
    launcher = launcher_extent_lines(schedule, sizes)
    launcher.append("# Chunks are whole BLOCK_N steps, so only the last one is ragged.")
    launcher.append("chunk = triton.cdiv(triton.cdiv(n_cols, SPLITS), BLOCK_N) * BLOCK_N")
    device = next(g.arg_name for g in traced.inputs if g.is_tensor)
    for name, _, _ in partials:
        launcher.append(
            f"{name} = torch.empty((n_rows, SPLITS), dtype=torch.float32, device={device}.device)"
        )
    launcher.append("grid = (n_rows, SPLITS)")
    consts = {"ROWS": "1", "BLOCK_N": "BLOCK_N"}
    launcher += partial_kernel.launch("grid", consts, "NUM_WARPS")
    launcher += finish_kernel.launch("grid", {**consts, "SPLITS": "SPLITS"}, "NUM_WARPS")
    tunables = [
        Tunable("SPLITS", splits, "programs per row (a power of two): fills the GPU at few rows"),
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
    if gpu_math:
        params["gpu_math"] = True
    return Emitted([partial_kernel, finish_kernel], launcher, tunables, params)


def row_index_flat() -> Ix:
    return Ix("rows", ("row_mask",), wide=True)
