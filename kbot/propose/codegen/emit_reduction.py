"""Row reductions with pointwise prologue/epilogue: norms, softmax, log_softmax, sums.

Two shapes of kernel, both one program per ROWS rows:
- one pass (`BLOCK_N >= n_cols`): the row is loaded once into registers, every reduction is a
  `tl.sum`/`tl.max` over it, and the outputs are written from the same registers;
- looped (rows far wider than a block, e.g. a 128k vocabulary): one loop over column chunks per
  reduction level (accumulating a [ROWS, BLOCK_N] tile, reduced once at the end), then a last
  loop that writes the full-shaped outputs. `sum(exp(x - max(x)))` runs as an online softmax, so
  max and sum share one loop.
"""

from __future__ import annotations

from kbot.propose.codegen.classify import OnlineSoftmax, OutputKind, Reduction, Schedule
from kbot.propose.codegen.emitted import Emitted, Tunable
from kbot.propose.codegen.kernel import KernelSource
from kbot.propose.codegen.lowering import ARG_REDUCTIONS, SCANS, KernelBody
from kbot.propose.codegen.rows import (
    emit_row_indices,
    full_index,
    launcher_extent_lines,
    register_outputs,
    store_outputs,
)
from kbot.propose.codegen.sizes import SizeNames
from kbot.propose.codegen.trace import TracedProblem

NEUTRAL = {
    "sum": "0.0",
    "mean": "0.0",
    "max": "float('-inf')",
    "min": "float('inf')",
    "argmax": "float('-inf')",
    "argmin": "float('inf')",
}
COMBINE = {
    "sum": "{acc} + {x}",
    "mean": "{acc} + {x}",
    "max": "tl.maximum({acc}, {x})",
    "min": "tl.minimum({acc}, {x})",
}
# tl.argmax/tl.argmin break ties towards the lower index, as torch.argmax/argmin do.
FINISH = {
    "sum": "tl.sum",
    "mean": "tl.sum",
    "max": "tl.max",
    "min": "tl.min",
    "argmax": "tl.argmax",
    "argmin": "tl.argmin",
}


# An integer max/min's neutral values: int64's extremes (an integer reduction runs in int64).
INTEGER_NEUTRAL = {"sum": "0", "max": "-9223372036854775807 - 1", "min": "9223372036854775807"}


def _masked(red: Reduction, x: str) -> str:
    """`x` where the mask holds, the reduction's neutral value elsewhere; an integer
    reduction's terms as int64 (a boolean's too), so a sum is exact and a max of positions
    past 2**24 is not rounded through fp32."""
    if red.integer:
        return f"tl.where(mask, ({x}).to(tl.int64), {INTEGER_NEUTRAL[red.kind]})"
    return f"tl.where(mask, {x}, {NEUTRAL[red.kind]})"


def _accumulator(red: Reduction) -> str:
    """A looped reduction's [ROWS, BLOCK_N] accumulator, at the neutral value."""
    if red.integer:
        return f"tl.full([ROWS, BLOCK_N], {INTEGER_NEUTRAL[red.kind]}, tl.int64)"
    return f"tl.full([ROWS, BLOCK_N], {NEUTRAL[red.kind]}, tl.float32)"


def _finish(red: Reduction, acc: str) -> str:
    expr = f"{FINISH[red.kind]}({acc}, axis=1, keep_dims=True)"
    return f"{expr} / n_cols" if red.kind == "mean" else expr


