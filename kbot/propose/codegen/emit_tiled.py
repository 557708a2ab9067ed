"""Reductions over a dim that is not the last one (MoE top-k combine `[T, topk, H].sum(1)`).

The row schedule (emit_reduction.py) runs a tile's columns along the reduced dim, which here
is strided, and splits every flat row id into (outer, inner) with an int64 division. This
schedule tiles the other way round: a program owns one outer index (program axis 0) and BLOCK
contiguous inner elements (program axis 1), and walks the reduced dim down the tile's rows, so
every load is a coalesced vector of the contiguous inner dim and nothing is divided per element.

- one pass (`BLOCK_RED = next_power_of_2(n_red)` at launch, small reduced extents such as a
  top-k of 8): the whole `[BLOCK_RED, BLOCK]` slab is loaded at once (every load in flight
  together), reduced over axis 0 in registers, and full-shaped outputs are written from it;
- looped (moderate extents): `BLOCK_RED` reduced rows per step accumulate a `[BLOCK_RED, BLOCK]`
  fp32 tile, reduced once after the loop; one loop per reduction level, then one writing
  full-shaped outputs.
"""

from __future__ import annotations

from kbot.propose.codegen.classify import OutputKind, Schedule
from kbot.propose.codegen.emit_reduction import COMBINE, FINISH, NEUTRAL
from kbot.propose.codegen.emitted import Emitted, Tunable
from kbot.propose.codegen.kernel import KernelSource
from kbot.propose.codegen.lowering import Ix, KernelBody
from kbot.propose.codegen.rows import register_outputs, store_outputs
from kbot.propose.codegen.sizes import SizeNames
from kbot.propose.codegen.trace import TracedProblem

INNER_GUARD = "inner_mask"
RED_GUARD = "red_mask"


def emit_tiled_reduction(
    traced: TracedProblem,
    schedule: Schedule,
    sizes: SizeNames,
    op: str,
    *,
    block: int,
    block_red: int | None,
    num_warps: int,
    extern_args: dict[str, str] | None = None,
    gpu_math: bool = False,
) -> Emitted:
    """`block_red=None`: one pass over the whole reduced dim; else loop by block_red rows."""
    body = KernelBody(traced, sizes)
    body.extern_args.update(extern_args or {})
    body.gpu_math = gpu_math
    names = register_outputs(body, schedule)
    per_row = _program_indices(body, schedule)
    red = Ix("red", (RED_GUARD,))
    full = tuple(red if d == schedule.col_dim else per_row[d] for d in range(len(per_row) + 1))
    if block_red is None:
        _one_pass(body, schedule, names, full, per_row)
    else:
        _looped(body, schedule, names, full, per_row)
    store_outputs(body, schedule, names, OutputKind.ROW, full, per_row)
    looped = block_red is not None
    kernel = KernelSource(
        name=f"_{op}_kernel",
        doc=(
            f"{op}: one outer index x BLOCK contiguous inner elements per program, "
            + ("BLOCK_RED reduced rows per loop step." if looped else "the reduced dim at once.")
        ),
        body=body,
        leading=[("n_inner", "n_inner"), ("n_red", "n_red")],
        constexprs=["BLOCK_RED", "BLOCK"],
    )
    launcher = _extent_lines(schedule, sizes)
    if looped:
        block_red_expr = "BLOCK_RED"
    else:
        launcher.append("# The whole reduced dim in one tile: every load in flight at once.")
        launcher.append("block_red = triton.next_power_of_2(n_red)")
        block_red_expr = "block_red"
    launcher.append("grid = (n_outer, triton.cdiv(n_inner, BLOCK_INNER))")
    launcher += kernel.launch(
        "grid", {"BLOCK_RED": block_red_expr, "BLOCK": "BLOCK_INNER"}, "NUM_WARPS"
    )
    tunables = [
        Tunable("BLOCK_INNER", block, "contiguous inner elements per program: one coalesced sweep")
    ]
    if looped:
        tunables.append(Tunable("BLOCK_RED", block_red, "reduced-dim rows per loop step"))
    tunables.append(Tunable("NUM_WARPS", num_warps, "warps per program, scaled with the tile"))
    params = {
        "schedule": schedule.kind.value,
        "loop": "tiled_looped" if looped else "tiled_one_pass",
        "block_inner": block,
        "block_red": block_red if looped else "next_pow2(n_red)",
        "num_warps": num_warps,
    }
    if gpu_math:
        params["gpu_math"] = True
    return Emitted([kernel], launcher, tunables, params)


def _dims(schedule: Schedule) -> tuple[list[int], list[int]]:
    rank = len(schedule.iter_shape)
    return list(range(schedule.col_dim)), list(range(schedule.col_dim + 1, rank))


def _product(sizes: SizeNames, schedule: Schedule, dims: list[int]) -> str:
    terms = [sizes.python(schedule.iter_shape[d]) for d in dims]
    return " * ".join(t if t.isidentifier() or t.isdigit() else f"({t})" for t in terms) or "1"