def emit_reduction(
    traced: TracedProblem,
    schedule: Schedule,
    sizes: SizeNames,
    op: str,
    *,
    rows: int,
    block_n: int | None,
    num_warps: int,
    extern_args: dict[str, str] | None = None,
    gpu_math: bool = False,
) -> Emitted:
    """`block_n=None`: one pass with BLOCK_N = next_power_of_2(n_cols); else loop by block_n."""
    body = KernelBody(traced, sizes)
    body.extern_args.update(extern_args or {})
    body.gpu_math = gpu_math
    names = register_outputs(body, schedule)
    row_index = emit_row_indices(body, schedule)
    full = full_index(schedule, row_index, body)
    body.row_tile = full
    if block_n is None:
        _one_pass(body, schedule, names, full, row_index)
    else:
        _looped(body, schedule, names, full, row_index)
    store_outputs(body, schedule, names, OutputKind.ROW, full, row_index)
    looped = block_n is not None
    kernel = KernelSource(
        name=f"_{op}_kernel",
        doc=(
            f"{op}: ROWS rows per program, "
            + ("looping over BLOCK_N-column chunks." if looped else "each row in one block.")
        ),
        body=body,
        leading=[("n_rows", "n_rows"), ("n_cols", "n_cols")],
        constexprs=["ROWS", "BLOCK_N"],
    )
    launcher = launcher_extent_lines(schedule, sizes)
    if looped:
        block_expr = "BLOCK_N"
    else:
        launcher.append("# The whole row in one block: read once, reduced in registers.")
        launcher.append("block_n = triton.next_power_of_2(n_cols)")
        block_expr = "block_n"
    launcher.append("grid = (triton.cdiv(n_rows, ROWS_PER_PROGRAM),)")
    launcher += kernel.launch(
        "grid", {"ROWS": "ROWS_PER_PROGRAM", "BLOCK_N": block_expr}, "NUM_WARPS"
    )
    tunables = [Tunable("ROWS_PER_PROGRAM", rows, "rows per program: >1 for narrow rows")]
    if looped:
        tunables.append(Tunable("BLOCK_N", block_n, "columns per loop step of a wide row"))
    tunables.append(Tunable("NUM_WARPS", num_warps, "warps per program, scaled with the row width"))
    params = {
        "schedule": schedule.kind.value,
        "loop": "looped" if looped else "one_pass",
        "rows_per_program": rows,
        "block_n": block_n if looped else "next_pow2(n_cols)",
        "num_warps": num_warps,
    }
    if gpu_math:
        params["gpu_math"] = True
    return Emitted([kernel], launcher, tunables, params)


def _one_pass(body: KernelBody, schedule: Schedule, names, full, row_index) -> None:
    body.emit("cols = tl.arange(0, BLOCK_N)[None, :]")
    body.emit("col_mask = cols < n_cols")
    body.emit("mask = row_mask & col_mask")
    body.scan_tile = full  # scans are computed where they are read, at this tile (scans.py)
    for level in schedule.levels:
        for red in level:
            if red.kind in SCANS:
                continue
            x = body.value(red.node.args[0], full)
            body.comment_source(red.node)
            var = body.fresh(red.node.name)
            if red.kind in ARG_REDUCTIONS:
                _arg_one_pass(body, red, var, x)
            else:
                body.emit(f"{var} = {_finish(red, _masked(red, x))}")
            body.precomputed[red.node] = var
    store_outputs(body, schedule, names, OutputKind.FULL, full, row_index)


def _arg_one_pass(body: KernelBody, red: Reduction, var: str, x: str) -> None:
    """argmax/argmin of a row in registers: tl.argmax/tl.argmin keep the lowest of equal
    indices, as torch does, but pass over NaN, which torch counts as the best value: a row
    holding one gives its first NaN's index."""
    masked = body.fresh("x_masked")
    body.emit(f"{masked} = {_masked(red, x)}")
    nan = body.fresh("nan")
    body.emit(f"{nan} = ({masked} != {masked}).to(tl.int32)")
    body.emit(
        f"{var} = tl.where(tl.max({nan}, axis=1, keep_dims=True) > 0, "
        f"tl.argmax({nan}, axis=1, keep_dims=True), {_finish(red, masked)})"
    )


def _chunk_loop_header(body: KernelBody) -> None:
    body.emit("for col_start in range(0, n_cols, BLOCK_N):")
    body.indent += 1
    body.emit("cols = col_start + tl.arange(0, BLOCK_N)[None, :]")
    body.emit("col_mask = cols < n_cols")
    body.emit("mask = row_mask & col_mask")


def _chunk_loop_end(body: KernelBody) -> None:
    body.indent -= 1
    body.forget()


def _looped(body: KernelBody, schedule: Schedule, names, full, row_index) -> None:
    online = {pair.max_node: pair for pair in schedule.online}
    fused_sums = {pair.sum_node for pair in schedule.online}
    for level in schedule.levels:
        level = [r for r in level if r.node not in fused_sums]
        if not level:
            continue
        accs = {}
        indices: dict = {}  # argmax/argmin: each lane's index of its running best
        for red in level:
            acc = body.fresh(f"{red.node.name}_acc")
            body.emit(f"{acc} = {_accumulator(red)}")
            accs[red.node] = acc
            if red.kind in ARG_REDUCTIONS:
                indices[red.node] = body.fresh(f"{red.node.name}_at")
                body.emit(
                    f"{indices[red.node]} = tl.zeros([ROWS, BLOCK_N], dtype=tl.int64) "
                    "+ tl.arange(0, BLOCK_N)[None, :]"
                )
            pair = online.get(red.node)
            if pair is not None:
                total = body.fresh(f"{pair.sum_node.name}_acc")
                body.emit(f"{total} = tl.zeros([ROWS, BLOCK_N], dtype=tl.float32)")
                accs[pair.sum_node] = total
        body.eviction = "evict_last"  # the row is read again by the next loop
        _chunk_loop_header(body)
        for red in level:
            x = body.value(red.node.args[0], full)
            body.comment_source(red.node)
            acc = accs[red.node]
            pair = online.get(red.node)
            if red.node in indices:
                _arg_step(body, red, acc, indices[red.node], x)
            elif pair is None:
                body.emit(f"{acc} = {COMBINE[red.kind].format(acc=acc, x=_masked(red, x))}")
            else:
                online_step(body, pair, acc, accs[pair.sum_node], x)
        _chunk_loop_end(body)
        for red in level:
            var = body.fresh(red.node.name)
            if red.node in indices:
                _arg_finish(body, red, var, accs[red.node], indices[red.node])
            else:
                body.emit(f"{var} = {_finish(red, accs[red.node])}")
            body.precomputed[red.node] = var
            pair = online.get(red.node)
            if pair is not None:
                total = body.fresh(pair.sum_node.name)
                body.emit("# Rescale each lane's running sum to the row max; empty lanes add 0.")
                body.emit(
                    f"{total} = tl.sum(tl.where({accs[red.node]} == float('-inf'), 0.0, "
                    f"{accs[pair.sum_node]} * tl.exp({accs[red.node]} - {var})), "
                    "axis=1, keep_dims=True)"
                )
                body.precomputed[pair.sum_node] = total
    if any(kind == OutputKind.FULL for _, kind in schedule.outputs):
        body.eviction = "evict_first"  # the last read of the row
        _chunk_loop_header(body)
        store_outputs(body, schedule, names, OutputKind.FULL, full, row_index)
        _chunk_loop_end(body)
    body.eviction = None


def _arg_step(body: KernelBody, red: Reduction, best: str, at: str, x: str) -> None:
    """One chunk of a looped argmax/argmin: each lane keeps its first best value and where it
    was (a later equal value does not take it, so ties keep the lower index, as in torch); a
    NaN is the best value, as torch.argmax/argmin count it, and the first NaN stays."""
    masked = body.fresh("x_masked")
    body.emit(f"{masked} = {_masked(red, x)}")
    better = ">" if red.kind == "argmax" else "<"
    take = body.fresh("take")
    body.emit(
        f"{take} = ({masked} {better} {best}) | (({masked} != {masked}) & ({best} == {best}))"
    )
    body.emit(f"{at} = tl.where({take}, cols, {at})")
    body.emit(f"{best} = tl.where({take}, {masked}, {best})")


def _arg_finish(body: KernelBody, red: Reduction, var: str, best: str, at: str) -> None:
    """The row's index from the lanes': the lowest index among the lanes holding a NaN if any
    does, else among those holding the best value."""
    nan = body.fresh("nan_lane")
    body.emit(f"{nan} = {best} != {best}")
    top = body.fresh("best")
    finish = "tl.max" if red.kind == "argmax" else "tl.min"
    body.emit(
        f"{top} = {finish}(tl.where({nan}, {NEUTRAL[red.kind]}, {best}), axis=1, keep_dims=True)"
    )
    hit = body.fresh("hit")
    body.emit(
        f"{hit} = tl.where(tl.max({nan}.to(tl.int32), axis=1, keep_dims=True) > 0, "
        f"{nan}, {best} == {top})"
    )
    body.emit(f"{var} = tl.min(tl.where({hit}, {at}, n_cols), axis=1, keep_dims=True)")


def online_step(body: KernelBody, pair: OnlineSoftmax, m_acc: str, s_acc: str, x: str) -> None:
    body.emit("# Online softmax: rescale the running sum when the running max grows.")
    masked = body.fresh("x_masked")
    body.emit(f"{masked} = tl.where(mask, {x}, float('-inf'))")
    m_new = body.fresh("m_new")
    body.emit(f"{m_new} = tl.maximum({m_acc}, {masked})")
    body.emit(
        f"{s_acc} = tl.where({m_new} == float('-inf'), 0.0, "
        f"{s_acc} * tl.exp({m_acc} - {m_new}) + tl.exp({masked} - {m_new}))"
    )
    body.emit(f"{m_acc} = {m_new}")