def _extent_lines(schedule: Schedule, sizes: SizeNames) -> list[str]:
    outer, inner = _dims(schedule)
    return [
        f"n_outer = {_product(sizes, schedule, outer)}",
        f"n_red = {sizes.python(schedule.iter_shape[schedule.col_dim])}",
        f"n_inner = {_product(sizes, schedule, inner)}",
    ]


def _program_indices(body: KernelBody, schedule: Schedule) -> dict[int, Ix]:
    """Each non-reduced dim's index: outer dims are per-program scalars (int64), inner dims
    come from the program's BLOCK inner positions (a `[1, BLOCK]` row of the tile)."""
    body.reserve("outer", "inner", INNER_GUARD, "red", RED_GUARD, "mask", "n_inner", "n_red")
    outer, inner = _dims(schedule)
    index: dict[int, Ix] = {}
    body.emit("# int64 outer index: outer * stride overflows int32 at prefill sizes.")
    body.emit("outer = tl.program_id(0).to(tl.int64)")
    _split(body, schedule, outer, "outer", (), wide=True, into=index)
    body.emit("inner = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)[None, :]")
    body.emit(f"{INNER_GUARD} = inner < n_inner")
    _split(body, schedule, inner, "inner", (INNER_GUARD,), wide=False, into=index)
    return index


def _split(
    body: KernelBody,
    schedule: Schedule,
    dims: list[int],
    flat: str,
    guards: tuple[str, ...],
    *,
    wide: bool,
    into: dict[int, Ix],
) -> None:
    """Per-dim indices of a flat index over `dims` (row-major); one dim needs no arithmetic."""
    for k, dim in enumerate(dims):
        later = [body.size(schedule.iter_shape[d]) for d in dims[k + 1 :]]
        expr = f"{flat} // ({' * '.join(later)})" if later else flat
        if k > 0:
            expr = f"({expr}) % {body.size(schedule.iter_shape[dim])}"
        if expr == flat:
            into[dim] = Ix(flat, guards, wide=wide)
        else:
            name = body.fresh(f"i{dim}")
            body.emit(f"{name} = {expr}")
            into[dim] = Ix(name, guards, wide=wide)


def _finish(kind: str, acc: str) -> str:
    expr = f"{FINISH[kind]}({acc}, axis=0, keep_dims=True)"
    return f"{expr} / n_red" if kind == "mean" else expr


def _red_rows(body: KernelBody, start: str | None) -> None:
    offset = f"{start} + " if start else ""
    body.emit(f"red = {offset}tl.arange(0, BLOCK_RED)[:, None]")
    body.emit(f"{RED_GUARD} = red < n_red")
    body.emit(f"mask = {RED_GUARD} & {INNER_GUARD}")


def _one_pass(body: KernelBody, schedule: Schedule, names, full, per_row) -> None:
    _red_rows(body, None)
    for level in schedule.levels:
        for red in level:
            x = body.value(red.node.args[0], full)
            body.comment_source(red.node)
            var = body.fresh(red.node.name)
            body.emit(f"{var} = {_finish(red.kind, f'tl.where(mask, {x}, {NEUTRAL[red.kind]})')}")
            body.precomputed[red.node] = var
    store_outputs(body, schedule, names, OutputKind.FULL, full, per_row)


def _loop_header(body: KernelBody) -> None:
    body.emit("for red_start in range(0, n_red, BLOCK_RED):")
    body.indent += 1
    _red_rows(body, "red_start")


def _loop_end(body: KernelBody) -> None:
    body.indent -= 1
    body.forget()


def _looped(body: KernelBody, schedule: Schedule, names, full, per_row) -> None:
    # No online-softmax fusion here: a dependent reduction (softmax's sum after its max) gets
    # its own loop, which re-reads a slab that is at most BLOCK_RED x BLOCK per step from L2.
    body.reserve("red_start")
    for level in schedule.levels:
        accs = {}
        for red in level:
            acc = body.fresh(f"{red.node.name}_acc")
            body.emit(f"{acc} = tl.full([BLOCK_RED, BLOCK], {NEUTRAL[red.kind]}, tl.float32)")
            accs[red.node] = acc
        _loop_header(body)
        for red in level:
            x = body.value(red.node.args[0], full)
            body.comment_source(red.node)
            acc = accs[red.node]
            masked = f"tl.where(mask, {x}, {NEUTRAL[red.kind]})"
            body.emit(f"{acc} = {COMBINE[red.kind].format(acc=acc, x=masked)}")
        _loop_end(body)
        for red in level:
            var = body.fresh(red.node.name)
            body.emit(f"{var} = {_finish(red.kind, accs[red.node])}")
            body.precomputed[red.node] = var
    if any(kind == OutputKind.FULL for _, kind in schedule.outputs):
        _loop_header(body)
        store_outputs(body, schedule, names, OutputKind.FULL, full, per_row)
        _loop_end(body)
